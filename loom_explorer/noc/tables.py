"""Per-grid-shape link-load coefficients: how much of one flow the busiest link carries.

A *flow* is one kind of transfer every participating core repeats the same number of times with the same
bytes (``model/traffic.py``). Which cores participate depends only on the grid used, ``(grid_x, grid_y)``
(the top-left ``grid_x`` x ``grid_y`` cores of the compute grid; a 1-D layout's full rows), so for each
grid shape the load of every link is a fixed multiple of the flow's bytes. The table holds, for each
``(grid_x, grid_y)``, the largest multiple over all links of one NoC, as an integer in the flow's unit:

* ``dram_read`` / ``dram_write``: each participant moves its bytes to/from all ``C`` DRAM channels in
  equal shares (TTNN's DRAM-interleaved pages); unit ``bytes / C``;
* ``multicast``: each sender's packet along its tree (a row, a column or the rectangle); unit ``bytes``;
* ``gather``: every core but the first along the axis sends its bytes to that first core; unit ``bytes``.

Participants (``senders``): ``all`` cores used, ``row_heads`` (the first core of each row), ``col_heads``
(the first core of each column), ``origin`` (the top-left core), ``group_heads`` (the first core of each
group of consecutive cores of a 1-D layout, flash-decoding's; tabulated as ``all``, an upper bound, since
the group size is not a grid shape). Loads are built with prefix sums over the
grid (numpy), so a whole table costs one route per (core, channel) pair.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.noc.graph import Coord, Link, NocGraph, core_coord, dram_endpoints

FlowKind = Literal["dram_read", "dram_write", "multicast", "gather"]
Senders = Literal["all", "row_heads", "col_heads", "origin", "group_heads"]
Table = dict[tuple[int, int], int]

_CACHE: dict[tuple[object, ...], Table] = {}
_LOADS: dict[str, _Loads] = {}  # one chip topology's graphs (and their memoised routes), shared by its tables


class _Loads:
    """Link-load vectors over every link of both NoCs of one chip."""

    def __init__(self, hw: HardwareSpec) -> None:
        self.hw = hw
        self.graph = NocGraph(hw)
        self.links: dict[Link, int] = {}
        for noc in (0, 1):
            for a, b in self.graph.links(noc):
                self.links[(noc, a, b)] = len(self.links)

    def vector(self, links: list[Link] | set[Link]) -> np.ndarray:
        """How many times each link of the chip occurs in ``links``."""
        index = np.fromiter((self.links[link] for link in links), dtype=np.intp, count=len(links))
        return np.bincount(index, minlength=len(self.links)).astype(np.int64)

    def core(self, column: int, row: int) -> Coord:
        return core_coord(self.hw, column, row)


def link_units(
    hw: HardwareSpec, kind: FlowKind, senders: Senders, axis: str | None, noc: int, one_d: bool = False
) -> Table:
    """``{(grid_x, grid_y): max over links of the flow's load}`` in the flow's unit (module docstring).

    ``one_d``: the participants are a 1-D layout's cores, of which only the full rows are certain, so the
    table at ``(gx, gy)`` counts ``gx`` x ``max(gy - 1, 1)`` cores (a lower bound on the load)."""
    chip = _topology(hw)
    key = (chip, kind, senders, axis, noc, one_d)
    if key not in _CACHE:
        loads = _LOADS.get(chip) or _LOADS.setdefault(chip, _Loads(hw))
        full = _full_table(loads, kind, senders, axis, noc)
        if one_d:
            full = {(gx, gy): full[(gx, max(gy - 1, 1))] for gx, gy in full}
        _CACHE[key] = full
    return _CACHE[key]


def _topology(hw: HardwareSpec) -> str:
    """All of ``hw`` a table reads: the grid (its extents and NoC coordinates, the NoC's size) and the DRAM
    channels' endpoints. The tables and the shared graphs are keyed by it, not by the whole file, so hardware
    that differs only in other constants (a calibration's trials: costs and bandwidths) reuses them."""
    return hw.grid.model_dump_json() + hw.dram.model_dump_json(include={"channels", "endpoints"})


def _full_table(loads: _Loads, kind: FlowKind, senders: Senders, axis: str | None, noc: int) -> Table:
    cols, rows = loads.hw.grid.columns, loads.hw.grid.rows
    shapes = [(gx, gy) for gx in range(1, cols + 1) for gy in range(1, rows + 1)]
    if kind == "multicast" and axis == "xy":  # one tree per grid shape, from the origin over the rectangle
        return {
            (gx, gy): int(
                loads.vector(
                    loads.graph.tree(noc, loads.core(0, 0), [loads.core(i, j) for i in range(gx) for j in range(gy)])
                ).max()
            )
            for gx, gy in shapes
        }
    if kind == "multicast":
        # a row head's tree along its row (x) depends on grid_x only, a column head's (y) on grid_y only: the
        # load of a grid shape is a prefix sum over the rows (columns) of those trees
        if axis not in ("x", "y"):
            return dict.fromkeys(shapes, 0)
        along, across = (cols, rows) if axis == "x" else (rows, cols)

        def tree(extent: int, lane: int) -> np.ndarray:  # lane's head to the next extent - 1 cores of its lane
            cores = [loads.core(k, lane) if axis == "x" else loads.core(lane, k) for k in range(extent)]
            return loads.vector(loads.graph.tree(noc, cores[0], cores[1:]))

        trees = np.stack([np.stack([tree(extent, lane) for lane in range(across)]) for extent in range(1, along + 1)])
        prefix = np.cumsum(trees, axis=1)  # (extent along the axis, lanes used, links)
        return {(gx, gy): int(prefix[(gx, gy)[axis == "y"] - 1, (gy, gx)[axis == "y"] - 1].max()) for gx, gy in shapes}
    # per-core contribution V[i, j], the same for every grid shape that includes core (i, j): its DRAM
    # traffic, or its gather send to the first core along ``axis`` (the grid's first core for ``xy``)
    if kind in ("dram_read", "dram_write"):
        eps = dram_endpoints(loads.hw)
        mask = _sender_mask(senders, cols, rows)

        def contribution(i: int, j: int) -> np.ndarray:
            return loads.vector(
                [
                    link
                    for ep in eps
                    for link in (
                        loads.graph.route(noc, ep, loads.core(i, j))
                        if kind == "dram_read"
                        else loads.graph.route(noc, loads.core(i, j), ep)
                    )
                ]
            )
    else:  # gather: every core of the grid sends to its head
        mask = np.ones((cols, rows), dtype=np.int64)

        def contribution(i: int, j: int) -> np.ndarray:
            head = {"x": loads.core(0, j), "y": loads.core(i, 0)}.get(axis or "", loads.core(0, 0))
            return loads.vector(loads.graph.route(noc, loads.core(i, j), head))

    per_core = np.stack([np.stack([contribution(i, j) for j in range(rows)]) for i in range(cols)])  # cols, rows, links
    prefix = np.cumsum(np.cumsum(per_core * mask[:, :, None], axis=0), axis=1)
    return {(gx, gy): int(prefix[gx - 1, gy - 1].max()) for gx, gy in shapes}


def _sender_mask(senders: Senders, cols: int, rows: int) -> np.ndarray:
    mask = np.zeros((cols, rows), dtype=np.int64)
    if senders in ("all", "group_heads"):  # group heads: an upper bound (module docstring)
        mask[:, :] = 1
    elif senders == "row_heads":
        mask[0, :] = 1
    elif senders == "col_heads":
        mask[:, 0] = 1
    else:
        mask[0, 0] = 1
    return mask
