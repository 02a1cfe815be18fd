"""NoC routes and multicast trees (``noc/graph.py``), worked by hand on small tori.

NoC0 goes right (+x) then down (+y), NoC1 up (-y) then left (-x), both wrapping around the torus. The
small chips here are derived from the n150 (``small_hw_dict``) with the NoC grid shrunk to 4x3 or 5x4 and
a couple of DRAM endpoints placed inside it.
"""

from __future__ import annotations

import itertools
import random
import re

import networkx as nx
import pytest
from loom_helpers import small_hw_dict

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.noc import NocGraph, core_coord, dram_endpoints


def mini_hw(width: int, height: int, noc_x=(1, 2), noc_y=(1,), endpoints=((0, 0, 0), (1, 3, 0))) -> HardwareSpec:
    """A chip on a ``width`` x ``height`` NoC, compute cores at NoC columns ``noc_x`` and rows ``noc_y``,
    DRAM channel endpoints ``(channel, x, y)``."""
    d = small_hw_dict(1, 1, name=f"mini_{width}x{height}")
    d["grid"].update(
        columns=len(noc_x), rows=len(noc_y), noc_x=list(noc_x), noc_y=list(noc_y), noc_width=width, noc_height=height
    )
    d["dram"]["channels"] = 1 + max(ch for ch, _, _ in endpoints)
    d["dram"]["endpoints"] = [{"channel": ch, "x": x, "y": y} for ch, x, y in endpoints]
    return HardwareSpec.model_validate(d)


def hops(noc, *nodes):
    """The links of the path through ``nodes`` on ``noc``."""
    return [(noc, a, b) for a, b in itertools.pairwise(nodes)]


@pytest.fixture(scope="module")
def g43():
    return NocGraph(mini_hw(4, 3))


@pytest.fixture(scope="module")
def g54():
    return NocGraph(mini_hw(5, 4, noc_x=(1, 2, 3), noc_y=(1, 2)))


# ------------------------------------------------------------------------------------------ the graphs


@pytest.mark.parametrize("width, height", [(4, 3), (5, 4), (10, 12)])
def test_graphs_are_directed_tori(width, height):
    g = NocGraph(mini_hw(width, height))
    assert (g.width, g.height) == (width, height)
    for noc, step in ((0, 1), (1, -1)):
        graph = g.graphs[noc]
        assert isinstance(graph, nx.DiGraph)
        assert graph.number_of_nodes() == width * height
        assert graph.number_of_edges() == 2 * width * height
        for x, y in itertools.product(range(width), range(height)):
            assert set(graph.successors((x, y))) == {((x + step) % width, y), (x, (y + step) % height)}
            assert graph.edges[(x, y), ((x + step) % width, y)]["axis"] == "x"
            assert graph.edges[(x, y), (x, (y + step) % height)]["axis"] == "y"
        assert nx.is_strongly_connected(graph)


# ------------------------------------------------------------------------------- unicast, by hand (4x3)


@pytest.mark.parametrize(
    "noc, src, dst, path",
    [
        # NoC0: right then down
        (0, (0, 0), (2, 1), [(0, 0), (1, 0), (2, 0), (2, 1)]),
        (0, (1, 0), (1, 2), [(1, 0), (1, 1), (1, 2)]),  # same column: down only
        (0, (0, 2), (3, 2), [(0, 2), (1, 2), (2, 2), (3, 2)]),  # same row: right only
        (0, (3, 0), (1, 0), [(3, 0), (0, 0), (1, 0)]),  # wraps in x: 3 -> 0 -> 1
        (0, (1, 2), (1, 1), [(1, 2), (1, 0), (1, 1)]),  # wraps in y: 2 -> 0 -> 1
        (0, (3, 2), (0, 0), [(3, 2), (0, 2), (0, 0)]),  # wraps in both
        (0, (2, 1), (1, 0), [(2, 1), (3, 1), (0, 1), (1, 1), (1, 2), (1, 0)]),  # "back" is the long way round
        # NoC1: up then left
        (1, (2, 1), (0, 0), [(2, 1), (2, 0), (1, 0), (0, 0)]),
        (1, (1, 2), (1, 0), [(1, 2), (1, 1), (1, 0)]),  # same column: up only
        (1, (3, 1), (1, 1), [(3, 1), (2, 1), (1, 1)]),  # same row: left only
        (1, (1, 0), (3, 0), [(1, 0), (0, 0), (3, 0)]),  # wraps in x: 1 -> 0 -> 3
        (1, (0, 1), (0, 2), [(0, 1), (0, 0), (0, 2)]),  # wraps in y: 1 -> 0 -> 2
        (1, (0, 0), (2, 1), [(0, 0), (0, 2), (0, 1), (3, 1), (2, 1)]),  # wraps in both
        (1, (0, 0), (3, 2), [(0, 0), (0, 2), (3, 2)]),
    ],
)
def test_route_by_hand(g43, noc, src, dst, path):
    assert g43.route(noc, src, dst) == hops(noc, *path)


