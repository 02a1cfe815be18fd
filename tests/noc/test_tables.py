"""Per-grid-shape link-load tables (``noc/tables.py``) against an independent count.

The reference below routes every (sender core, DRAM channel) pair, every multicast tree and every gather
send with ``NocGraph`` (whose routes ``test_routes.py`` checks by hand) and counts, link by link, how
many of them cross it; the table must hold the largest count at every grid shape. Units: a DRAM flow's
route to or from one channel carries ``1/C`` of a core's bytes and counts 1; a multicast tree or a gather
send carries the whole block and counts 1.
"""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from test_routes import mini_hw

from loom_explorer.noc import NocGraph, core_coord, dram_endpoints
from loom_explorer.noc.tables import link_units

Key = tuple[str, str, str | None, int]  # (kind, senders, axis, noc): link_units' arguments
DRAM_KEYS: list[Key] = [
    (kind, senders, None, noc)
    for kind in ("dram_read", "dram_write")
    for senders in ("all", "row_heads", "col_heads", "origin")
    for noc in (0, 1)
]
MCAST_KEYS: list[Key] = [
    ("multicast", s, axis, noc)
    for s, axis in (("row_heads", "x"), ("col_heads", "y"), ("origin", "xy"))
    for noc in (0, 1)
]
GATHER_KEYS: list[Key] = [("gather", "all", axis, noc) for axis in ("x", "y") for noc in (0, 1)]
ALL_KEYS = DRAM_KEYS + MCAST_KEYS + GATHER_KEYS


def reference(hw, kind, senders, axis, noc, gx, gy) -> int:
    """Max over links of the flow's load at grid shape (gx, gy), routed and counted one by one."""
    g = NocGraph(hw)
    eps = dram_endpoints(hw)
    at = lambda i, j: core_coord(hw, i, j)  # noqa: E731
    cores = [(i, j) for i in range(gx) for j in range(gy)]
    load: Counter = Counter()
    if kind in ("dram_read", "dram_write"):
        chosen = {
            "all": cores,
            "row_heads": [c for c in cores if c[0] == 0],
            "col_heads": [c for c in cores if c[1] == 0],
            "origin": [(0, 0)],
        }[senders]
        for c in chosen:
            for ep in eps:
                route = g.route(noc, ep, at(*c)) if kind == "dram_read" else g.route(noc, at(*c), ep)
                load.update(route)
    elif kind == "multicast":
        if axis == "x":
            trees = [g.tree(noc, at(0, j), [at(i, j) for i in range(1, gx)]) for j in range(gy)]
        elif axis == "y":
            trees = [g.tree(noc, at(i, 0), [at(i, j) for j in range(1, gy)]) for i in range(gx)]
        else:
            trees = [g.tree(noc, at(0, 0), [at(*c) for c in cores if c != (0, 0)])]
        for t in trees:
            load.update(t)
    else:
        for i, j in cores:
            head = (0, j) if axis == "x" else (i, 0)
            load.update(g.route(noc, at(i, j), at(*head)))
    assert all(link[0] == noc for link in load), "a flow stays on its NoC"
    return max(load.values(), default=0)


def shapes(hw):
    return list(itertools.product(range(1, hw.grid.columns + 1), range(1, hw.grid.rows + 1)))


@pytest.fixture(scope="module")
def wrap_hw():
    """3x2 cores on a 5x4 NoC with 3 DRAM channels on both sides: many routes wrap around."""
    return mini_hw(5, 4, noc_x=(1, 2, 3), noc_y=(1, 2), endpoints=((0, 0, 0), (1, 4, 2), (2, 2, 3), (1, 0, 3)))


# ---------------------------------------------------------------------------------------- by hand


def test_hand_worked_dram_tables():
    """2x1 cores at NoC (1,1), (2,1) of a 4x3 NoC."""
    one = mini_hw(4, 3, endpoints=((0, 0, 0),))
    # NoC0 from (0,0): (0,0)->(1,0) is on both cores' routes
    assert link_units(one, "dram_read", "all", None, 0) == {(1, 1): 1, (2, 1): 2}
    # NoC1 from (0,0): up to (0,2), (0,1), then left (0,1)->(3,1)->(2,1)[->(1,1)]: 4 links shared
    assert link_units(one, "dram_read", "all", None, 1) == {(1, 1): 1, (2, 1): 2}
    # writes on NoC0 to (0,0): right to x=0 via (3,1), (0,1), then down (0,2), (0,0): shared
    assert link_units(one, "dram_write", "all", None, 0) == {(1, 1): 1, (2, 1): 2}
    assert link_units(one, "dram_read", "origin", None, 0) == {(1, 1): 1, (2, 1): 1}
    # a second channel at (3,0) (same chip name, other endpoints): its routes to both cores also cross
    # (0,0)->(1,0), so that link carries 4 routes of 1/C of a core's bytes
    two = mini_hw(4, 3, endpoints=((0, 0, 0), (1, 3, 0)))
    assert link_units(two, "dram_read", "all", None, 0) == {(1, 1): 2, (2, 1): 4}


def test_hand_worked_multicast_and_gather_tables(wrap_hw):
    # a row multicast: one tree per row, rows never share a link
    t = link_units(wrap_hw, "multicast", "row_heads", "x", 1)
    assert t[(1, 1)] == 0 and t[(1, 2)] == 0  # one column: nobody to multicast to
    assert t[(2, 1)] == 1 and t[(3, 2)] == 1
    # gather along x on NoC1 (leftwards): (3,1)->(2,1)->(1,1) and (2,1)->(1,1)
    assert link_units(wrap_hw, "gather", "all", "x", 1)[(3, 1)] == 2
    # on NoC0 (rightwards round the ring) the two sends share (3,1)->(4,1)->(0,1)->(1,1)
    assert link_units(wrap_hw, "gather", "all", "x", 0)[(3, 1)] == 2
    assert link_units(wrap_hw, "gather", "all", "x", 0)[(1, 2)] == 0


