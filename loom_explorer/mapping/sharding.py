"""Which candidates an L1-sharded tensor fits, and how its shard is split over the grid.

A tensor's columns are its last dim ``C``, its rows all other dims. With ``d_y``/``d_x`` the dims on
the grid rows/columns and ``d_xy`` the dim of a 1-D layout:

* ``l1_height``: 1-D layout with ``d_xy`` among the rows: every core holds its own rows (``local``);
* ``l1_width``:  1-D layout with ``d_xy = C``: every core holds its own columns (``local``);
* ``l1_block``:  2-D layout with ``d_y`` among the rows and either ``d_x = C`` (``local``) or the tensor
  shared along x, its columns then split over the row's cores, each K block multicast along the row
  from the core that holds it (TTNN's 2-D multicast matmul with a block-sharded in0);
* ``l1``:        any candidate (the shard is assumed to be whatever the candidate needs).

An output has no communication option: it fits only when its shard is exactly what each core produces
(so a block-sharded output needs its rows on y and its columns on x).
"""

from __future__ import annotations

from loom_explorer.mapping.candidate import Axis, Comm
from loom_explorer.problem import Placement, Problem


def shard_fits(problem: Problem, axes: tuple[tuple[Axis, str], ...], tensor: str, comm: Comm | None) -> bool:
    """Whether ``tensor``'s placement is compatible with a layout (and, for an input, its option)."""
    placement = problem.placement(tensor)
    if placement.interleaved or placement is Placement.l1:
        return True
    dims = problem.program.tensor(tensor).dims
    rows, col = dims[:-1], dims[-1]
    on = dict(axes)
    local = comm in (None, Comm.local)
    if placement is Placement.l1_height:
        return "xy" in on and on["xy"] in rows and local
    if placement is Placement.l1_width:
        return "xy" in on and on["xy"] == col and local
    # l1_block
    if "y" not in on or on["y"] not in rows:
        return False
    if on.get("x") == col:
        return local
    # an input shared along x can stream its column shards along the row; an output cannot be assembled
    return comm is Comm.mcast_x and "x" in on and on["x"] not in dims


def columns_split_over_x(problem: Problem, axes: tuple[tuple[Axis, str], ...], tensor: str) -> str | None:
    """The column dim of a block-sharded tensor that is split over grid columns without being on them."""
    if problem.placement(tensor) is not Placement.l1_block:
        return None
    col = problem.program.tensor(tensor).dims[-1]
    return col if dict(axes).get("x") != col else None
