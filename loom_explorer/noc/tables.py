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
_LOADS: dict[str, _Loads] = {}  # one chip's graphs (and their memoised routes), shared by its tables


class _Loads:
    """Link-load vectors over every link of both NoCs of one chip."""

    def __init__(self, hw: HardwareSpec) -> None:
        self.hw = hw
        self.graph = NocGraph(hw)
        self.links: dict[Link, int] = {}
        for noc, g in self.graph.graphs.items():
            for a, b in g.edges:
                self.links[(noc, a, b)] = len(self.links)

    def vector(self, links: list[Link] | set[Link]) -> np.ndarray:
        v = np.zeros(len(self.links), dtype=np.int64)
        for link in links:
            v[self.links[link]] += 1
        return v

    def core(self, column: int, row: int) -> Coord:
        return core_coord(self.hw, column, row)


def link_units(hw: HardwareSpec, kind: FlowKind, senders: Senders, axis: str | None, noc: int,
               one_d: bool = False) -> Table:
    """``{(grid_x, grid_y): max over links of the flow's load}`` in the flow's unit (module docstring).

    ``one_d``: the participants are a 1-D layout's cores, of which only the full rows are certain, so the
    table at ``(gx, gy)`` counts ``gx`` x ``max(gy - 1, 1)`` cores (a lower bound on the load)."""
    chip = hw.model_dump_json()
    key = (chip, kind, senders, axis, noc, one_d)
    if key not in _CACHE:
        loads = _LOADS.get(chip) or _LOADS.setdefault(chip, _Loads(hw))
        full = _full_table(loads, kind, senders, axis, noc)
        if one_d:
            full = {(gx, gy): full[(gx, max(gy - 1, 1))] for gx, gy in full}
        _CACHE[key] = full
    return _CACHE[key]


def _full_table(loads: _Loads, kind: FlowKind, senders: Senders, axis: str | None, noc: int) -> Table:
    cols, rows = loads.hw.grid.columns, loads.hw.grid.rows
    if kind == "multicast" and axis == "xy":  # one tree per grid shape, from the origin over the rectangle
        return {(gx, gy): int(loads.vector(loads.graph.tree(
            noc, loads.core(0, 0), [loads.core(i, j) for i in range(gx) for j in range(gy)])).max())
            for gx in range(1, cols + 1) for gy in range(1, rows + 1)}
    # per-core contribution V[i, j] for a grid shape that includes core (i, j); multicast and gather
    # contributions depend on the grid shape along their own axis, handled per shape below
    if kind in ("dram_read", "dram_write"):
        eps = dram_endpoints(loads.hw)
        per_core = np.stack([np.stack([
            loads.vector([link for ep in eps for link in (
                loads.graph.route(noc, ep, loads.core(i, j)) if kind == "dram_read"
                else loads.graph.route(noc, loads.core(i, j), ep))])
            for j in range(rows)]) for i in range(cols)])  # (cols, rows, links)
        mask = _sender_mask(senders, cols, rows)
        prefix = np.cumsum(np.cumsum(per_core * mask[:, :, None], axis=0), axis=1)
        return {(gx, gy): int(prefix[gx - 1, gy - 1].max()) for gx in range(1, cols + 1) for gy in range(1, rows + 1)}
    table: Table = {}
    for gx in range(1, cols + 1):
        for gy in range(1, rows + 1):
            total = np.zeros(len(loads.links), dtype=np.int64)
            for i in range(gx):
                for j in range(gy):
                    total += _contribution(loads, kind, axis, noc, i, j, gx, gy)
            table[(gx, gy)] = int(total.max())
    return table


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


def _contribution(loads: _Loads, kind: FlowKind, axis: str | None, noc: int, i: int, j: int, gx: int,
                  gy: int) -> np.ndarray:
    """Links used on behalf of core (i, j) in a gx x gy grid: the multicast tree it sends (row or column
    heads) or its gather send to the first core along ``axis`` (the grid's first core for ``xy``)."""
    here = loads.core(i, j)
    if kind == "multicast":
        if axis == "x" and i == 0:
            return loads.vector(loads.graph.tree(noc, here, [loads.core(c, j) for c in range(1, gx)]))
        if axis == "y" and j == 0:
            return loads.vector(loads.graph.tree(noc, here, [loads.core(i, r) for r in range(1, gy)]))
        return np.zeros(len(loads.links), dtype=np.int64)
    head = {"x": loads.core(0, j), "y": loads.core(i, 0)}.get(axis or "", loads.core(0, 0))  # xy: core 0
    return loads.vector(loads.graph.route(noc, here, head))
