"""The data-movement family's quantities: the parameters of one candidate and a core's tiles per block.

Notation (counts in 32x32 tiles of the iteration space, ``program.py``): the output's dimensions, the last
(``C``, the columns) the one a row-major page runs along, ``R`` the one before it (the rows). The candidate puts
one or two dimensions on grid axes, or deals all tiles out row-major over a 1-D layout (*flattened*,
``H*W@xy``); ``per_core_d`` is a core's share (a ragged tail is allowed: coverage), a dimension on no axis is
whole on every core, and the slowest core has ``T = prod_d share_d`` tiles (flattened: ``per_core_H*W``).

A core works its share in blocks of ``B`` tiles, ``n = ceil(T / B)`` of them:

* flattened, or the columns on a grid axis: a run of ``block`` tiles along the columns (``block | per_core``);
* the columns whole on every core: ``block_rows`` whole tile rows, ``B = block_rows * C`` (``block_rows``
  divides the rows' share): ttnn's tilize and untilize work whole tile rows.

A tile of the iteration holds ``prod_d tile_d`` elements (1024 for two matrix dimensions; 32 for a row of a
row-major copy whose rows count one by one, ``tile=1``). Per block every source streams ``B`` tiles' worth of
its elements through a circular buffer of
``depth_X`` blocks, and the output is written from a double-buffered block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from loom_explorer.families.data_movement.program import DataMovement, analyse_data_movement
from loom_explorer.hardware.schema import DataFormat, HardwareSpec
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
from loom_explorer.problem import Problem, ProblemError

BLOCK_FLOAT = (DataFormat.bfloat8_b, DataFormat.bfloat4_b)


def tiles_of(problem: Problem, dims: tuple[str, ...] | list[str]) -> int:
    """Tiles of ``dims`` together: the product of their tile counts."""
    return math.prod(problem.tiles(d) for d in dims)


@dataclass(frozen=True, eq=False)
class DataMovementQuantities(GridQuantities):
    """``block`` is ``B``, the tiles of one block; ``block_param`` the parameter it is built from."""

    st: DataMovement
    block: Expr
    block_param: Var

    def extent(self, dim: str) -> int:
        """Tiles of a dimension, or of several flattened (``H*W``)."""
        return tiles_of(self.problem, dim.split("*"))

    def share(self, dim: str) -> Expr:
        return self.per_core[dim] if dim in self.per_core else const(self.problem.tiles(dim))

    @property
    def core_tiles(self) -> Expr:
        """``T``: tiles of the slowest core."""
        if self.flat is not None:
            return self.per_core[self.flat]
        return mul(1, *(self.share(d) for d in self.st.dims))

    @property
    def blocks(self) -> Expr:
        """``n``: blocks per core."""
        return ceil_div(self.core_tiles, self.block)

    def block_tiles(self, tensor: str) -> Expr:
        """Tiles of the iteration one block moves, for every tensor (a padded source's are partly padding:
        ``fraction``)."""
        return self.block

    @property
    def output(self) -> str:
        return self.st.output

    def divisibility_pairs(self) -> list[tuple[Var, Expr, str]]:
        """The block divides the share it cuts (module docstring)."""
        cut = self.flat if self.flat is not None else self._cut_dim
        if cut is not None and cut in self.per_core:
            return [(self.block_param, self.per_core[cut], f"per_core_{cut}")]
        return []

    @property
    def _cut_dim(self) -> str | None:
        """The dimension the block cuts on a rectangular layout: the columns when on an axis, else the rows."""
        if self.st.columns in self.per_core:
            return self.st.columns
        return self.st.dims[-2] if len(self.st.dims) >= 2 else None

    def subblock_pairs(self) -> list[tuple[str, Var, Var]]:
        return []

    # ---- what the model adds: elements, pages and bytes of each tensor -------------------------------

    def iteration_rate(self, tensor: str, bytes_per_cycle: Fraction) -> Fraction:
        """``r / f``: the bytes of the iteration's tiles per cycle when ``tensor`` moves at ``bytes_per_cycle``
        (moving ``B*b*f`` bytes at ``r`` takes as long as ``B*b`` at ``r/f``; ``fraction``)."""
        return (bytes_per_cycle / self.fraction(tensor)).limit_denominator(1000)

    def fraction(self, tensor: str) -> Fraction:
        """The share of the iteration's tiles' elements that ``tensor`` really moves:

        * tiled: ``prod_d tiles(d) / tiles(whole(d))`` (whole tiles move; a part of a dimension has fewer);
        * row-major: ``prod_d E_d / (tiles(whole(d)) * tile(whole(d)))`` (only its elements move: a page of
          ``E_last`` elements, not a whole number of 32-element tiles; a part has fewer rows)."""
        problem, program, out = self.problem, self.problem.program, Fraction(1)
        row_major = program.tensor(tensor).layout == "row_major"
        for d in program.tensor(tensor).dims:
            whole = program.whole(d)
            padded = problem.tiles(whole) * program.dim(whole).tile
            out *= (
                Fraction(problem.elements(d), padded) if row_major else Fraction(problem.tiles(d), problem.tiles(whole))
            )
        return out

    def shard_unit_bytes(self, tensor: str) -> int:
        """Bytes of one iteration tile of ``tensor`` held in L1 (``tile_bytes * fraction``, rounded up)."""
        return max(1, math.ceil(self.tile_bytes(tensor) * self.fraction(tensor)))

    def element_bytes(self, tensor: str) -> Fraction:
        """Bytes of one element of ``tensor``: its format's tile bytes over 1024."""
        return Fraction(self.hw.tile_bytes[self.fmt(tensor)], 1024)

    def tile_bytes(self, tensor: str) -> int:
        """Bytes of one tile of the iteration in ``tensor``'s format: a 32x32 tile's, or, where a dimension
        counts single elements (``tile=1``: the rows of a row-major copy, dealt out one page at a time), the
        ``prod_d tile_d`` elements such a tile holds."""
        elements = math.prod(self.problem.program.dim(d).tile for d in self.st.dims)
        return max(1, math.ceil(elements * self.element_bytes(tensor)))

    def page_bytes(self, tensor: str) -> int:
        """Bytes of one DRAM page of ``tensor``: a tile, or (row-major) one row of its last dimension."""
        t = self.problem.program.tensor(tensor)
        if t.layout == "tile":
            return self.hw.tile_bytes[self.fmt(tensor)]
        if self.fmt(tensor) in BLOCK_FLOAT:
            raise ProblemError(
                f"{tensor} is row-major in {self.fmt(tensor).value}: a block-float format exists only in tiles "
                "(give it --format bfloat16 or float32)"
            )
        last = t.dims[-1] if t.dims else None
        elements = self.problem.elements(last) if last is not None else 1
        return max(1, math.ceil(elements * self.element_bytes(tensor)))


