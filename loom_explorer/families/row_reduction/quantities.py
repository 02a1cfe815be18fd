"""The row-reduction family's quantities (softmax, RMSNorm, LayerNorm): the parameters of one candidate and a
core's tiles of each tensor, per block and held.

Notation (counts in 32x32 tiles): rows ``R`` (parallel) x columns ``C`` (reduced). The rows may be spread
over a grid axis (or a 1-D layout); the columns may be split over the other axis (or alone over a 1-D
layout), over ``g`` cores. A core's share is ``r x c`` tiles (``r = per_core_R`` or ``R``, ``c =
per_core_C`` or ``C``), worked in blocks of ``block_h`` whole tile rows of its share (``block_h | r``):

    n = r / block_h blocks,   a rows tensor's block: B = block_h * c tiles,   a column vector's: block_h.

Per block, each input indexed by rows and columns streams its ``B`` tiles and each input column vector its
``block_h`` (a buffer of ``depth_X`` blocks each); a row vector (``gamma[C]``) is read once per core (its
``c`` tiles, held), as is a scalar. The block's intermediates and outputs stay in L1 while the ops run, one
pass each, in the program's order (``program.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.families.row_reduction.program import RowReduction, analyse_row_reduction
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.domain import Domain
from loom_explorer.model.expr import Expr, Var, ceil_div, const, mul
from loom_explorer.model.quantities import (
    BUFFER_DEPTHS,
    GridQuantities,
    grid_params,
    l1_block_limit,
    param_maker,
    spread_domain,
)
from loom_explorer.model.schedule import Param
from loom_explorer.problem import Problem


@dataclass(frozen=True, eq=False)
class RowReductionQuantities(GridQuantities):
    st: RowReduction
    block_h: Var

    def share(self, dim: str) -> Expr:
        """A core's tiles of ``dim``: ``per_core_dim``, or all of it on no axis."""
        return self.per_core[dim] if dim in self.per_core else const(self.problem.tiles(dim))

    @property
    def cols(self) -> Expr:
        """``c``: a core's columns."""
        return self.share(self.st.cols_dim)

    @property
    def blocks(self) -> Expr:
        """``n``: blocks per core (exact under the divisibility constraint)."""
        return ceil_div(self.share(self.st.rows_dim), self.block_h)

    def tiles(self, tensor: str) -> Expr:
        """Tiles of ``tensor`` in one block (a row vector: the ``c`` tiles a core holds)."""
        return {"rows": mul(self.block_h, self.cols), "col": self.block_h, "row": self.cols, "scalar": const(1)}[
            self.st.kind(tensor)
        ]

    def block_tiles(self, tensor: str) -> Expr:
        return self.tiles(tensor)

    def resident_tiles(self, tensor: str) -> Expr:
        """Tiles of an L1-resident tensor one core holds: its share of the tensor's dimensions."""
        rows = self.share(self.st.rows_dim)
        return {"rows": mul(rows, self.cols), "col": rows, "row": self.cols, "scalar": const(1)}[self.st.kind(tensor)]

    @property
    def per_block(self) -> tuple[str, ...]:
        """Inputs read every block: the rows inputs and the column vectors."""
        return tuple(t for t in self.streamed if self.st.kind(t) in ("rows", "col"))

    @property
    def once(self) -> tuple[str, ...]:
        """Inputs read once per core: row vectors and scalars."""
        return tuple(t for t in self.streamed if t not in self.per_block)

    @property
    def split_cores(self) -> Expr:
        """``g``: cores a row's columns are split over (1 when they are not)."""
        axis = self.candidate.gather_axis
        return const(1) if axis is None else self.axis_cores(axis)

    @property
    def output(self) -> str:
        return self.st.output

    @property
    def dram_outputs(self) -> tuple[str, ...]:
        return tuple(t for t in self.st.outputs if not self.problem.placement(t).in_l1)

    def divisibility_pairs(self) -> list[tuple[Var, Expr, str]]:
        rows = self.st.rows_dim
        return [(self.block_h, self.per_core[rows], f"per_core_{rows}")] if rows in self.per_core else []

    def subblock_pairs(self) -> list[tuple[str, Var, Var]]:
        return []


def build_row_reduction_quantities(hw: HardwareSpec, problem: Problem, candidate: Candidate) -> RowReductionQuantities:
    """Parameters: ``per_core_d`` as the other families' (``spread_domain``); ``block_h`` over ``1..R`` (the
    divisors of ``R`` when the rows are on no axis), cut where one tile row of the held tensors alone
    overflows L1; a buffer depth per input read every block."""
    st = analyse_row_reduction(problem.program)
    params: list[Param] = []
    param = param_maker(params)
    gx, gy = grid_params(hw, candidate, param)
    per_core: dict[str, Var] = {}
    for axis, dim in candidate.axes:
        extent = problem.tiles(dim)
        domain, bound = spread_domain(hw, axis, extent, extent)
        per_core[dim] = param(f"per_core_{dim}", domain, f"{dim} tiles per core", "tiles", bound)
    rows, cols = st.dims
    least_cols = per_core[cols].values.min if cols in per_core else problem.tiles(cols)
    row_bytes = least_cols * sum(
        hw.tile_bytes[problem.data_format(t)] for t in (*st.full, *st.held) if st.kind(t) == "rows"
    )
    limit = l1_block_limit(hw, max(1, row_bytes), 0)
    extent = problem.tiles(rows)
    values = (
        Domain.range(1, min(extent, limit))
        if rows in per_core
        else Domain.of(v for v in range(1, min(extent, limit) + 1) if extent % v == 0)
    )
    block_h = param(
        "block_h",
        values,
        f"{rows} tiles per block (whole rows of the share)",
        "tiles",
        f"a block over {limit:,} tile rows overflows L1 on its own" if limit < extent else "",
    )
    streamed = tuple(t for t, _ in candidate.comms if st.kind(t) in ("rows", "col"))
    depth = {t: param(f"{t}_buffer_depth", BUFFER_DEPTHS, f"{t} circular buffer depth", "blocks") for t in streamed}
    return RowReductionQuantities(
        hw=hw,
        problem=problem,
        candidate=candidate,
        params=tuple(params),
        grid_x=gx,
        grid_y=gy,
        per_core=per_core,
        depth=depth,
        st=st,
        block_h=block_h,
    )