# --------------------------------------------------------------------------- against the reference


@pytest.mark.parametrize("chip", ["wrap_hw", "tiny_hw"])
@pytest.mark.parametrize("key", ALL_KEYS, ids=lambda k: "-".join(map(str, k)))
def test_tables_match_routing(request, chip, key):
    hw = request.getfixturevalue(chip)
    table = link_units(hw, *key)
    assert set(table) == set(shapes(hw))
    for gx, gy in shapes(hw):
        assert table[(gx, gy)] == reference(hw, *key, gx, gy), (key, gx, gy)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "key",
    [
        ("dram_read", "all", None, 0),
        ("dram_read", "all", None, 1),
        ("dram_write", "all", None, 1),
        ("dram_read", "row_heads", None, 0),
        ("dram_read", "col_heads", None, 1),
        ("multicast", "row_heads", "x", 1),
        ("multicast", "origin", "xy", 0),
        ("gather", "all", "y", 1),
    ],
    ids=lambda k: "-".join(map(str, k)),
)
def test_tables_match_routing_n150(n150, key):
    table = link_units(n150, *key)
    assert set(table) == set(shapes(n150))
    for gx, gy in [(1, 1), (2, 3), (5, 2), (8, 1), (1, 8), (4, 7), (8, 8)]:
        assert table[(gx, gy)] == reference(n150, *key, gx, gy), (key, gx, gy)  # type: ignore[call-arg]


def test_n150_full_grid_values(n150):
    """Spot values on the full 8x8 grid of the n150: every multicast tree link carries one copy; every
    core reading from 12 channels puts many routes on the links next to the DRAM columns."""
    assert link_units(n150, "multicast", "row_heads", "x", 0)[(8, 8)] == 1
    assert link_units(n150, "multicast", "origin", "xy", 1)[(8, 8)] == 1
    assert link_units(n150, "dram_read", "all", None, 0)[(8, 8)] > 64  # more routes than cores on one link
    assert link_units(n150, "dram_read", "origin", None, 0)[(1, 1)] >= 2


# ------------------------------------------------------------------------------------------ shape


@pytest.mark.parametrize(
    "key", [k for k in ALL_KEYS if k[1] == "all"] + MCAST_KEYS, ids=lambda k: "-".join(map(str, k))
)
def test_tables_monotone_in_grid_size(tiny_hw, n150, key):
    for hw in (tiny_hw, n150):
        table = link_units(hw, *key)
        for gx, gy in shapes(hw):
            if gx < hw.grid.columns:
                assert table[(gx, gy)] <= table[(gx + 1, gy)], (hw.name, key, gx, gy)
            if gy < hw.grid.rows:
                assert table[(gx, gy)] <= table[(gx, gy + 1)], (hw.name, key, gx, gy)


@pytest.mark.parametrize("kind, noc", [("dram_read", 0), ("dram_read", 1), ("dram_write", 1)])
def test_fewer_senders_load_less(tiny_hw, kind, noc):
    every = link_units(tiny_hw, kind, "all", None, noc)
    rows = link_units(tiny_hw, kind, "row_heads", None, noc)
    cols = link_units(tiny_hw, kind, "col_heads", None, noc)
    origin = link_units(tiny_hw, kind, "origin", None, noc)
    for s in shapes(tiny_hw):
        assert origin[s] <= rows[s] <= every[s] and origin[s] <= cols[s] <= every[s]
        assert origin[s] == origin[(1, 1)]  # the origin alone does not depend on the grid


@pytest.mark.parametrize(
    "key",
    [
        ("dram_read", "all", None, 0),
        ("dram_write", "all", None, 1),
        ("multicast", "origin", "xy", 0),
        ("dram_read", "origin", None, 0),
    ],
    ids=lambda k: "-".join(map(str, k)),
)
def test_one_d_tables_count_full_rows_only(tiny_hw, wrap_hw, key):
    """A 1-D layout at (gx, gy) fills gx columns row by row: only gx x max(gy - 1, 1) cores are certain."""
    for hw in (tiny_hw, wrap_hw):
        full = link_units(hw, *key)
        one_d = link_units(hw, *key, one_d=True)  # type: ignore[misc]
        assert set(one_d) == set(full)
        for gx, gy in shapes(hw):
            assert one_d[(gx, gy)] == full[(gx, max(gy - 1, 1))]
            assert one_d[(gx, gy)] == reference(hw, *key, gx, max(gy - 1, 1))  # type: ignore[call-arg]
            assert one_d[(gx, gy)] <= full[(gx, gy)]
        if key[1] == "all" and hw.grid.rows >= 3:  # the last, partial row really is left out
            assert any(one_d[s] < full[s] for s in shapes(hw))


def test_tables_are_shared_by_hardware_differing_only_in_other_constants():
    """A calibration's trials change costs and bandwidths, never the topology: they reuse the tables; a
    moved DRAM endpoint does not (``test_hand_worked_dram_tables`` checks its values)."""
    hw = mini_hw(4, 3, endpoints=((0, 0, 0),))
    faster = hw.model_copy(update={"dram": hw.dram.model_copy(update={"core_read_bytes_per_cycle": 1.5})})
    assert faster.dram != hw.dram
    assert link_units(faster, "dram_read", "all", None, 0) is link_units(hw, "dram_read", "all", None, 0)
    moved = mini_hw(4, 3, endpoints=((0, 3, 0),))
    assert link_units(moved, "dram_read", "all", None, 0) is not link_units(hw, "dram_read", "all", None, 0)