def test_route_by_hand_5x4(g54):
    assert g54.route(0, (4, 3), (1, 1)) == hops(0, (4, 3), (0, 3), (1, 3), (1, 0), (1, 1))
    assert g54.route(1, (1, 1), (4, 3)) == hops(1, (1, 1), (1, 0), (1, 3), (0, 3), (4, 3))
    # the two NoCs take different links between the same two routers
    assert not set(link[1:] for link in g54.route(0, (1, 1), (3, 2))) & set(
        link[1:] for link in g54.route(1, (3, 2), (1, 1))
    )


def test_route_to_itself_is_empty(g43, g54):
    for g in (g43, g54):
        for x, y in itertools.product(range(g.width), range(g.height)):
            for noc in (0, 1):
                assert g.route(noc, (x, y), (x, y)) == []
                assert g.tree(noc, (x, y), [(x, y)]) == set()


@pytest.mark.parametrize("width, height", [(4, 3), (5, 4)])
def test_every_route_is_dimension_ordered_and_shortest_in_its_direction(width, height):
    g = NocGraph(mini_hw(width, height))
    nodes = list(itertools.product(range(width), range(height)))
    for noc in (0, 1):
        for src, dst in itertools.product(nodes, nodes):
            route = g.route(noc, src, dst)
            if noc == 0:
                dx, dy = (dst[0] - src[0]) % width, (dst[1] - src[1]) % height
            else:
                dx, dy = (src[0] - dst[0]) % width, (src[1] - dst[1]) % height
            assert len(route) == dx + dy, (noc, src, dst)
            here = src
            axes = []
            for n, a, b in route:
                assert n == noc and a == here
                assert g.graphs[noc].has_edge(a, b), (noc, a, b)
                axes.append(g.graphs[noc].edges[a, b]["axis"])
                here = b
            assert here == dst
            first, second = ("x", "y") if noc == 0 else ("y", "x")
            assert axes == [first] * (dx if noc == 0 else dy) + [second] * (dy if noc == 0 else dx)


@pytest.mark.parametrize("bad", [(4, 0), (0, 3), (-1, 1), (1, -1), (7, 9)])
def test_out_of_grid_coordinates_raise(g43, bad):
    for noc in (0, 1):
        with pytest.raises(ValueError, match=re.escape(str(bad))):
            g43.route(noc, bad, (0, 0))
        with pytest.raises(ValueError, match=re.escape(str(bad))):
            g43.route(noc, (1, 1), bad)
        with pytest.raises(ValueError, match=re.escape(str(bad))):
            g43.tree(noc, (0, 0), [(1, 1), bad])


# ------------------------------------------------------------------------------------ multicast trees


def test_row_multicast_noc0_is_the_row_segment(g54):
    tree = g54.tree(0, (0, 1), [(1, 1), (2, 1), (3, 1)])
    assert tree == set(hops(0, (0, 1), (1, 1), (2, 1), (3, 1)))


def test_row_multicast_noc1_goes_round_the_ring(g54):
    # leftwards from x=1 to x=2 and 3: 1 -> 0 -> 4 -> 3 -> 2
    tree = g54.tree(1, (1, 1), [(2, 1), (3, 1)])
    assert tree == set(hops(1, (1, 1), (0, 1), (4, 1), (3, 1), (2, 1)))


def test_column_multicast_noc0_is_the_column_segment(g54):
    assert g54.tree(0, (2, 0), [(2, 1), (2, 2)]) == set(hops(0, (2, 0), (2, 1), (2, 2)))


