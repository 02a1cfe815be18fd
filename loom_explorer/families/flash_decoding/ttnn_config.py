"""Evaluate an existing TTNN ``SDPAProgramConfig`` with the model for a decode problem: what
``loom-explorer predict flash_attention`` costs when ttnn runs ``sdpa_decode`` (the config itself is
attention's, ``families/attention/ttnn_config.py``).

Decode (one query token, not causal: the problems with a flash-decoding candidate for ttnn,
``families/flash_decoding/quantities.py``)
runs ``ttnn.transformer.scaled_dot_product_attention_decode`` (sdpa_decode_program_factory.cpp @91b3892f
L185-199, the same formulas in ttnn 0.81.1's; ``avail = gx*gy``, ``M = max_cores_per_head_batch``, 16 in a
config and every core without one, ``NKV`` key/value heads):

    per_batch = min(avail, M * B * NKV) // B,   kv_cores = max(1, per_batch // NKV),
    per_core_<groups> = max(1, ceil(NKV / per_batch))

(``avail >= B`` or ttnn refuses), with cores past the ``n_k`` key chunks idle (``kv_cores = min(., n_k)``);
the grid shrinks to the rows those cores fill. Without a config the key chunk is the largest power-of-two
divisor of the cache length, at most 512 (``sdpa_decode.cpp`` ``get_chunk_size``); a config's must be a
power of two dividing it. Sub-blocks and buffers are ttnn's (fixed by the model for the ttnn target).

The family's ``TtnnOp`` (``ttnn.py``) takes a problem over from attention's op when it has a flash-decoding
candidate for ttnn (``decode_takes_over``); its hooks are the functions at the end.
"""

from __future__ import annotations

import math

from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.families.attention.ttnn_config import DEFAULT_CHUNK, TtnnSdpaConfig, captured_sdpa_config
from loom_explorer.families.flash_decoding.quantities import ttnn_decode_work
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import KernelTarget, Problem, ProblemError
from loom_explorer.targets.ttnn.config import TtnnConfig, own
from loom_explorer.targets.ttnn.evaluate import ConfigError, Evaluated, check_grid, evaluate_values
from loom_explorer.targets.ttnn.op import CapturedCall

DECODE_MAX_CORES_PER_HEAD = 16  # SDPAProgramConfig.max_cores_per_head_batch's default (ttnn 0.81.1)
DECODE_MAX_DEFAULT_CHUNK = 512


def decode_schedule(hw: HardwareSpec, problem: Problem) -> SymbolicSchedule | None:
    """The flash-decoding schedule ttnn's ``sdpa_decode`` runs for ``problem``; None when it is no decode."""
    split = [c for c in enumerate_candidates(problem) if c.has_tag("kv_split")]
    return build_schedule(hw, problem, split[0]) if split and problem.target is KernelTarget.ttnn else None


def decode_split(problem: Problem, cfg: TtnnSdpaConfig) -> tuple[int, int]:
    """(kv_cores, groups per core) of ttnn's decode work split for ``cfg`` (module docstring)."""
    gx, gy = cfg.compute_with_storage_grid_size
    try:
        return ttnn_decode_work(
            problem, gx * gy, cfg.max_cores_per_head_batch or DECODE_MAX_CORES_PER_HEAD, cfg.k_chunk_size
        )
    except ProblemError as exc:
        raise ConfigError(str(exc)) from exc


