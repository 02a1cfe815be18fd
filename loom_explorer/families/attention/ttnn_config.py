"""Evaluate an existing TTNN ``SDPAProgramConfig`` with the model: ``loom-explorer predict flash_attention``,
a profiler capture's SDPA ops (``ingest``, ``improve``) and ttnn's default when a call gives none.

A config (the constructor's own argument names: ``{"program_config": "SDPAProgramConfig",
"compute_with_storage_grid_size": [x, y], "q_chunk_size": .., "k_chunk_size": .., "exp_approx_mode": ..}``)
maps to the flattened candidate, which is TTNN's SDPA work split (reference section 5): batch x heads x
query chunks dealt out over the grid's cores in contiguous ranges, q, k and v read from DRAM by every core,
and under the causal mask balanced pairs of query chunks. Its parameter values:

* ``grid_x x grid_y``: the config's grid, shrunk to the rows (and, on one row, the columns) the tasks fill;
* ``per_core_<B*H*Sq>``: the tasks of the busiest core (``sdpa_split``);
* the chunk sizes as given (TTNN pads the sequences to whole chunks, as the model does);
* the Dst sub-blocks TTNN's ``determine_largest_subblock_size`` picks (``largest_subblock``);
* buffers as TTNN allocates them: the streaming kernel double-buffers q when a core has more than one
  query chunk, and k and v; the ACCURATE recipe (an fp32-Dst call on Blackhole, ``families/attention/quantities.py``)
  always double-buffers q and gives k and v one chunk slot each.

The split follows ttnn 0.81.1, whose SDPA kernels (``reader_interleaved.cpp``, ``writer_interleaved.cpp``,
``sdpa.cpp`` as the wheel ships them) take one contiguous range ``[global_q_start, global_q_start +
global_q_count)`` of the flat ``B*H*n_q`` query-chunk space per core and, under the causal mask, remap it
zigzag (``q_chunk_remapping.hpp``: flat position ``2j`` -> chunk ``j``, ``2j+1`` -> chunk ``n_q-1-j``, per
head). The program factory deals that space out in pairs when the mask is causal and ``n_q`` is even (a
pair is one light and one heavy chunk: the model's balanced task), chunk by chunk otherwise. So:

* not causal: ``per_core = ceil(B*H*n_q / cores)`` chunks;
* causal, ``n_q`` even: ``per_core = ceil(B*H*n_q/2 / cores)`` pairs;
* causal, ``n_q`` odd: a core gets ``c = ceil(B*H*n_q / cores)`` consecutive zigzag positions, alternately
  light and heavy: the model costs it as ``ceil(c/2)`` balanced pairs (the flattened causal candidate is
  always balanced), which counts one extra chunk when ``c`` is odd.

The older per-head split (``batch x heads x q_parallel`` factors with a ``BALANCED_Q_PARALLEL`` define
when ``q_per_core * q_parallel == n_q`` and ``q_per_core`` is even) is gone from 0.81.1's kernels.

``exp_approx_mode`` left out (``None``) means the approximate exponential: the factory's
``get_exp_approx_mode`` defaults to true (``TtnnSdpaConfig.exp_approx``).

``ttnn_default_sdpa_config`` is what ``ttnn.transformer.scaled_dot_product_attention`` runs without a
program config: 32-element chunks on the whole grid.

Decode (one query token) runs ``sdpa_decode``, flash-decoding's op: ``families/flash_decoding/ttnn_config.py``
(``evaluate_sdpa_config`` hands a problem it takes over to it). The hooks of the family's ``TtnnOp`` (``ttnn.py``)
are the functions at the end; what every op's config evaluation shares: ``targets/ttnn/evaluate.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.families.attention.quantities import ACCURATE, ttnn_sdpa_kernel
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Comm
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Placement, Problem
from loom_explorer.targets.ttnn.config import TtnnConfig, own
from loom_explorer.targets.ttnn.config_text import program_config_arguments
from loom_explorer.targets.ttnn.evaluate import ConfigError, Count, Evaluated, check_grid, evaluate_values, validated
from loom_explorer.targets.ttnn.op import CapturedCall, problem_ttnn_op

DEFAULT_CHUNK = 32
# the order TTNN's SDPA program factory tries sub-blocks in (sdpa_program_factory.cpp)
SDPA_SUBBLOCK_ORDER = (
    (2, 4),
    (4, 2),
    (1, 8),
    (8, 1),
    (1, 7),
    (7, 1),
    (2, 3),
    (3, 2),
    (1, 6),
    (6, 1),
    (1, 5),
    (5, 1),
    (2, 2),
    (1, 4),
    (4, 1),
    (1, 3),
    (3, 1),
    (1, 2),
    (2, 1),
    (1, 1),
)


class TtnnSdpaConfig(BaseModel):
    """A ``ttnn.SDPAProgramConfig`` in its constructor's argument names."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    program_config: str = "SDPAProgramConfig"
    compute_with_storage_grid_size: tuple[Count, Count]  # (columns, rows), each >= 1
    q_chunk_size: StrictInt = Field(ge=32, multiple_of=32)
    k_chunk_size: StrictInt = Field(ge=32, multiple_of=32)
    exp_approx_mode: bool | None = None
    max_cores_per_head_batch: Count | None = None  # decode only; None: ttnn's 16

    @property
    def exp_approx(self) -> bool:
        """What the kernel runs: ``None`` is the approximate exponential (ttnn's default)."""
        return True if self.exp_approx_mode is None else self.exp_approx_mode

    # what the core reads of a config (``targets/ttnn/config.py``)

    def ttnn_call(self) -> str | None:
        return None  # the op's: SDPA, or SDPA decode for a flash-decoding schedule

    def ttnn_class(self) -> str | None:
        return f"ttnn.{self.program_config}"

    def ttnn_arguments(self) -> dict[str, object]:
        return program_config_arguments(self)

    def ttnn_lines(self) -> list[str]:
        return []

    def read_with(self) -> dict[str, Mapping[str, object]]:
        return {}

    def placements(self) -> dict[str, Placement]:
        return {}


