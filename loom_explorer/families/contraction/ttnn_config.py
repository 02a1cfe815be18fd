"""The matmul's TTNN program configs read and costed: ``loom-explorer predict`` of a matmul config, a profiler
capture's matmuls (``ingest``, ``improve``) and ttnn's own pick when a call gives none.

A config (the ttnn constructor's own argument names) maps to one candidate and its parameter values by
the table ``ttnn_mapping.py`` keeps for both directions (the export writes configs with it):

* ``MatmulMultiCoreReuseMultiCastProgramConfig``: ``M@y,N@x|in0=mcast_x,in1=mcast_y`` (``transpose_mcast``
  false) or ``N@y,M@x|in0=mcast_y,in1=mcast_x`` (true); the cores used are ``ceil(Mt/per_core_M)`` rows by
  ``ceil(Nt/per_core_N)`` columns (swapped when transposed), at most the config's grid;
* ``MatmulMultiCoreReuseMultiCast1DProgramConfig``: ``N@xy|in0=mcast_xy,in1=dram`` (``mcast_in0``) or
  ``M@xy|in0=dram,in1=mcast_xy`` (``in0=local`` when in0 is height-sharded in L1); the cores used fill the
  grid's columns row by row;
* blocking as given; ``per_core_K`` all of K; input buffers of 2 blocks (1 with a single K block), as TTNN
  allocates them.

``ttnn_default_config`` reproduces the config ttnn picks for a DRAM-interleaved matmul without one
(reference section 4; its docstring has the rule). What every op's config evaluation shares (``Evaluated``,
``ConfigError``, the referee): ``targets/ttnn/evaluate.py``; the hooks of the family's ``TtnnOp``
(``ttnn.py``) are the functions at the end.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from pydantic import BaseModel, ConfigDict, Field

from loom_explorer.families.contraction.forwarding import FORWARDED
from loom_explorer.families.contraction.program import analyse_contraction
from loom_explorer.families.contraction.ttnn_mapping import (
    CONFIG_CLASSES,
    ONE_D,
    TTNN_BUFFER_BLOCKS,
    TWO_D,
    MatmulArgs,
    MatmulLayout,
    layout_of_config,
    schedule_values,
)
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Comm
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Placement, Problem
from loom_explorer.targets.ttnn.config import TtnnConfig, own
from loom_explorer.targets.ttnn.config_text import block_lines, program_config_arguments
from loom_explorer.targets.ttnn.evaluate import ConfigError, Count, Evaluated, check_grid, evaluate_values, validated
from loom_explorer.targets.ttnn.exporter import compute_config_args
from loom_explorer.targets.ttnn.op import CapturedCall

SUBBLOCK_ORDER = (
    (4, 2),
    (2, 4),
    (8, 1),
    (1, 8),
    (7, 1),
    (1, 7),
    (3, 2),
    (2, 3),
    (6, 1),
    (1, 6),
    (5, 1),
    (1, 5),
    (2, 2),
    (4, 1),
    (1, 4),
    (3, 1),
    (1, 3),
    (2, 1),
    (1, 2),
    (1, 1),
)
MEMORY = {
    "DRAM": Placement.dram,
    "L1_INTERLEAVED": Placement.l1_interleaved,
    "L1_BLOCK_SHARDED": Placement.l1_block,
    "L1_HEIGHT_SHARDED": Placement.l1_height,
    "L1_WIDTH_SHARDED": Placement.l1_width,
}


class TtnnMatmulConfig(BaseModel):
    """A ``ttnn.MatmulMultiCoreReuseMultiCast[1D]ProgramConfig`` in its constructor's argument names."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    program_config: str
    compute_with_storage_grid_size: tuple[Count, Count]  # (columns, rows), each >= 1
    in0_block_w: Count
    per_core_M: Count
    per_core_N: Count
    out_block_h: Count | None = None
    out_block_w: Count | None = None
    out_subblock_h: Count
    out_subblock_w: Count
    transpose_mcast: bool = False
    mcast_in0: bool | None = None
    fuse_batch: bool = True  # a required argument of both constructors; the model folds an in0 batch into M
    # not an argument: the op is ``ttnn.experimental.minimal_matmul``, whose inputs pass core to core along
    # the lines the multicast would reach, its buffers double (``forwarding.py``)
    forwarded: bool = False
    memory: dict[str, str] = Field(default_factory=dict)
    compute: dict[str, object] = Field(default_factory=dict)

    # what the core reads of a config (``targets/ttnn/config.py``)

    def ttnn_call(self) -> str | None:
        return None  # the op's: ttnn.matmul

    def ttnn_class(self) -> str | None:
        return f"ttnn.{self.program_config}"

    def ttnn_arguments(self) -> dict[str, object]:
        """The constructor's arguments: the 1-D config has no ``transpose_mcast``, the 2-D no ``mcast_in0``."""
        return program_config_arguments(
            self, "forwarded", "transpose_mcast" if self.program_config == ONE_D else "mcast_in0"
        )

    def ttnn_lines(self) -> list[str]:
        return block_lines(self.read_with())

    def read_with(self) -> dict[str, Mapping[str, object]]:
        return {"memory": self.memory, "compute": self.compute}

    def placements(self) -> dict[str, Placement]:
        return {t: MEMORY[m] for t, m in self.memory.items() if MEMORY[m] is not Placement.dram}


