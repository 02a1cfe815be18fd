"""The gather family's TTNN op: the model's reading of ``ttnn.embedding`` and ``ttnn.grid_sample``.

Both take no program config; the factories deal the output rows over the cores themselves
(``ttnn_config.py``), so what ttnn runs for a problem (``default``) and what a captured call ran
(``captured``) is that split, costed on the 1-D candidate ``P@xy`` with the table and index read by every
core from where they live, one output row per step (``block = 1``: the readers wait for each row's pages),
the index read ``index_rows_per_read`` rows at a time (``index_block``; ``ttnn_config.py``). ttnn's default
grid sample takes a grid of one point a row (``[N, H, W, 2]``): one index row per read.
Which op: a program whose ``Gather`` reads one row is ``ttnn.embedding``, more rows ``ttnn.grid_sample``.

The export is refused: a gather's schedule has no ttnn config to write (ttnn picks its own split), and the
model's candidates beyond ttnn's own are what-ifs of its factories.
"""

from __future__ import annotations

from loom_explorer.export.exporter import ExportError
from loom_explorer.families.gather.program import analyse_gather
from loom_explorer.families.gather.ttnn_config import GatherSplit, embedding_split, grid_sample_split
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate, Comm
from loom_explorer.model.build import build_schedule
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Problem
from loom_explorer.targets.ttnn.config import TtnnConfig, own
from loom_explorer.targets.ttnn.evaluate import ConfigError, Evaluated, check_grid, evaluate_values
from loom_explorer.targets.ttnn.op import CapturedCall, TtnnOp, no_program_config

REFUSED = (
    "TTNN export of a gather is not written: ttnn.embedding and ttnn.grid_sample take no program config "
    "(their factories split the rows themselves); `predict --ttnn-default` costs what ttnn runs"
)


def _equivalent(schedule: SymbolicSchedule, v: dict[str, int]) -> tuple[str | None, dict[str, object], list[str]]:
    raise ExportError(REFUSED)


def _memory(schedule: SymbolicSchedule, v: dict[str, int]) -> dict[str, object]:
    raise ExportError(REFUSED)


def _call(schedule: SymbolicSchedule) -> str:
    raise ExportError(REFUSED)


def default_split(hw: HardwareSpec, problem: Problem) -> GatherSplit:
    """The split ttnn's factory makes of ``problem`` on ``hw``'s whole grid, its output interleaved."""
    st = analyse_gather(problem.program)
    rows = problem.elements(st.rows_dim)
    grid = (hw.grid.columns, hw.grid.rows)
    return embedding_split(rows, grid) if st.rows == 1 else grid_sample_split(rows, grid)


def evaluate_split(hw: HardwareSpec, problem: Problem, split: GatherSplit) -> Evaluated:
    """The referee's evaluation of ``split`` (module docstring); ConfigError when it does not fit the chip or
    the problem."""
    st = analyse_gather(problem.program)
    check_grid(hw, split.compute_with_storage_grid_size)
    if split.rows != problem.elements(st.rows_dim):
        raise ConfigError(f"the split deals {split.rows} rows; the problem has {problem.elements(st.rows_dim)}")
    candidate = Candidate(axes=(("xy", st.rows_dim),), comms=tuple((t, Comm.dram) for t in st.streamed))
    schedule = build_schedule(hw, problem, candidate)
    gx, gy = split.packed_grid
    return evaluate_values(
        schedule,
        {
            "grid_x": gx,
            "grid_y": gy,
            f"per_core_{st.rows_dim}": split.per_core,
            "block": 1,
            "index_block": split.index_rows_per_read,
        },
    )


def _default(hw: HardwareSpec, problem: Problem) -> tuple[TtnnConfig, Evaluated]:
    split = default_split(hw, problem)
    return split, evaluate_split(hw, problem, split)


def _captured(hw: HardwareSpec, problem: Problem, call: CapturedCall) -> tuple[TtnnConfig | None, Evaluated]:
    """The split the call ran (read from its row), or ttnn's default on ``hw`` when the row gave none."""
    if call.config is None:
        return _default(hw, problem)
    split = own(call.config, GatherSplit)
    return split, evaluate_split(hw, problem, split)


OP = TtnnOp(
    "gather",
    no_program_config,
    _equivalent,
    _memory,
    _call,
    default=_default,
    captured=_captured,
)
"""The gather family's TTNN op (module docstring)."""
