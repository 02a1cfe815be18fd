"""ttnn's default for the element-wise and row-reduction families, costed by the model: what ``ttnn.add`` /
``ttnn.multiply`` (``binary_ng``), the unary ops, ``ttnn.softmax``, ``ttnn.rms_norm`` and ``ttnn.layer_norm``
run on DRAM-interleaved tensors called without a program config (``predict --ttnn-default``, the sweeps).

Both families split their work with tt-metal's ``split_work_to_cores(grid, units, row_wise=true)`` over the
whole compute grid (``compute_with_storage_grid_size``: ``gx x gy`` cores): every core gets the base share
and the first ``units mod cores`` one unit more, so the busiest core has

    per_core = ceil(units / (gx*gy))

units. The model packs that busiest-core count onto ``used = ceil(units / per_core)`` cores, numbered row by
row over ``gx`` columns, and the grid shrinks to the rows they fill: ``gx x ceil(used/gx)`` (``used x 1`` on
one row); the latency is the busiest core's either way (as ``families/attention/ttnn_config.py`` does for SDPA).

Element-wise (``ttnn/cpp/ttnn/operations/eltwise/unary/device/unary_program_factory.cpp`` @019b681e with
``kernels/compute/eltwise_sfpu.cpp`` @0364ed2a; ``eltwise/binary_ng/device/binary_ng_program_factory.cpp``
@00635679):

* a unit is one output tile; the tiles are dealt out row-major in contiguous ranges: the flattened candidate
  ``H*W@xy`` with every input read from DRAM by the core that needs it (``...=dram`` for all);
* ``block = 1``: "we produce 1 output tile per read-compute-write cycle" (``num_tiles_per_cycle = 1``; the
  unary compute streams one tile at a time);
* every input's circular buffer holds 2 tiles (binary_ng c_0 = c_1 = 2, unary c_0 = 2): ``<input>_buffer_depth
  = 2`` for every input that streams.

Row reduction (``ttnn/cpp/ttnn/operations/normalization/layernorm/device/layernorm_op_multi_core.cpp``
@015365c6, ``LayerNormDefaultProgramConfig`` on an interleaved input; ``softmax/device/
softmax_program_factory_attention_optimized.cpp`` @003544fc, ``SoftmaxDefaultProgramConfig``):

* a unit is one tile row (32 rows by all ``Wt`` tiles): the rows over a 1-D layout, ``H@xy``, each core keeping
  whole rows (no gather), every input read from DRAM;
* ``block_h = 1``: a core works one tile row at a time;
* x's circular buffer is the whole row (c_0 = ``Wt`` tiles): one block, ``x_buffer_depth = 1``, and likewise
  every other input read per block; ``gamma``/``beta`` are read once and held (c_5/c_6 = ``Wt``), as the model
  holds a row vector;
* a row too wide for L1 makes TTNN take its large-tensor path (x re-read from DRAM 2-3 times through buffers
  of 56-112 tiles), which the model does not express: the evaluation is then the referee's conflict naming
  the L1 overflow (``evaluate_values``), and a sweep records that there is no ttnn default.

The enumerator does not spread a dimension of one tile; ttnn still deals its one unit to one core, so the
candidate is built here directly (``H*W@xy`` of a one-tile-high tensor is its columns dealt out; ``H@xy`` of
one tile row is that row on one core). Each family gives its split (``interleaved_default`` of its ``TtnnOp``,
``op.py``, in ``families/<family>/ttnn.py``), which names the ttnn op from the program's ops (e.g.
``ttnn.rms_norm`` for one mean reduction followed by ``rsqrt``), for what ``predict`` prints; the schedule
depends only on the family.

``evaluate_ttnn_default`` is what ttnn runs for any problem when the call gives no program config: the
``default`` of the op ttnn calls for it (``op.problem_ttnn_op``): this interleaved default, the matmul's
auto-config or SDPA's default config.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate, Comm
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import Problem
from loom_explorer.program.structure import program_family
from loom_explorer.targets.ttnn.config import NoProgramConfig, TtnnConfig
from loom_explorer.targets.ttnn.evaluate import ConfigError, Evaluated, evaluate_values
from loom_explorer.targets.ttnn.op import CapturedCall, TtnnOp, problem_ttnn_op, ttnn_ops


class TtnnDefaultOp(NoProgramConfig):
    """What ttnn runs for an element-wise or row-reduction op called without a program config: the op, its
    program factory's split (module docstring) and the model's packing of it."""

    op: str  # e.g. "ttnn.rms_norm"
    program: str  # e.g. "interleaved, LayerNormDefaultProgramConfig"
    compute_with_storage_grid_size: tuple[int, int]  # the grid split_work_to_cores deals over
    unit: Literal["tile", "tile row"]
    units: int = Field(ge=1)
    per_core: int = Field(ge=1)  # units of the busiest core: ceil(units / cores of the grid)
    cores: int = Field(ge=1)  # cores with work in the model's packing: ceil(units / per_core)

    def describe(self) -> str:
        gx, gy = self.compute_with_storage_grid_size
        plural = "s" if self.units > 1 else ""
        return (
            f"{self.op} ({self.program}): {self.units} {self.unit}{plural} over {self.cores} of {gx}x{gy} "
            f"cores, {self.per_core} per core"
        )


def interleaved_families() -> Mapping[str, TtnnOp]:
    """The families ttnn runs without a program config (an ``interleaved_default``), by name in name order."""
    return {name: op for name, op in ttnn_ops().items() if op.interleaved_default is not None}


def work_split(units: int, grid: tuple[int, int]) -> tuple[int, int, tuple[int, int]]:
    """(units of the busiest core, cores used, grid of the cores used) of ``split_work_to_cores`` over
    ``grid`` (module docstring)."""
    gx, gy = grid
    per_core = math.ceil(units / (gx * gy))
    used = math.ceil(units / per_core)
    return per_core, used, ((gx, math.ceil(used / gx)) if used > gx else (used, 1))


def ttnn_default_op(hw: HardwareSpec, problem: Problem) -> tuple[TtnnDefaultOp, Candidate, dict[str, int]]:
    """(ttnn's default op, its candidate, its parameter values but the buffer depths) for ``problem`` on
    ``hw``'s whole grid (module docstring). ConfigError for a problem with a tensor in L1 (the default runs
    on interleaved DRAM tensors) or of another family."""
    return _split(hw, problem)[:3]


def _split(hw: HardwareSpec, problem: Problem) -> tuple[TtnnDefaultOp, Candidate, dict[str, int], int]:
    """``ttnn_default_op`` and the depth of every streamed input's buffer."""
    family = program_family(problem.program).name
    families = interleaved_families()
    if family not in families:
        raise ConfigError(
            f"{problem.program.name} is a {family} program; ttnn runs only the "
            f"{' and '.join(families)} families without a program config"
        )
    in_l1 = [t for t, p in problem.placements if p.in_l1]
    if in_l1:
        raise ConfigError(
            f"ttnn's default for {problem.program.name} runs on DRAM-interleaved or L1-interleaved tensors; "
            f"{', '.join(in_l1)} is sharded in L1 (--memory)"
        )
    grid = (hw.grid.columns, hw.grid.rows)
    default_of = families[family].interleaved_default
    assert default_of is not None  # interleaved_families holds only the ops that have one
    split = default_of(problem)
    group, units = split.group, split.units
    candidate = Candidate(axes=(("xy", group),), comms=tuple((t, Comm.dram) for t in split.streamed))
    per_core, used, (gx, gy) = work_split(units, grid)
    default = TtnnDefaultOp(
        op=split.op,
        program=split.program,
        compute_with_storage_grid_size=grid,
        unit=split.unit,
        units=units,
        per_core=per_core,
        cores=used,
    )
    values = {"grid_x": gx, "grid_y": gy, f"per_core_{group}": per_core, split.block: 1}
    return default, candidate, values, split.buffer_depth