def parse_config(raw: object, origin: str = "config") -> TtnnMatmulConfig:
    cfg = validated(TtnnMatmulConfig, raw, origin)
    if cfg.program_config not in CONFIG_CLASSES:
        raise ConfigError(
            f"{origin}: program_config {cfg.program_config!r} is not a multicast matmul config "
            "the model maps (2-D or 1-D)"
        )
    bad = {t: m for t, m in cfg.memory.items() if m not in MEMORY}
    if bad:
        raise ConfigError(f"{origin}: memory {bad}: expected one of {', '.join(MEMORY)}")
    return cfg


def placements(cfg: TtnnMatmulConfig) -> dict[str, Placement]:
    """Where ``cfg`` places each operand that is not DRAM-interleaved."""
    return cfg.placements()


def memory_of(problem: Problem) -> dict[str, str]:
    """A matmul config's ``memory`` for ``problem``: where in0, in1 and out are placed (``MEMORY``'s names)."""
    mm = analyse_contraction(problem.program).matmul
    return {t: n for t in (mm.a, mm.b, mm.out) for n, p in MEMORY.items() if p is problem.placement(t)}


def layout(cfg: TtnnMatmulConfig) -> MatmulLayout:
    """The row of ``families/contraction/ttnn_mapping.py``'s table ``cfg`` is."""
    return layout_of_config(cfg.program_config, cfg.transpose_mcast, cfg.mcast_in0)


def candidate_name(cfg: TtnnMatmulConfig) -> str:
    """The GEMM candidate ``cfg`` runs, in0 in DRAM (e.g. ``M@y,N@x|in0=mcast_x,in1=mcast_y``)."""
    return layout(cfg).candidate().name


def matmul_args(cfg: TtnnMatmulConfig) -> MatmulArgs:
    """``cfg``'s arguments; an output block left out is the whole per-core block (TTNN's default)."""
    return MatmulArgs(
        grid=cfg.compute_with_storage_grid_size,
        in0_block_w=cfg.in0_block_w,
        out_subblock_h=cfg.out_subblock_h,
        out_subblock_w=cfg.out_subblock_w,
        out_block_h=cfg.out_block_h or cfg.per_core_M,
        out_block_w=cfg.out_block_w or cfg.per_core_N,
        per_core_M=cfg.per_core_M,
        per_core_N=cfg.per_core_N,
    )


def evaluate_config(hw: HardwareSpec, problem: Problem, cfg: TtnnMatmulConfig) -> Evaluated:
    """The referee's latency of exactly this config (a ``conflict`` result naming the violated
    constraints when the model finds it illegal)."""
    check_grid(hw, cfg.compute_with_storage_grid_size)
    return evaluate_on(config_schedule(hw, problem, cfg), cfg)