def parse_sdpa_config(raw: object, origin: str = "config") -> TtnnSdpaConfig:
    if isinstance(raw, dict) and raw.get("program_config", "SDPAProgramConfig") != "SDPAProgramConfig":
        raise ConfigError(f"{origin}: program_config {raw['program_config']!r}: attention takes an SDPAProgramConfig")
    return validated(TtnnSdpaConfig, raw, origin)


def ttnn_default_sdpa_config(hw: HardwareSpec) -> TtnnSdpaConfig:
    return TtnnSdpaConfig(
        compute_with_storage_grid_size=(hw.grid.columns, hw.grid.rows),
        q_chunk_size=DEFAULT_CHUNK,
        k_chunk_size=DEFAULT_CHUNK,
    )


def largest_subblock(rows: int, cols: int, dst_tiles: int) -> tuple[int, int]:
    """TTNN's ``determine_largest_subblock_size``: the first ``h x w`` of ``SDPA_SUBBLOCK_ORDER`` with
    ``h*w <= dst_tiles`` that divides ``rows x cols`` and is either one row high or the whole width."""
    return next(
        (h, w)
        for h, w in SDPA_SUBBLOCK_ORDER
        if h * w <= dst_tiles and rows % h == 0 and cols % w == 0 and (w == cols or h == 1)
    )


def sdpa_schedule(hw: HardwareSpec, problem: Problem) -> SymbolicSchedule:
    """TTNN's SDPA split: every (batch, head, query chunk) task dealt over all cores, q, k and v read from
    DRAM, balanced under the causal mask. That is the flattened candidate, or, when only one of those
    dims has more than one task (e.g. one query chunk per head), the 1-D layout of that dim."""
    causal, q_dim = problem.has_option("causal"), analyse_attention(problem.program).q_dim
    splits = [
        c
        for c in enumerate_candidates(problem)
        if len(c.axes) == 1
        and c.axes[0][0] == "xy"
        and not c.has_tag("kv_split")
        and all(comm is Comm.dram for _, comm in c.comms)
        and c.has_tag("balanced") == (causal and q_dim in c.axes[0][1].split("*"))
    ]  # balanced where chunks pair
    if splits:  # the one that deals the most dims over the cores
        return build_schedule(hw, problem, max(splits, key=lambda c: len(c.axes[0][1].split("*"))))
    raise ConfigError(
        f"{problem.program.name} {problem.shape_text}: no candidate deals all tasks over the cores (TTNN's SDPA split)"
    )


