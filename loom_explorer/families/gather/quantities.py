"""The gather family's quantities: the parameters of one candidate and a core's rows.

Notation: ``P`` output rows (each a row of ``C`` elements), ``k`` table rows read per output row (the
``Gather`` op's ``rows``). The rows ``P`` go on one grid axis (or a 1-D layout); a core's share is ``p =
per_core_P`` rows (all ``P`` on no axis), worked in steps of ``block`` rows (``block | p``):

    n = p / block steps.

Data is row-major: a *page* is one row, ``s_X = ceil(C * b_X / 1024)`` bytes for a tensor of ``b_X`` bytes per
32x32 tile (2 bytes an element for bfloat16). Per step a core reads ``block * k`` scattered table pages and
writes ``block`` output pages. It reads its share of the index, ``4k`` bytes an output row (a 4-byte row
number per row read), ``index_block`` rows at a time, waiting for each such read before the table reads it
names:

    m = ceil(p / index_block) index reads per core (``index_block = p``: the whole share once, first).
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.families.gather.program import Gathering, analyse_gather
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.domain import Domain
from loom_explorer.model.expr import Expr, Var, ceil_div, const, mul
from loom_explorer.model.quantities import (
    GridQuantities,
    ParamMaker,
    grid_params,
    l1_block_limit,
    param_maker,
    spread_domain,
)
from loom_explorer.model.schedule import Param
from loom_explorer.problem import Problem

INDEX_ENTRY_BYTES = 4  # one uint32 row number per table row read
TILE_ELEMENTS = 1024  # a 32x32 tile


@dataclass(frozen=True, eq=False)
class GatherQuantities(GridQuantities):
    st: Gathering
    block: Var
    index_block: Var

    def extent(self, dim: str) -> int:
        return self.problem.tiles(dim)

    @property
    def core_rows(self) -> Expr:
        """``p``: output rows of the busiest core."""
        rows = self.st.rows_dim
        return self.per_core[rows] if rows in self.per_core else const(self.problem.tiles(rows))

    @property
    def steps(self) -> Expr:
        """``n``: steps per core (exact under the divisibility constraint)."""
        return ceil_div(self.core_rows, self.block)

    def page_bytes(self, tensor: str) -> int:
        """``s_X``: one row of ``C`` elements of ``tensor`` (table or output)."""
        return -(-self.problem.elements(self.st.width_dim) * self.tile_bytes(tensor) // TILE_ELEMENTS)

    @property
    def index_reads(self) -> Expr:
        """``m``: the index reads of the busiest core."""
        return ceil_div(self.core_rows, self.index_block)

    @property
    def index_row_bytes(self) -> int:
        """The index bytes of one output row: ``4k``."""
        return INDEX_ENTRY_BYTES * self.st.rows

    def step_bytes(self, tensor: str) -> Expr:
        """Bytes of ``tensor`` one step moves: ``block * k`` table pages, ``block`` output pages, or the
        index rows of the block."""
        if tensor == self.st.table:
            return mul(self.block, self.st.rows * self.page_bytes(tensor))
        if tensor == self.st.index:
            return mul(self.block, self.index_row_bytes)
        return mul(self.block, self.page_bytes(tensor))

    def block_tiles(self, tensor: str) -> Expr:
        """Whole tiles of ``tensor``'s bytes in one step (``step_bytes`` over the tile size, rounded up)."""
        return ceil_div(self.step_bytes(tensor), self.tile_bytes(tensor))

    @property
    def output(self) -> str:
        return self.st.output

    def divisibility_pairs(self) -> list[tuple[Var, Expr, str]]:
        rows = self.st.rows_dim
        return [(self.block, self.per_core[rows], f"per_core_{rows}")] if rows in self.per_core else []

    def subblock_pairs(self) -> list[tuple[str, Var, Var]]:
        return []


_ROWS_PARAMS = {
    "block": "output rows per step (their table rows read before one wait)",
    "index_block": "output rows whose index rows one read brings (the reader waits for it)",
}


def _rows_param(param: ParamMaker, name: str, rows: int, spread: bool, limit: int, what: str) -> Var:
    """A count of output rows over ``1..rows`` (the divisors of ``rows`` when the rows are on no axis: a core
    then takes them all), cut at ``limit``, the most whose buffers ``what`` fills fit L1."""
    top = min(rows, limit)
    values = Domain.range(1, top) if spread else Domain.of(v for v in range(1, top + 1) if rows % v == 0)
    reason = f"{what} over {limit:,} rows overflows L1 on its own" if limit < rows else ""
    return param(name, values, _ROWS_PARAMS[name], "rows", reason)


def build_gather_quantities(hw: HardwareSpec, problem: Problem, candidate: Candidate) -> GatherQuantities:
    """Parameters: ``per_core_P`` as the other families' (``spread_domain``); ``block`` over ``1..P`` (the
    divisors of ``P`` when the rows are on no axis), cut where the double-buffered table and output pages of
    one step alone overflow L1. No buffer depth: ttnn's gather factories double-buffer their pages."""
    st = analyse_gather(problem.program)
    params: list[Param] = []
    param = param_maker(params)
    gx, gy = grid_params(hw, candidate, param)
    per_core: dict[str, Var] = {}
    for axis, dim in candidate.axes:
        extent = problem.tiles(dim)
        domain, bound = spread_domain(hw, axis, extent, extent)
        per_core[dim] = param(f"per_core_{dim}", domain, f"{dim} rows per core", "rows", bound)
    rows = problem.tiles(st.rows_dim)
    width = problem.elements(st.width_dim)
    row_bytes = 2 * -(
        -width
        * (st.rows * hw.tile_bytes[problem.data_format(st.table)] + hw.tile_bytes[problem.data_format(st.output)])
        // TILE_ELEMENTS
    )
    spread = st.rows_dim in per_core
    block = _rows_param(param, "block", rows, spread, l1_block_limit(hw, max(1, row_bytes), 0), "a step")
    index_limit = l1_block_limit(hw, INDEX_ENTRY_BYTES * st.rows, 0)
    index_block = _rows_param(param, "index_block", rows, spread, index_limit, "an index read")
    return GatherQuantities(
        hw=hw,
        problem=problem,
        candidate=candidate,
        params=tuple(params),
        grid_x=gx,
        grid_y=gy,
        per_core=per_core,
        depth={},
        st=st,
        block=block,
        index_block=index_block,
    )
