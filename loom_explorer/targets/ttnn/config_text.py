"""A ttnn config as a user reads it: the class ``ttnn`` constructs and its arguments, so ``predict`` says
which op and config it costed (``op_name``, ``config_call``, ``config_class``, ``config_fields``).

A program config prints as the constructor call a user would write (``ttnn.CoreCoord`` for the grid), then
the memory placements and compute-config fields it was read with; an op ttnn runs without a program config
(element-wise ops, norms, softmax) prints as the op and the work split its program factory makes. Each
config says its own parts (``config.TtnnConfig``); the helpers below are what the program configs share.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

from loom_explorer.targets.ttnn.config import TtnnConfig
from loom_explorer.targets.ttnn.evaluate import ConfigError
from loom_explorer.targets.ttnn.op import TtnnOp

NOT_ARGUMENTS = frozenset({"program_config", "memory", "compute"})  # a config's fields that are no argument


def op_name(cfg: TtnnConfig, op: TtnnOp) -> str:
    """The ttnn call that runs ``cfg`` given to ``op``: the one the config names, else the op's function."""
    call = cfg.ttnn_call() or op.function
    if call is None:
        raise ConfigError(f"ttnn's {op.name} op names no function for a {type(cfg).__name__}")
    return call


def config_class(cfg: TtnnConfig) -> str | None:
    """E.g. ``ttnn.SDPAProgramConfig``; None for an op that takes no program config."""
    return cfg.ttnn_class()


def config_fields(cfg: TtnnConfig) -> dict[str, object]:
    """The constructor's arguments (or, with no program config, the op's split), in its own names: fields
    left at ttnn's own default (``None``) and the placements/compute blocks are not arguments."""
    return cfg.ttnn_arguments()


def _argument(name: str, value: object) -> str:
    if name == "compute_with_storage_grid_size" and isinstance(value, list):
        return f"{name}=ttnn.CoreCoord({value[0]}, {value[1]})"
    return f"{name}={value!r}"


def config_call(cfg: TtnnConfig) -> list[str]:
    """Lines that say what ttnn runs: the constructor call, then placements and compute fields if any."""
    name = cfg.ttnn_class()
    if name is None:
        return cfg.ttnn_lines()
    args = ", ".join(_argument(k, v) for k, v in cfg.ttnn_arguments().items())
    return [f"{name}({args})", *cfg.ttnn_lines()]


def program_config_arguments(cfg: BaseModel, *skipped: str) -> dict[str, object]:
    """A program config's constructor arguments: its fields but ``NOT_ARGUMENTS``, ``skipped`` and those left
    at ttnn's own default (``None``)."""
    skip = NOT_ARGUMENTS | set(skipped)
    return {k: v for k, v in cfg.model_dump(mode="json").items() if k not in skip and v is not None}


def block_lines(blocks: Mapping[str, Mapping[str, object]]) -> list[str]:
    """``name: key=value, ...`` for each block a config was read with that is not empty (``TtnnConfig.read_with``)."""
    return [f"{name}: " + ", ".join(f"{k}={v}" for k, v in block.items()) for name, block in blocks.items() if block]