def sdpa_split(problem: Problem, q_chunk_size: int, cores: int) -> tuple[int, int, int]:
    """(tasks of the busiest core, query chunks of the busiest core, cores used) of ttnn 0.81.1's SDPA work
    split of ``problem`` over ``cores`` (module docstring): a task is one query chunk, or under the causal
    mask one balanced pair. ttnn gives every core the base share and the first ones one task more; the
    model's layout packs the same busiest-core count onto ``ceil(tasks / per_core)`` cores (the latency is
    the busiest core's either way)."""
    st = analyse_attention(problem.program)
    n_q = math.ceil(problem.tiles(st.q_dim) / (q_chunk_size // 32))
    heads = math.prod(problem.elements(d) for d in st.batch_dims if problem.program.dim(d).group_of is None)
    chunks = heads * n_q
    if problem.has_option("causal") and n_q % 2 == 0:
        pairs = math.ceil(chunks // 2 / cores)
        return pairs, 2 * pairs, math.ceil(chunks // 2 / pairs)
    per_core_chunks = math.ceil(chunks / cores)
    used = math.ceil(chunks / per_core_chunks)
    if problem.has_option("causal"):
        return math.ceil(per_core_chunks / 2), per_core_chunks, used
    return per_core_chunks, per_core_chunks, used


def sdpa_values(schedule: SymbolicSchedule, cfg: TtnnSdpaConfig) -> dict[str, int]:
    """The candidate's parameter values for ``cfg`` (module docstring)."""
    problem, hw = schedule.problem, schedule.hardware
    st = analyse_attention(problem.program)
    qc, kc = cfg.q_chunk_size // 32, cfg.k_chunk_size // 32
    gx, gy = cfg.compute_with_storage_grid_size
    per_core, q_chunks, used = sdpa_split(problem, cfg.q_chunk_size, gx * gy)
    grid = (gx, math.ceil(used / gx)) if used > gx else (used, 1)
    dst = hw.compute.dst_tiles_fp32_acc if problem.fp32_acc else hw.compute.dst_tiles
    qk = largest_subblock(qc, kc, dst)
    out = largest_subblock(qc, problem.tiles(st.head_dim), dst)
    q_in, k_in, v_in = st.streamed
    group = "*".join(d for _, d in schedule.candidate.axes)
    accurate = ttnn_sdpa_kernel(hw, problem) == ACCURATE  # the recipe: q in two slots, k and v in one
    return {
        "grid_x": grid[0],
        "grid_y": grid[1],
        f"per_core_{group}": per_core,
        "q_chunk_size": cfg.q_chunk_size,
        "k_chunk_size": cfg.k_chunk_size,
        "qk_subblock_h": qk[0],
        "qk_subblock_w": qk[1],
        "out_subblock_h": out[0],
        "out_subblock_w": out[1],
        f"{q_in}_buffer_depth": 2 if q_chunks > 1 or accurate else 1,
        f"{k_in}_buffer_depth": 1 if accurate else 2,
        f"{v_in}_buffer_depth": 1 if accurate else 2,
    }


def evaluate_sdpa_config(hw: HardwareSpec, problem: Problem, cfg: TtnnSdpaConfig) -> Evaluated:
    """The referee's latency of exactly this SDPA config (a ``conflict`` naming the violated constraints
    when the model finds it illegal): ``sdpa_decode``'s for a decode problem (the op of a variant family that
    takes the problem over, ``targets/ttnn/op.py::problem_ttnn_op``)."""
    op = problem_ttnn_op(problem)
    if op.takes_over is not None and op.configs is not None:
        return op.configs.evaluate(hw, problem, cfg)
    check_grid(hw, cfg.compute_with_storage_grid_size)
    schedule = sdpa_schedule(hw, problem)
    return evaluate_values(schedule, sdpa_values(schedule, cfg))


# ---- the hooks of the family's TtnnOp (``ttnn.py``; flash-decoding's reuses them) ---------------------------


def evaluate_sdpa(hw: HardwareSpec, problem: Problem, cfg: TtnnConfig) -> Evaluated:
    """``ProgramConfigs.evaluate``: ``evaluate_sdpa_config`` of an SDPA config."""
    return evaluate_sdpa_config(hw, problem, own(cfg, TtnnSdpaConfig))


def exported_sdpa_config(problem: Problem, name: str, args: dict[str, object]) -> TtnnConfig:
    """``ProgramConfigs.exported``: the ``SDPAProgramConfig`` the export writes, as ``predict`` reads it."""
    return parse_sdpa_config({"program_config": name, **args})


def sdpa_default(hw: HardwareSpec, problem: Problem) -> tuple[TtnnConfig, Evaluated]:
    """``TtnnOp.default``: ``ttnn_default_sdpa_config``, evaluated."""
    sdpa = ttnn_default_sdpa_config(hw)
    return sdpa, evaluate_sdpa_config(hw, problem, sdpa)


def captured_sdpa_config(hw: HardwareSpec, call: CapturedCall) -> TtnnSdpaConfig:
    """The ``SDPAProgramConfig`` a captured call ran: its chunk sizes on the whole grid (a k chunk left out is
    the q chunk), or ttnn's default when it named none."""
    if call.q_chunk_size:
        return TtnnSdpaConfig(
            compute_with_storage_grid_size=(hw.grid.columns, hw.grid.rows),
            q_chunk_size=call.q_chunk_size,
            k_chunk_size=call.k_chunk_size or call.q_chunk_size,
        )
    return ttnn_default_sdpa_config(hw)


def captured_sdpa(hw: HardwareSpec, problem: Problem, call: CapturedCall) -> tuple[TtnnConfig | None, Evaluated]:
    """``TtnnOp.captured``: ``captured_sdpa_config``, evaluated."""
    sdpa = captured_sdpa_config(hw, call)
    return sdpa, evaluate_sdpa_config(hw, problem, sdpa)


def unpredicted_sdpa(call: CapturedCall) -> str:
    """``TtnnOp.unpredicted_candidate``: the config the call named, or ttnn's default."""
    return "SDPAProgramConfig" if call.q_chunk_size else "SDPA (ttnn default config)"
