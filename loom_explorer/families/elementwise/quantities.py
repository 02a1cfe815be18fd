"""The element-wise family's quantities: the parameters of one candidate and a core's tiles of each tensor,
per block and held.

Notation (counts in 32x32 tiles): the iteration space is rows ``R`` x columns ``C`` (the program's two
dimensions, as a TTNN tensor's last two). The candidate puts one or both on grid axes, or deals all tiles
out row-major over a 1-D layout (*flattened*, ``H*W@xy``); ``per_core_d`` is a core's share (coverage
allows a ragged tail: the host pads the tensors), and a dimension on no axis is whole on every core.

*Rectangular* layouts: a core's share is ``r x c`` tiles (``r = per_core_R`` or ``R``, likewise ``c``),
worked in blocks of ``block_h x block_w`` (``block_h | r``, ``block_w | c``), rows of blocks outer:

    n = (r / block_h) * (c / block_w) blocks of  B = block_h * block_w  output tiles.

*Flattened*: a core's share is a run of ``per_core_R*C`` tiles in row-major order, worked in blocks of
``block`` tiles (``block | per_core``), ``n = per_core / block``, ``B = block``.

Per block, every full-rank input streams its ``B`` tiles; a broadcast input its tiles for the block: a
row vector (indexed by the columns only) ``block_w`` tiles, a column vector ``block_h`` (flattened: one
tile per output tile, ``B``); a scalar (indexed by nothing) is read once. Every input that streams has a
circular buffer of ``depth_X`` blocks; every output a double-buffered block. An input may be read from
DRAM by every core, or by the first core of its row / column / grid and multicast along the axis it is
shared along.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from loom_explorer.families.elementwise.program import Elementwise, analyse_elementwise
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


def tiles_of(problem: Problem, dims: Sequence[str]) -> int:
    """Tiles of ``dims`` together: the product of their tile counts."""
    return math.prod(problem.tiles(d) for d in dims)


@dataclass(frozen=True, eq=False)
class ElementwiseQuantities(GridQuantities):
    """``block_h``/``block_w`` are the block's sides on a rectangular layout; a flattened layout's block is
    a run of ``block_w`` tiles (its parameter ``block``) and ``block_h`` is 1."""

    st: Elementwise
    block_h: Expr
    block_w: Expr

    def units(self, dim: str) -> int:
        return self.problem.tiles(dim)

    def extent(self, dim: str) -> int:
        """Tiles of a dimension, or of several flattened (``H*W``)."""
        return tiles_of(self.problem, dim.split("*"))

    def share(self, dim: str) -> Expr:
        """A core's tiles of ``dim`` on a rectangular layout: ``per_core_dim``, or all of it on no axis."""
        return self.per_core[dim] if dim in self.per_core else const(self.units(dim))

    @property
    def core_tiles(self) -> Expr:
        """Output tiles of the slowest core: ``r * c``, or the flattened run."""
        if self.flat is not None:
            return self.per_core[self.flat]
        return mul(1, *(self.share(d) for d in self.st.dims))

    @property
    def block(self) -> Expr:
        """``B``: output tiles per block."""
        return mul(self.block_h, self.block_w)

    @property
    def blocks(self) -> Expr:
        """``n``: blocks per core (exact under the divisibility constraints)."""
        return ceil_div(self.core_tiles, self.block)

    def block_tiles(self, tensor: str) -> Expr:
        """Tiles of ``tensor`` per block (module docstring)."""
        dims = self.problem.program.tensor(tensor).dims
        if tensor in self.st.full:
            return self.block
        if not dims:
            return const(1)
        if self.flat is not None:
            return self.block  # one tile of the vector per output tile
        rows, _ = self.st.dims
        return self.block_h if dims == (rows,) else self.block_w

    @property
    def per_block(self) -> tuple[str, ...]:
        """Inputs read every block (all but the scalars)."""
        return tuple(t for t in self.streamed if t not in self.st.scalars)

    @property
    def output(self) -> str:
        return self.st.output

    @property
    def dram_outputs(self) -> tuple[str, ...]:
        return tuple(t for t in self.st.outputs if not self.problem.placement(t).in_l1)

    def divisibility_pairs(self) -> list[tuple[Var, Expr, str]]:
        """A block side divides the share it cuts (a side on no axis has only divisors in its domain)."""
        if self.flat is not None:
            sides = [(self.block_w, self.flat)]
        else:
            sides = [
                (side, d)
                for side, d in zip((self.block_h, self.block_w), self.st.dims, strict=True)
                if d in self.per_core
            ]
        return [(side, self.per_core[d], f"per_core_{d}") for side, d in sides if isinstance(side, Var)]

    def subblock_pairs(self) -> list[tuple[str, Var, Var]]:
        return []  # no matmul accumulates in Dst


def build_elementwise_quantities(hw: HardwareSpec, problem: Problem, candidate: Candidate) -> ElementwiseQuantities:
    """Parameters over compact domains: ``per_core_d`` as the other families' (``spread_domain``); a block
    side over ``1..`` the tiles there are (the divisors of a dimension on no axis), cut where the streamed
    buffers alone overflow L1 (``side * (sum_full b_X + 2 sum_{DRAM outputs} b_Y) <= L1``); a buffer depth
    per input that streams."""
    st = analyse_elementwise(problem.program)
    params: list[Param] = []
    param = param_maker(params)
    gx, gy = grid_params(hw, candidate, param)
    per_core: dict[str, Var] = {}
    for axis, carried in candidate.axes:
        extent = tiles_of(problem, carried.split("*"))
        domain, bound = spread_domain(hw, axis, extent, extent)
        per_core[carried] = param(f"per_core_{carried}", domain, f"{carried} tiles per core", "tiles", bound)
    streamed_bytes = sum(hw.tile_bytes[problem.data_format(t)] for t in st.full) + 2 * sum(
        hw.tile_bytes[problem.data_format(t)] for t in st.outputs if not problem.placement(t).in_l1
    )
    limit = l1_block_limit(hw, max(1, streamed_bytes), 0)
    why = f"a block over {limit:,} tiles overflows L1 on its own"

    def side(name: str, dim_tiles: int, on_axis: bool, what: str) -> Var:
        values = (
            Domain.range(1, min(dim_tiles, limit))
            if on_axis
            else Domain.of(v for v in range(1, min(dim_tiles, limit) + 1) if dim_tiles % v == 0)
        )
        return param(name, values, what, "tiles", why if limit < dim_tiles else "")

    block_h: Expr
    if any("*" in carried for _, carried in candidate.axes):
        block_h = const(1)
        block_w = side("block", tiles_of(problem, st.dims), True, "tiles per block (each step), row-major")
    else:
        rows, cols = st.dims
        block_h = side("block_h", problem.tiles(rows), rows in per_core, f"block height ({rows} tiles)")
        block_w = side("block_w", problem.tiles(cols), cols in per_core, f"block width ({cols} tiles)")
    streamed = tuple(t for t, _ in candidate.comms if t not in st.scalars)
    depth = {t: param(f"{t}_buffer_depth", BUFFER_DEPTHS, f"{t} circular buffer depth", "blocks") for t in streamed}
    return ElementwiseQuantities(
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
        block_w=block_w,
    )