def build_data_movement_quantities(hw: HardwareSpec, problem: Problem, candidate: Candidate) -> DataMovementQuantities:
    """Parameters over compact domains: ``per_core_d`` as the other families' (``spread_domain``); the block
    over ``1..`` what there is to cut (the divisors of a dimension on no axis), cut where the buffers of one
    tile per source and two per output overflow L1; a buffer depth per source."""
    st = analyse_data_movement(problem.program)
    params: list[Param] = []
    param = param_maker(params)
    gx, gy = grid_params(hw, candidate, param)
    per_core: dict[str, Var] = {}
    for axis, carried in candidate.axes:
        extent = tiles_of(problem, carried.split("*"))
        domain, bound = spread_domain(hw, axis, extent, extent)
        per_core[carried] = param(f"per_core_{carried}", domain, f"{carried} tiles per core", "tiles", bound)
    elements = math.prod(problem.program.dim(d).tile for d in st.dims)

    def unit_bytes(tensor: str) -> int:  # DataMovementQuantities.tile_bytes before there is one
        return max(1, math.ceil(elements * Fraction(hw.tile_bytes[problem.data_format(tensor)], 1024)))

    tile_bytes = sum(unit_bytes(t) for t in st.streamed) + 2 * unit_bytes(st.output)
    flat = next((carried for _, carried in candidate.axes if "*" in carried), None)
    cols = st.columns
    if flat is not None or cols in per_core:
        cut_tiles = tiles_of(problem, flat.split("*")) if flat is not None else problem.tiles(cols)
        limit = l1_block_limit(hw, tile_bytes, 0)
        why = f"a block over {limit:,} tiles overflows L1 on its own" if limit < cut_tiles else ""
        var = param("block", Domain.range(1, min(cut_tiles, limit)), "tiles per block (each step)", "tiles", why)
        block: Expr = var
    else:
        rows = st.dims[-2] if len(st.dims) >= 2 else None
        row_tiles = problem.tiles(rows) if rows is not None else 1
        limit = l1_block_limit(hw, tile_bytes * problem.tiles(cols), 0)
        why = f"a block over {limit:,} tile rows overflows L1 on its own" if limit < row_tiles else ""
        values = (
            Domain.range(1, min(row_tiles, limit))
            if rows in per_core
            else Domain.of(v for v in range(1, min(row_tiles, limit) + 1) if row_tiles % v == 0)
        )
        var = param("block_rows", values, "whole tile rows per block (each step)", "tile rows", why)
        block = mul(var, problem.tiles(cols))
    depth = {
        t: param(f"{t}_buffer_depth", BUFFER_DEPTHS, f"{t} circular buffer depth", "blocks") for t, _ in candidate.comms
    }
    return DataMovementQuantities(
        hw=hw,
        problem=problem,
        candidate=candidate,
        params=tuple(params),
        grid_x=gx,
        grid_y=gy,
        per_core=per_core,
        depth=depth,
        st=st,
        block=block,
        block_param=var,
    )