def config_schedule(hw: HardwareSpec, problem: Problem, cfg: TtnnMatmulConfig) -> SymbolicSchedule:
    """The symbolic schedule of the candidate ``cfg`` runs.

    The enumerator does not spread a dimension of one tile, so a config whose blocks keep one core busy (a
    1-D config over an M or N of one block) has no spread candidate; ttnn runs it on that one core, its
    sender reading both inputs and multicasting to no other core: the single-core candidate, both inputs
    read by the core (``single_core|in0=dram,in1=dram`` for DRAM operands)."""
    row = layout(cfg)
    candidates = enumerate_candidates(problem)
    candidate = next((c for c in candidates if row.runs(c, "M", "N", "in0", "in1")), None)
    if candidate is None and _one_core(problem, cfg):
        candidate = next(
            (c for c in candidates if not c.axes and all(c.comm(t) in (Comm.dram, Comm.local) for t in ("in0", "in1"))),
            None,
        )
    if candidate is None:
        flag = f"{row.flag}={row.flag_value}"
        raise ConfigError(
            f"what {cfg.program_config} ({flag}) runs is not a candidate of this problem "
            f"(placements {dict(problem.placements) or 'DRAM'})"
        )
    if cfg.forwarded:
        candidate = replace(candidate, tags=(*candidate.tags, FORWARDED))
    return build_schedule(hw, problem, candidate)


def _one_core(problem: Problem, cfg: TtnnMatmulConfig) -> bool:
    """Whether ``cfg``'s blocks keep one core busy on ``problem``."""
    tiles = (problem.tiles("M"), problem.tiles("N"), problem.tiles("K"))
    values = schedule_values(layout(cfg), matmul_args(cfg), tiles)
    return values["grid_x"] * values["grid_y"] == 1


def evaluate_on(schedule: SymbolicSchedule, cfg: TtnnMatmulConfig) -> Evaluated:
    """``cfg``'s parameter values on its candidate's ``schedule``, checked and costed by the referee."""
    problem = schedule.problem
    tiles = (problem.tiles("M"), problem.tiles("N"), problem.tiles("K"))
    values = schedule_values(layout(cfg), matmul_args(cfg), tiles)
    if cfg.forwarded:  # minimal_matmul double-buffers both inputs whatever the number of K blocks
        values |= {"in0_buffer_depth": TTNN_BUFFER_BLOCKS, "in1_buffer_depth": TTNN_BUFFER_BLOCKS}
    check_blocks_fit(cfg, values["grid_x"], values["grid_y"])
    return evaluate_values(schedule, {p: values[p] for p in schedule.param_names if p in values})


def check_blocks_fit(cfg: TtnnMatmulConfig, used_x: int, used_y: int) -> None:
    """The cores ``cfg``'s blocks need (``used_x`` columns by ``used_y`` rows: ``ceil(Nt/per_core_N)`` by
    ``ceil(Mt/per_core_M)`` for the 2-D config, swapped when transposed; the 1-D config's blocks filling
    the grid's columns row by row) must fit its ``compute_with_storage_grid_size``, as ttnn requires
    (ConfigError naming the fields), rather than be costed on cores the config does not give."""
    gx, gy = cfg.compute_with_storage_grid_size
    if used_x > gx or used_y > gy:
        raise ConfigError(
            f"per_core_M={cfg.per_core_M}, per_core_N={cfg.per_core_N} need {used_x}x{used_y} cores "
            f"(columns x rows), more than compute_with_storage_grid_size {[gx, gy]} gives"
        )


NARROW_RATIO = 8  # ttnn's is_narrow_shape: a height/width ratio above this takes a 1-D config
PER_CORE_FACTORS = (16, 8, 4, 2)  # get_per_core_factor's trial sizes, largest first


def ttnn_default_config(hw: HardwareSpec, problem: Problem) -> TtnnMatmulConfig:
    """The config ttnn picks for a DRAM-interleaved matmul called without one (``ttnn_default_evaluated``)."""
    return ttnn_default_evaluated(hw, problem)[0]


