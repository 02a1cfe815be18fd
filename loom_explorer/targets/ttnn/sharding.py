"""The sharded memory configs that pin a schedule's layout on the card, which every TTNN op's export shares.

An interleaved operand is written ``"DRAM"`` (``ttnn.DRAM_MEMORY_CONFIG``) or ``"L1"``
(``ttnn.L1_MEMORY_CONFIG``, ``Placement.l1_interleaved``: ``interleaved``). A sharded operand is written as the
arguments of a ``ttnn.MemoryConfig(<layout>, BufferType.L1,
ShardSpec(CoreRangeSet, shard_shape, ROW_MAJOR))`` (``sharded``): inclusive ``[[x0, y0], [x1, y1]]`` core
ranges and the shard shape in elements. A 1-D layout numbers its cores row by row over ``grid_x`` columns,
so ``n`` cores are ``floor(n / grid_x)`` full rows and a partial last row (``ranges_filling_rows``), the
order TTNN's ``ROW_MAJOR`` shard orientation deals shards in.

For a 2-D tensor ``[R, C]`` whose rows and columns a candidate spreads over the grid (the element-wise and
row-reduction families), ``grid_shard`` maps the placement to TTNN's layout of the same split:

- ``l1_height`` on ``R@xy``: ``HEIGHT_SHARDED``, shards of ``[per_core_R, Ct]`` tiles on ``Rt / per_core_R``
  cores;
- ``l1_width`` on ``C@xy``: ``WIDTH_SHARDED``, shards of ``[Rt, per_core_C]`` tiles on ``Ct / per_core_C``
  cores;
- ``l1_block`` on ``R@y,C@x``: ``BLOCK_SHARDED``, shards of ``[per_core_R, per_core_C]`` tiles on the
  ``grid_x x grid_y`` cores.

The shards must be even (``per_core`` divides the tiles exactly), as TTNN's sharded norms require; a ragged
last shard is refused with the reason rather than exported as a layout the card would measure differently.
"""

from __future__ import annotations

from loom_explorer.mapping.candidate import Candidate
from loom_explorer.problem import Placement

TILE = 32
DRAM = "DRAM"
L1 = "L1"  # L1-interleaved: ttnn.L1_MEMORY_CONFIG
INTERLEAVED = {Placement.dram: DRAM, Placement.l1_interleaved: L1}


def interleaved(placement: Placement) -> str | None:
    """The memory spec of an interleaved ``placement`` (``"DRAM"`` or ``"L1"``), None for a sharded one."""
    return INTERLEAVED.get(placement)


def ranges_filling_rows(cores: int, columns: int) -> list[list[list[int]]]:
    """``cores`` cores taken row by row from a grid ``columns`` wide, as inclusive ``[[x0, y0], [x1, y1]]``
    core ranges (full rows, then the partial last row)."""
    full_rows, rest = divmod(cores, columns)
    ranges = [[[0, 0], [columns - 1, full_rows - 1]]] if full_rows else []
    if rest:
        ranges.append([[0, full_rows], [rest - 1, full_rows]])
    return ranges


def sharded(layout: str, ranges: list[list[list[int]]], shard_tiles: tuple[int, int]) -> dict[str, object]:
    """A sharded L1 memory config's arguments (module docstring)."""
    return {
        "memory_layout": layout,
        "buffer_type": "L1",
        "core_ranges": ranges,
        "shard_shape": [shard_tiles[0] * TILE, shard_tiles[1] * TILE],
        "shard_orientation": "ROW_MAJOR",
    }


def _even(tiles: int, per_core: int, dim: str) -> int:
    """Shards of ``dim`` (``tiles / per_core``); ValueError naming the ragged split."""
    if tiles % per_core:
        raise ValueError(f"{dim}'s {tiles} tiles do not split evenly into shards of {per_core}")
    return tiles // per_core


def grid_shard(
    placement: Placement, candidate: Candidate, rows: tuple[str, int], cols: tuple[str, int], v: dict[str, int]
) -> dict[str, object]:
    """TTNN's sharded memory config for a ``[R, C]`` tensor placed ``placement`` by ``candidate`` at
    parameter values ``v``; ``rows``/``cols`` are (dimension, tiles). ValueError with the reason when TTNN
    has no layout of this split (module docstring)."""
    (r, rt), (c, ct) = rows, cols
    gx, gy = v["grid_x"], v["grid_y"]
    ar, ac = candidate.axis_of(r), candidate.axis_of(c)
    if placement is Placement.l1_height and (ar, ac) == ("xy", None):
        cores = _even(rt, v[f"per_core_{r}"], r)
        return sharded("HEIGHT_SHARDED", ranges_filling_rows(cores, gx), (v[f"per_core_{r}"], ct))
    if placement is Placement.l1_width and (ar, ac) == (None, "xy"):
        cores = _even(ct, v[f"per_core_{c}"], c)
        return sharded("WIDTH_SHARDED", ranges_filling_rows(cores, gx), (rt, v[f"per_core_{c}"]))
    if placement is Placement.l1_block and (ar, ac) == ("y", "x"):
        if (_even(rt, v[f"per_core_{r}"], r), _even(ct, v[f"per_core_{c}"], c)) != (gy, gx):
            raise ValueError(f"the shards do not fill the {gx}x{gy} grid")
        return sharded("BLOCK_SHARDED", [[[0, 0], [gx - 1, gy - 1]]], (v[f"per_core_{r}"], v[f"per_core_{c}"]))
    raise ValueError(
        f"TTNN has no {placement.value} layout of candidate {candidate.name} "
        f"(l1_height: {r}@xy; l1_width: {c}@xy; l1_block: {r}@y,{c}@x)"
    )
