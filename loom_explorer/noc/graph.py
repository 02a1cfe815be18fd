"""The NoC graph of a chip and dimension-order routes on it.

Every tile of the NoC grid (``noc_width`` x ``noc_height``, compute cores, DRAM, Ethernet, ...) is a router;
each NoC is a 2-D torus of one-way links, in its own direction (tt-isa WormholeB0/NoC/RoutingPaths.md):

* NoC0: links ``(x, y) -> (x+1, y)`` and ``(x, y) -> (x, y+1)`` (mod the grid); a packet goes right
  until it reaches the destination column, then down;
* NoC1: links ``(x, y) -> (x-1, y)`` and ``(x, y) -> (x, y-1)``; a packet goes up until it reaches the
  destination row, then left.

A multicast to a set of destinations is the union of the unicast routes to each of them: routes from one
source share their prefixes, so the union is the tree the routers replicate the packet along, and each
of its links carries the packet once. Coordinates are the hardware file's NoC coordinates, so DRAM
columns and harvested rows sit where they are on the chip.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from typing import TYPE_CHECKING

from loom_explorer.hardware.schema import HardwareSpec

if TYPE_CHECKING:
    import networkx as nx

Coord = tuple[int, int]
Link = tuple[int, Coord, Coord]  # (noc, from router, to router)


class NocGraph:
    """Both NoCs of one chip as directed tori, with DOR routing. The links are plain tuples (``links``);
    ``graphs`` gives them as networkx graphs, built (and networkx imported) only when asked for."""

    def __init__(self, hw: HardwareSpec) -> None:
        self.width = hw.grid.noc_width
        self.height = hw.grid.noc_height
        # every link of each NoC with its axis, in a fixed order (a dict: a 1-wide torus's two equal links are one)
        self._links: dict[int, dict[tuple[Coord, Coord], str]] = {0: {}, 1: {}}
        for x in range(self.width):
            for y in range(self.height):
                self._links[0].setdefault(((x, y), ((x + 1) % self.width, y)), "x")
                self._links[0].setdefault(((x, y), (x, (y + 1) % self.height)), "y")
                self._links[1].setdefault(((x, y), ((x - 1) % self.width, y)), "x")
                self._links[1].setdefault(((x, y), (x, (y - 1) % self.height)), "y")
        self._routes: dict[tuple[int, Coord, Coord], tuple[Link, ...]] = {}  # routes are fixed: computed once

    def links(self, noc: int) -> list[tuple[Coord, Coord]]:
        """Every one-way link ``(from router, to router)`` of ``noc``."""
        return list(self._links[noc])

    @cached_property
    def graphs(self) -> dict[int, nx.DiGraph]:
        """Both NoCs as networkx graphs, each link an edge with its ``axis`` (``"x"`` or ``"y"``)."""
        import networkx as nx

        out: dict[int, nx.DiGraph] = {}
        for noc, links in self._links.items():
            out[noc] = nx.DiGraph()
            for (a, b), axis in links.items():
                out[noc].add_edge(a, b, axis=axis)
        return out

    def route(self, noc: int, src: Coord, dst: Coord) -> list[Link]:
        """The links a unicast packet from ``src`` to ``dst`` crosses on ``noc`` (empty when src == dst)."""
        known = self._routes.get((noc, src, dst))
        if known is not None:
            return list(known)
        self._check(src)
        self._check(dst)
        known_links = self._links[noc]
        step = 1 if noc == 0 else -1
        links: list[Link] = []
        here = src
        # NoC0 travels x then y; NoC1 y then x
        for axis in ("x", "y") if noc == 0 else ("y", "x"):
            i = 0 if axis == "x" else 1
            while here[i] != dst[i]:
                nxt = (
                    ((here[0] + step) % self.width, here[1])
                    if axis == "x"
                    else (here[0], (here[1] + step) % self.height)
                )
                assert known_links.get((here, nxt)) == axis
                links.append((noc, here, nxt))
                here = nxt
        self._routes[(noc, src, dst)] = tuple(links)
        return links

    def tree(self, noc: int, src: Coord, dsts: Iterable[Coord]) -> set[Link]:
        """The links of a multicast from ``src`` to every destination (the union of their routes)."""
        out: set[Link] = set()
        for d in dsts:
            out.update(self.route(noc, src, d))
        return out

    def _check(self, c: Coord) -> None:
        if not (0 <= c[0] < self.width and 0 <= c[1] < self.height):
            raise ValueError(f"NoC coordinate {c} is outside the {self.width}x{self.height} NoC grid")


def core_coord(hw: HardwareSpec, column: int, row: int) -> Coord:
    """NoC coordinate of compute core (column, row) of the compute grid."""
    return hw.grid.noc_x[column], hw.grid.noc_y[row]


def dram_endpoints(hw: HardwareSpec) -> list[Coord]:
    """The NoC endpoint each DRAM channel (bank) is read and written through: its first listed endpoint
    (tt-metal's preferred worker endpoint), in channel order."""
    out: list[Coord] = []
    for ch in range(hw.dram.channels):
        e = next(e for e in hw.dram.endpoints if e.channel == ch)
        out.append((e.x, e.y))
    return out
