"""A ttnn config as a user reads it: the class ``ttnn`` constructs and its arguments, so ``predict`` says
which op and config it costed (``op_name``, ``config_call``, ``config_class``, ``config_fields``).

A program config prints as the constructor call a user would write (``ttnn.CoreCoord`` for the grid), then
the memory placements and compute-config fields it was read with; an op ttnn runs without a program config
(element-wise ops, norms, softmax) prints as the op and the work split its program factory makes.
"""

from __future__ import annotations

from loom_explorer.accuracy.sdpa_configs import TtnnConfig, TtnnSdpaConfig
from loom_explorer.accuracy.ttnn_configs import TtnnMatmulConfig
from loom_explorer.accuracy.ttnn_defaults import TtnnDefaultOp

MATMUL_1D = "MatmulMultiCoreReuseMultiCast1DProgramConfig"


def op_name(cfg: TtnnConfig, decode: bool = False) -> str:
    """The ttnn call that runs ``cfg``: ``decode`` for an SDPA config of a flash-decoding schedule."""
    if isinstance(cfg, TtnnDefaultOp):
        return cfg.op
    if isinstance(cfg, TtnnSdpaConfig):
        return "ttnn.transformer.scaled_dot_product_attention" + ("_decode" if decode else "")
    return "ttnn.matmul"


def config_class(cfg: TtnnConfig) -> str | None:
    """E.g. ``ttnn.SDPAProgramConfig``; None for an op that takes no program config."""
    if isinstance(cfg, TtnnDefaultOp):
        return None
    return f"ttnn.{cfg.program_config}"


def config_fields(cfg: TtnnConfig) -> dict[str, object]:
    """The constructor's arguments (or, with no program config, the op's split), in its own names: fields
    left at ttnn's own default (``None``) and the placements/compute blocks are not arguments."""
    if isinstance(cfg, TtnnDefaultOp):
        return cfg.model_dump(mode="json")
    skip = {"program_config", "memory", "compute"}
    if isinstance(cfg, TtnnMatmulConfig):
        skip.add("transpose_mcast" if cfg.program_config == MATMUL_1D else "mcast_in0")
    return {k: v for k, v in cfg.model_dump(mode="json").items() if k not in skip and v is not None}


def _argument(name: str, value: object) -> str:
    if name == "compute_with_storage_grid_size" and isinstance(value, list):
        return f"{name}=ttnn.CoreCoord({value[0]}, {value[1]})"
    return f"{name}={value!r}"


def config_call(cfg: TtnnConfig) -> list[str]:
    """Lines that say what ttnn runs: the constructor call, then placements and compute fields if any."""
    if isinstance(cfg, TtnnDefaultOp):
        return [f"no program config {cfg.describe().removeprefix(f'{cfg.op} ')}"]
    args = ", ".join(_argument(k, v) for k, v in config_fields(cfg).items())
    lines = [f"{config_class(cfg)}({args})"]
    if isinstance(cfg, TtnnMatmulConfig):
        if cfg.memory:
            lines.append("memory: " + ", ".join(f"{t}={p}" for t, p in cfg.memory.items()))
        if cfg.compute:
            lines.append("compute: " + ", ".join(f"{k}={v}" for k, v in cfg.compute.items()))
    return lines