def decode_values(schedule: SymbolicSchedule, cfg: TtnnSdpaConfig) -> dict[str, int]:
    """The flash-decoding candidate's parameter values for ``cfg`` (module docstring)."""
    problem, hw = schedule.problem, schedule.hardware
    st = analyse_attention(problem.program)
    kc = cfg.k_chunk_size
    s, g = decode_split(problem, cfg)
    groups = math.prod(problem.elements(d) for d in st.kv_groups)
    used = math.ceil(groups / g) * s
    gx = cfg.compute_with_storage_grid_size[0]
    grid = (gx, math.ceil(used / gx)) if used > gx else (used, 1)
    dst = hw.compute.dst_tiles_fp32_acc if problem.fp32_acc else hw.compute.dst_tiles
    group = schedule.candidate.dim_on("xy")
    q_in, k_in, v_in = st.streamed
    return {
        "grid_x": grid[0],
        "grid_y": grid[1],
        f"per_core_{group}": g,
        "kv_cores": s,
        "q_chunk_size": next(p.var.values.min for p in schedule.params if p.var.name == "q_chunk_size"),
        "k_chunk_size": kc,
        "qk_subblock_h": 1,
        "qk_subblock_w": min(kc // 32, dst),
        "out_subblock_h": 1,
        "out_subblock_w": min(problem.tiles(st.head_dim), dst),
        f"{q_in}_buffer_depth": 1,
        f"{k_in}_buffer_depth": 2,
        f"{v_in}_buffer_depth": 2,
    }


def ttnn_default_decode_config(hw: HardwareSpec, problem: Problem) -> TtnnSdpaConfig:
    """What ``scaled_dot_product_attention_decode`` runs without a program config (module docstring)."""
    st = analyse_attention(problem.program)
    skv = problem.elements(st.kv_dim)
    chunk = min(skv & -skv, DECODE_MAX_DEFAULT_CHUNK)  # the largest power-of-two divisor, at most 512
    if chunk % 32:
        raise ConfigError(
            f"ttnn's sdpa_decode default k chunk for {st.kv_dim} = {skv} is {chunk}, not a multiple "
            "of 32: ttnn refuses it"
        )
    return TtnnSdpaConfig(
        compute_with_storage_grid_size=(hw.grid.columns, hw.grid.rows),
        q_chunk_size=DEFAULT_CHUNK,
        k_chunk_size=chunk,
        max_cores_per_head_batch=hw.grid.columns * hw.grid.rows,
    )


def evaluate_decode_config(hw: HardwareSpec, problem: Problem, cfg: TtnnSdpaConfig) -> Evaluated:
    """The referee's latency of exactly this SDPA config run by ``sdpa_decode`` (a ``conflict`` naming the
    violated constraints when the model finds it illegal); ConfigError for a problem that is no decode."""
    check_grid(hw, cfg.compute_with_storage_grid_size)
    decode = decode_schedule(hw, problem)
    if decode is None:
        raise ConfigError(f"{problem.program.name} {problem.shape_text} is no decode ttnn's sdpa_decode runs")
    return evaluate_values(decode, decode_values(decode, cfg))


# ---- the hooks of the family's TtnnOp (``ttnn.py``) --------------------------------------------------------


def decode_takes_over(problem: Problem) -> bool:
    """``TtnnOp.takes_over``: ttnn runs ``sdpa_decode`` for an attention problem with a flash-decoding
    candidate for ttnn (``decode_schedule``)."""
    return problem.target is KernelTarget.ttnn and any(c.has_tag("kv_split") for c in enumerate_candidates(problem))


def evaluate_decode(hw: HardwareSpec, problem: Problem, cfg: TtnnConfig) -> Evaluated:
    """``ProgramConfigs.evaluate``: ``evaluate_decode_config`` of an SDPA config."""
    return evaluate_decode_config(hw, problem, own(cfg, TtnnSdpaConfig))


def decode_default(hw: HardwareSpec, problem: Problem) -> tuple[TtnnConfig, Evaluated]:
    """``TtnnOp.default``: ``ttnn_default_decode_config``, evaluated."""
    sdpa = ttnn_default_decode_config(hw, problem)
    return sdpa, evaluate_decode_config(hw, problem, sdpa)


def captured_decode(hw: HardwareSpec, problem: Problem, call: CapturedCall) -> tuple[TtnnConfig | None, Evaluated]:
    """``TtnnOp.captured``: the ``SDPAProgramConfig`` the call ran, evaluated: the whole config when the row was
    read as one (``accuracy.py``), else attention's reading of its chunk sizes."""
    sdpa = call.config if isinstance(call.config, TtnnSdpaConfig) else captured_sdpa_config(hw, call)
    return sdpa, evaluate_decode_config(hw, problem, sdpa)