def ttnn_default_evaluated(hw: HardwareSpec, problem: Problem) -> tuple[TtnnMatmulConfig, Evaluated]:
    """The config ttnn picks for an interleaved matmul called without a program config or a core grid
    (``create_simple_matmul_program_config`` in ttnn's ``matmul_op.cpp``; reference section 4; since
    ``ttnn/cpp/ttnn/operations/matmul/device/config/matmul_program_config.cpp`` @001cea9a):

    1. a square trial block ``f x f`` per core, ``f`` the first of 16, 8, 4, 2 whose circular buffers fit
       L1 with ``in0_block_w = 2`` (``get_per_core_factor``), gives ``ceil(Mt/f)`` rows by ``ceil(Nt/f)``
       columns of blocks; unless that is one block or does not fit the grid, a single row of blocks takes
       the 1-D config multicasting in0 and a single column the 1-D config multicasting in1
       (``get_core_range``), as does a narrow shape (``M/N`` or ``N/M`` above 8, or, all operands in DRAM,
       M or N within one tile: wide multicasts in0, tall in1);
    2. the 1-D config (``get_mcast_1d_config``): all of M (in0 multicast) or all of N (in1 multicast) per
       core, the other side split over every core of the grid, ``in0_block_w`` 2 (1 when ``Kt`` is odd);
    3. otherwise the 2-D multicast config: all operands in DRAM, ``per_core_M = ceil(Mt/grid_y)``,
       ``per_core_N = ceil(Nt/grid_x)``, ``in0_block_w = Kt/grid_x`` when that divides ``Kt`` (else 1);
       with an operand L1-interleaved (``all_dram_interleaved`` false), the trial block itself:
       ``per_core_M = per_core_N = f``, ``in0_block_w`` 2 (1 when ``Kt`` is odd), the output block the
       whole ``f x f`` and sub-blocks ``4 x 2`` when ``f = 2``, else ``1 x 2``, on the whole grid; when the
       blocks are one or more than the grid has cores ttnn takes ``MatmulMultiCoreProgramConfig``, which the
       model does not map (ConfigError);

    then, for the DRAM 2-D config and the 1-D config, the output block: the per-core block or, when that
    does not fit L1, the largest near-square block of divisors that does (``output_blocks``), and the
    first legal sub-block of ttnn's search order.

    Returned with its evaluation (what ``evaluate_config`` gives for it), on the one schedule built."""
    mt, nt, kt = (problem.tiles(d) for d in ("M", "N", "K"))
    m, n = problem.elements("M"), problem.elements("N")
    gx, gy = hw.grid.columns, hw.grid.rows
    all_dram = all(problem.placement(t) is Placement.dram for t in memory_tensors(problem))
    narrow = max(m, n) // min(m, n) > NARROW_RATIO or (all_dram and min(m, n) <= 32)
    pair_w = 2 if kt % 2 == 0 else 1
    f = _per_core_factor(hw, problem, pair_w)
    rows, cols = math.ceil(mt / f), math.ceil(nt / f)
    spread = (rows, cols) != (1, 1) and rows <= gy and cols <= gx  # get_core_range is not (0, 0)
    if not all_dram and (rows * cols > gx * gy or (rows * cols == 1 and kt % 2)):
        raise ConfigError(
            f"with an L1-interleaved operand, {rows}x{cols} blocks of {f}x{f} tiles (Kt={kt}) make ttnn take "
            "MatmulMultiCoreProgramConfig (no multicast), which the model does not map"
        )
    mcast_in0: bool | None = None
    fixed: tuple[int, int] | None = None  # the L1 2-D config's own output sub-block
    if (spread and rows == 1) or (narrow and n > m):
        mcast_in0, pm, pn, ibw = True, mt, math.ceil(math.ceil(n / (gx * gy)) / 32), pair_w
    elif (spread and cols == 1) or narrow:
        mcast_in0, pm, pn, ibw = False, math.ceil(math.ceil(m / (gx * gy)) / 32), nt, pair_w
    elif all_dram:
        pm, pn = math.ceil(mt / gy), math.ceil(nt / gx)
        ibw = kt // gx if kt % gx == 0 and kt >= gx else 1
    elif spread:
        pm = pn = f
        ibw, fixed = pair_w, ((4, 2) if f == 2 else (1, 2))
    else:
        raise ConfigError(
            f"with an L1-interleaved operand, {rows}x{cols} blocks of {f}x{f} tiles make ttnn take "
            "MatmulMultiCoreProgramConfig (no multicast), which the model does not map"
        )
    dst = hw.compute.dst_tiles_fp32_acc if problem.fp32_acc else hw.compute.dst_tiles

    def config(bh: int, bw: int) -> TtnnMatmulConfig:
        sub = fixed or next(((h, w) for h, w in SUBBLOCK_ORDER if bh % h == 0 and bw % w == 0 and h * w <= dst), (1, 1))
        name = TWO_D if mcast_in0 is None else ONE_D
        return TtnnMatmulConfig(
            program_config=name,
            compute_with_storage_grid_size=(gx, gy),
            in0_block_w=ibw,
            per_core_M=pm,
            per_core_N=pn,
            out_block_h=bh,
            out_block_w=bw,
            out_subblock_h=sub[0],
            out_subblock_w=sub[1],
            mcast_in0=mcast_in0,
        )

    schedule = config_schedule(hw, problem, config(pm, pn))  # every block size runs the same candidate
    if fixed is not None:
        return config(pm, pn), evaluate_on(schedule, config(pm, pn))
    for bh, bw in output_blocks(pm, pn):
        cfg = config(bh, bw)
        evaluated = evaluate_on(schedule, cfg)
        if evaluated.result.solution is not None:
            return cfg, evaluated
    return config(1, 1), evaluate_on(schedule, config(1, 1))