def evaluate_interleaved_default(hw: HardwareSpec, problem: Problem) -> tuple[TtnnDefaultOp, Evaluated]:
    """ttnn's default for an element-wise or row-reduction ``problem`` and the referee's evaluation of it
    (a ``conflict`` naming the violated constraints when the model finds it illegal, e.g. a row too wide
    for L1): module docstring."""
    default, candidate, values, depth = _split(hw, problem)
    schedule = build_schedule(hw, problem, candidate)
    streams = {f"{t}_buffer_depth" for t, _ in candidate.comms}
    values |= {p: depth for p in schedule.param_names if p in streams}
    return default, evaluate_values(schedule, values)


def interleaved_captured(hw: HardwareSpec, problem: Problem, call: CapturedCall) -> tuple[TtnnConfig | None, Evaluated]:
    """``TtnnOp.captured`` of an op ttnn runs with its interleaved default: the call's own config (none) and the
    referee's evaluation of the default."""
    return call.config, evaluate_interleaved_default(hw, problem)[1]


def evaluate_ttnn_default(hw: HardwareSpec, problem: Problem) -> tuple[TtnnConfig, Evaluated]:
    """The config ttnn picks without one (SDPA's for attention; for element-wise and row-reduction ops the
    work split of their interleaved program factories, above; the matmul auto-config otherwise) and the
    referee's evaluation of it (``predict --ttnn-default``): the ``default`` of the op ttnn calls for
    ``problem``."""
    op = problem_ttnn_op(problem)
    if op.default is None:
        raise ConfigError(f"ttnn's {op.name} op has no default the model reproduces ({problem.program.name})")
    return op.default(hw, problem)