def test_rectangle_multicast_noc0_is_a_comb(g54):
    src = (1, 1)
    dsts = [(x, y) for x in (1, 2, 3) for y in (1, 2) if (x, y) != src]
    tree = g54.tree(0, src, dsts)
    # the row first, then every column down from it
    comb = set(hops(0, (1, 1), (2, 1), (3, 1))) | {(0, (x, 1), (x, 2)) for x in (1, 2, 3)}
    assert tree == comb
    assert len(tree) == 5
    assert sum(len(g54.route(0, src, d)) for d in dsts) == 1 + 1 + 2 + 2 + 3


def test_rectangle_multicast_noc1_is_a_comb(g54):
    src = (3, 2)
    dsts = [(x, y) for x in (1, 2, 3) for y in (1, 2) if (x, y) != src]
    tree = g54.tree(1, src, dsts)
    # NoC1: the column up first, then every row to the left
    comb = {(1, (3, 2), (3, 1))} | {(1, (3, y), (2, y)) for y in (1, 2)} | {(1, (2, y), (1, y)) for y in (1, 2)}
    assert tree == comb


def _check_tree(g: NocGraph, noc, src, dsts):
    tree = g.tree(noc, src, dsts)
    union = set()
    for d in dsts:
        union |= set(g.route(noc, src, d))
    assert tree == union
    assert len(tree) <= sum(len(g.route(noc, src, d)) for d in dsts)
    targets = {d for d in dsts if d != src}
    if not targets:
        assert tree == set()
        return
    t = nx.DiGraph()
    t.add_edges_from((a, b) for n, a, b in tree if n == noc)
    assert len(t.edges) == len(tree)  # every link is on this NoC
    assert all(g.graphs[noc].has_edge(a, b) for a, b in t.edges)
    assert nx.is_arborescence(t) and src in t and t.in_degree(src) == 0  # a tree rooted at the sender
    reach = nx.descendants(t, src)
    assert targets <= reach
    leaves = {v for v in t if t.out_degree(v) == 0}
    assert leaves <= targets  # no branch leads nowhere


def test_multicast_trees_on_the_n150_noc(n150):
    g = NocGraph(n150)
    cores = [core_coord(n150, i, j) for i in range(n150.grid.columns) for j in range(n150.grid.rows)]
    rng = random.Random(7)
    for _ in range(150):
        src = rng.choice(cores)
        dsts = rng.sample(cores, rng.randint(1, 20))
        for noc in (0, 1):
            _check_tree(g, noc, src, dsts)
    # rectangles from their corner (the multicasts schedules make), both NoCs
    for gx, gy in [(2, 2), (3, 5), (8, 1), (1, 8), (8, 8)]:
        rect = [core_coord(n150, i, j) for i in range(gx) for j in range(gy)]
        for noc in (0, 1):
            _check_tree(g, noc, rect[0], rect[1:])
    noc0_full = g.tree(0, cores[0], [c for c in cores if c != cores[0]])
    # comb on NoC0: row y=1 spans x=1..9 (8 links), then each of the 8 columns goes down y=1..9 (8 links)
    assert len(noc0_full) == 8 + 8 * 8


def test_multicast_shares_prefixes(g54):
    # (1,0)->(3,0) and (1,0)->(3,2) share the row; the tree has 2 + 2 links, the routes 2 + 4
    tree = g54.tree(0, (1, 0), [(3, 0), (3, 2)])
    assert len(tree) == 4
    assert tree == set(hops(0, (1, 0), (2, 0), (3, 0), (3, 1), (3, 2)))


# ---------------------------------------------------------------------------- coordinates of the chip


def test_core_coord_n150(n150):
    assert core_coord(n150, 0, 0) == (1, 1)
    assert core_coord(n150, 4, 0) == (6, 1)  # NoC column 5 is DRAM
    assert core_coord(n150, 0, 5) == (1, 7)  # NoC row 6 is Ethernet
    assert core_coord(n150, 7, 7) == (9, 9)


def test_dram_endpoints_n150_first_listed_per_channel(n150):
    assert dram_endpoints(n150) == [
        (0, 11),
        (0, 1),
        (0, 5),
        (0, 7),
        (5, 1),
        (5, 11),
        (5, 2),
        (5, 9),
        (5, 8),
        (5, 3),
        (5, 5),
        (5, 7),
    ]


def test_dram_endpoints_in_channel_order():
    hw = mini_hw(4, 3, endpoints=((2, 3, 2), (1, 0, 2), (0, 0, 0), (1, 3, 0), (2, 0, 1)))
    assert dram_endpoints(hw) == [(0, 0), (0, 2), (3, 2)]