def memory_tensors(problem: Problem) -> tuple[str, ...]:
    """in0, in1 and the output of ``problem``'s matmul (whose memory configs ttnn's pick reads)."""
    mm = analyse_contraction(problem.program).matmul
    return (mm.a, mm.b, mm.out)


def _per_core_factor(hw: HardwareSpec, problem: Problem, in0_block_w: int) -> int:
    """ttnn's ``get_per_core_factor``: the first trial ``f`` whose circular buffers (in0 and in1 double
    buffered, ``2*f*in0_block_w`` tiles each, and the ``f x f`` output) fit the usable L1; 1 if none does."""
    tile = {t: hw.tile_bytes[problem.data_format(t)] for t in ("in0", "in1", "out")}
    for f in PER_CORE_FACTORS:
        if 2 * f * in0_block_w * (tile["in0"] + tile["in1"]) + f * f * tile["out"] < hw.l1.usable_bytes:
            return f
    return 1


def output_blocks(per_core_m: int, per_core_n: int) -> list[tuple[int, int]]:
    """The output blocks ttnn tries, in order, until one fits L1 (``get_multi_dim_per_core_factor`` in
    ttnn's ``matmul_program_config.cpp``, with ``in0_block_w`` kept): the whole per-core block first, then
    for each product of a divisor of ``per_core_M`` and one of ``per_core_N`` the pair closest to square
    (the later pair on a tie), largest product first."""

    def divisors(n: int) -> list[int]:
        return [n, 1, *(d for d in range(n // 2, 1, -1) if n % d == 0)]

    best: dict[int, tuple[int, int]] = {}
    for m in divisors(per_core_m):
        for n in divisors(per_core_n):
            ratio = max(m, n) / min(m, n)
            kept = best.get(m * n)
            if kept is None or max(kept) / min(kept) >= ratio:
                best[m * n] = (m, n)
    return [best[p] for p in sorted(best, reverse=True)]  # the largest is the whole block


# ---- the hooks of the family's TtnnOp (``ttnn.py``) --------------------------------------------------------


def evaluate_matmul_config(hw: HardwareSpec, problem: Problem, cfg: TtnnConfig) -> Evaluated:
    """``ProgramConfigs.evaluate``: ``evaluate_config`` of a matmul config."""
    return evaluate_config(hw, problem, own(cfg, TtnnMatmulConfig))


def exported_matmul_config(problem: Problem, name: str, args: dict[str, object]) -> TtnnConfig:
    """``ProgramConfigs.exported``: the config the export writes (``name``, ``args``) with the problem's
    placements and compute kernel config, as ``predict --ttnn-config`` reads it."""
    return parse_config(
        {"program_config": name, **args, "memory": memory_of(problem), "compute": compute_config_args(problem)}
    )


def captured_matmul(hw: HardwareSpec, problem: Problem, call: CapturedCall) -> tuple[TtnnConfig | None, Evaluated]:
    """``TtnnOp.captured``: the config the call ran, or the one ttnn picks when it gave none, evaluated."""
    if call.config is None:
        return ttnn_default_evaluated(hw, problem)
    return call.config, evaluate_config(hw, problem, own(call.config, TtnnMatmulConfig))


def unpredicted_matmul(call: CapturedCall) -> str:
    """``TtnnOp.unpredicted_candidate``: the candidate the call's config runs, or ttnn's own pick."""
    if call.config is None:
        return "matmul (ttnn default config)"
    return candidate_name(own(call.config, TtnnMatmulConfig))


def logical_matmul(shape: Mapping[str, int], batch_repeats: int) -> dict[str, int] | None:
    """``TtnnOp.logical_shape``: the matmul ``ttnn.matmul`` would run for a captured one of ``shape``: its
    stated M, K, N, a batch folded into M as ingest folds it (``batch_repeats`` 1), not padded to a minimal
    matmul's blocks."""
    fold = shape.get("batch", 1) if batch_repeats == 1 else 1
    return {"M": shape["M"] * fold, "K": shape["K"], "N": shape["N"]}
