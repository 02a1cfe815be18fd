"""What the grid view draws (``ui/scene.py``), from solved schedules: one tile per NoC router, which
cores work and how much of a block they hold, DRAM endpoints, multicast rectangles and NoC links.

The schedules are real CP-SAT optima of a ragged gemm (900 = 28 full tiles of 32 and a partial one).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import pytest
from bokeh.palettes import Inferno256

from loom_explorer.noc.graph import core_coord, dram_endpoints
from loom_explorer.traffic import used_cores
from loom_explorer.ui.grid_view import LINK_PALETTE
from loom_explorer.ui.scene import (
    LANE_OFFSET,
    STUB,
    grid_scene,
    link_segment,
    load_colour,
)
from loom_explorer.ui.state import ExplorerState

RAGGED = "M=900,K=512,N=900"
MCAST = "N@y,M@x|in0=mcast_y,in1=mcast_x"  # M along x (columns), N along y (rows)
SPLIT_K = "K@y,N@x|in0=dram,in1=dram"
ONE_D = "M@xy|in0=dram,in1=dram"


@pytest.fixture(scope="module")
def ragged():
    st = ExplorerState(shape=RAGGED)
    st.solve_all()
    assert st.problem.tiles("M") == st.problem.tiles("N") == 29  # ceil(900 / 32)
    return st


def scene_of(st: ExplorerState, candidate: str, tensor: str | None = None):
    st.select(candidate)
    assert st.solution is not None, candidate
    transfers = [t for t in st.transfers() if tensor is None or t.tensor == tensor]
    return grid_scene(st.hardware, st.symbolic, st.solution.values(), transfers, st.traffic(tensor))


def tiles_by_coord(scene) -> dict:
    d = scene.tiles.data
    return {(x, y): {k: d[k][i] for k in d} for i, (x, y) in enumerate(zip(d["x"], d["y"], strict=True))}


@pytest.mark.parametrize("candidate", [MCAST, SPLIT_K, ONE_D])
def test_one_tile_per_router_and_the_working_cores(ragged, candidate):
    st = ragged
    scene = scene_of(st, candidate)
    hw = st.hardware
    w, h = hw.grid.noc_width, hw.grid.noc_height
    assert (scene.width, scene.height) == (w, h)
    assert len(scene.tiles) == w * h
    tiles = tiles_by_coord(scene)
    assert set(tiles) == {(x, y) for x in range(w) for y in range(h)}
    kinds = Counter(t["kind"] for t in tiles.values())
    dram_tiles = {(e.x, e.y) for e in hw.dram.endpoints}
    assert kinds["core"] + kinds["idle core"] == hw.grid.cores == hw.grid.columns * hw.grid.rows
    assert kinds["dram"] == len(dram_tiles)
    assert kinds["other"] == w * h - hw.grid.cores - len(dram_tiles)
    assert set(kinds) <= {"core", "idle core", "dram", "other"}
    # working cores: exactly the cores the schedule uses, where the hardware file puts them
    used = used_cores(st.symbolic, st.solution.values())
    assert kinds["core"] == len(used) > 0
    assert {c for c, t in tiles.items() if t["kind"] == "core"} == {core_coord(hw, *p) for p in used}
    assert {c for c, t in tiles.items() if t["kind"] == "dram"} == dram_tiles
    for t in tiles.values():
        assert (t["work"] > 0) == (t["kind"] == "core")
        assert 0 <= t["work"] <= 1


def _share(per: int, extent: int, index: int) -> float:
    """Share of a full block of ``per`` tiles held at grid index ``index`` of ``extent`` tiles."""
    return max(0, min(per, extent - index * per)) / per


def test_ragged_work_is_fractional_on_the_last_row_and_column(ragged):
    st = ragged
    scene = scene_of(st, MCAST)
    v = st.solution.values()
    gx, gy, pm, pn = v["grid_x"], v["grid_y"], v["per_core_M"], v["per_core_N"]
    assert 29 % pm and 29 % pn, "the optimum splits 29 tiles raggedly"
    assert (gx - 1) * pm < 29 <= gx * pm and (gy - 1) * pn < 29 <= gy * pn
    tiles = tiles_by_coord(scene)
    partial = 0
    for j in range(gy):
        for i in range(gx):
            work = tiles[core_coord(st.hardware, i, j)]["work"]
            expected = _share(pm, 29, i) * _share(pn, 29, j)  # M along x, N along y
            assert work == pytest.approx(expected, abs=1e-3), (i, j)
            if i < gx - 1 and j < gy - 1:
                assert work == 1.0, (i, j)
            partial += work < 1
    # the last column and the last row hold the remainders: 29 - (g - 1) * P tiles of P
    last_col = tiles[core_coord(st.hardware, gx - 1, 0)]["work"]
    last_row = tiles[core_coord(st.hardware, 0, gy - 1)]["work"]
    assert last_col == pytest.approx((29 - (gx - 1) * pm) / pm, abs=1e-3) and last_col < 1
    assert last_row == pytest.approx((29 - (gy - 1) * pn) / pn, abs=1e-3) and last_row < 1
    assert partial == gx + gy - 1
    # the cores hold every output tile exactly once
    total = sum(tiles[core_coord(st.hardware, i, j)]["work"] for i in range(gx) for j in range(gy))
    assert total * pm * pn == pytest.approx(29 * 29, abs=gx * gy * 1e-3 * pm * pn)
    # partly working cores are drawn lighter than full ones
    colours = {t["colour"] for t in tiles.values() if t["kind"] == "core" and t["work"] < 1}
    assert colours and not colours & {t["colour"] for t in tiles.values() if t["work"] == 1.0}


def test_a_flattened_layout_gives_every_working_core_a_full_share(ragged):
    scene = scene_of(ragged, ONE_D)
    works = [w for w, k in zip(scene.tiles.data["work"], scene.tiles.data["kind"], strict=True) if k == "core"]
    assert works and set(works) == {1.0}


def test_tiles_carry_every_byte_sent_and_received(ragged):
    st = ragged
    for candidate in (MCAST, SPLIT_K):
        scene = scene_of(st, candidate)
        report = st.traffic()
        assert sum(scene.tiles.data["sent"]) == report.bytes_sent > 0
        assert sum(scene.tiles.data["received"]) == report.bytes_received > 0
        # only routers that send are cores or DRAM endpoints
        tiles = tiles_by_coord(scene)
        assert all(t["kind"] in ("core", "dram") for t in tiles.values() if t["sent"] or t["received"])


def test_links_are_the_reports_links(ragged):
    st = ragged
    for candidate in (MCAST, SPLIT_K):
        scene = scene_of(st, candidate)
        report = st.traffic()
        d = scene.links.data
        assert len(scene.links) == len(report.links) > 0
        assert d["bytes"] == [x.bytes for x in report.links]
        assert d["noc"] == [x.noc for x in report.links]
        assert sum(d["bytes"]) == sum(x.bytes for x in report.links)
        for i, x in enumerate(report.links):
            assert d["utilisation"][i] == pytest.approx(x.utilisation, abs=1e-4)
            assert d["colour"][i] == load_colour(x.utilisation)
            assert (d["x0"][i], d["y0"][i], d["x1"][i], d["y1"][i]) == link_segment(x.noc, x.src, x.dst)
            assert d["label"][i].startswith(f"NoC{x.noc} ")
        assert {n for n in d["noc"]} == {0, 1}


def test_one_tensors_scene_has_only_its_links(ragged):
    st = ragged
    full = scene_of(st, MCAST)
    by_link: dict = defaultdict(int)
    for tensor in st.tensors_moved():
        part = scene_of(st, MCAST, tensor)
        assert part.links.data["bytes"] == [x.bytes for x in st.traffic(tensor).links]
        assert set(part.rects.data["tensor"]) <= {tensor}
        links = part.links.data
        for k in zip(links["noc"], links["x0"], links["y0"], links["bytes"], strict=True):
            by_link[k[:3]] += k[3]
    assert sum(by_link.values()) == sum(full.links.data["bytes"])


def test_dram_columns_one_row_per_channel(ragged):
    st = ragged
    scene = scene_of(st, MCAST)
    report = st.traffic()
    d = scene.dram.data
    assert len(scene.dram) == st.hardware.dram.channels
    assert d["bank"] == list(range(st.hardware.dram.channels))
    assert list(zip(d["x"], d["y"], strict=True)) == dram_endpoints(st.hardware)
    assert d["read"] == [b.bytes_read for b in report.dram]
    assert d["written"] == [b.bytes_written for b in report.dram]
    assert sum(d["read"]) > 0 and sum(d["written"]) > 0


def test_multicast_rectangles_bound_their_sender_and_receivers(ragged):
    st = ragged
    scene = scene_of(st, MCAST)
    d = scene.rects.data
    rects = [{k: d[k][i] for k in d} for i in range(len(scene.rects))]
    multicasts = [t for t in st.transfers() if t.kind == "multicast"]
    assert multicasts and rects

    def inside(r, c) -> bool:
        return abs(c[0] - r["x"]) <= r["width"] / 2 and abs(c[1] - r["y"]) <= r["height"] / 2

    for t in multicasts:
        assert any(r["tensor"] == t.tensor and all(inside(r, c) for c in (t.src, *t.dsts)) for r in rects), t
    for r in rects:
        # tight: the box of some multicast's routers, with a margin under one tile
        members = [t for t in multicasts if t.tensor == r["tensor"] and all(inside(r, c) for c in (t.src, *t.dsts))]
        assert members
        xs = [c[0] for t in members for c in (t.src, *t.dsts)]
        ys = [c[1] for t in members for c in (t.src, *t.dsts)]
        assert r["width"] == pytest.approx(max(xs) - min(xs) + 0.8)
        assert r["height"] == pytest.approx(max(ys) - min(ys) + 0.8)
    # every multicast byte is in one rectangle
    for tensor in {t.tensor for t in multicasts}:
        assert sum(r["bytes"] for r in rects if r["tensor"] == tensor) == sum(
            t.bytes_sent for t in multicasts if t.tensor == tensor
        )


def test_the_bare_chip(ragged):
    hw = ragged.hardware
    scene = grid_scene(hw, None, {}, [], None)
    assert len(scene.tiles) == hw.grid.noc_width * hw.grid.noc_height
    kinds = Counter(scene.tiles.data["kind"])
    assert kinds["core"] == 0 and kinds["idle core"] == hw.grid.cores
    assert len(scene.links) == 0 and len(scene.rects) == 0
    assert len(scene.dram) == hw.dram.channels and set(scene.dram.data["read"]) == {0}


# ---------------------------------------------------------------------------------- link geometry


def _approx(seg):
    return pytest.approx(seg, abs=1e-9)


def test_link_segments_of_the_two_nocs_lie_on_opposite_sides():
    o = LANE_OFFSET
    # horizontal: NoC0 goes right, NoC1 left between the same two routers
    assert link_segment(0, (3, 2), (4, 2)) == _approx((3.22, 2 + o, 3.78, 2 + o))
    assert link_segment(1, (4, 2), (3, 2)) == _approx((3.78, 2 - o, 3.22, 2 - o))
    # vertical: NoC0 goes down, NoC1 up
    assert link_segment(0, (3, 2), (3, 3)) == _approx((3 + o, 2.22, 3 + o, 2.78))
    assert link_segment(1, (3, 3), (3, 2)) == _approx((3 - o, 2.78, 3 - o, 2.22))
    # the two lanes of one router pair never touch
    a, b = link_segment(0, (3, 2), (4, 2)), link_segment(1, (4, 2), (3, 2))
    assert a[1] > 2 > b[1]
    assert a[1] - b[1] == pytest.approx(2 * o)


@pytest.mark.parametrize(
    "noc,src,dst,direction",
    [
        (0, (9, 4), (0, 4), (1, 0)),  # NoC0 leaves the right edge of a 10-wide grid
        (1, (0, 4), (9, 4), (-1, 0)),  # NoC1 leaves the left edge
        (0, (5, 11), (5, 0), (0, 1)),  # NoC0 leaves the bottom of a 12-high grid
        (1, (5, 0), (5, 11), (0, -1)),  # NoC1 leaves the top
    ],
)
def test_a_wrap_around_link_is_a_short_stub_leaving_its_router(noc, src, dst, direction):
    x0, y0, x1, y1 = link_segment(noc, src, dst)
    dx, dy = direction
    length = math.hypot(x1 - x0, y1 - y0)
    assert 0 < length < 1
    assert length == pytest.approx(0.56 * STUB)
    # it points the way the packet leaves, away from the far router
    assert (x1 - x0) * dx + (y1 - y0) * dy == pytest.approx(length)
    # starts just beside the leaving router, in its NoC's lane
    off = LANE_OFFSET if noc == 0 else -LANE_OFFSET
    lane = (0.0, off) if dy == 0 else (off, 0.0)
    assert (x0, y0) == _approx((src[0] + 0.22 * STUB * dx + lane[0], src[1] + 0.22 * STUB * dy + lane[1]))
    assert math.hypot(x1 - dst[0], y1 - dst[1]) > 5


# ---------------------------------------------------------------------------------------- colours


def _luminance(colour: str) -> float:
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_load_colour_runs_dark_to_bright_and_clamps():
    assert load_colour(0.0) != load_colour(1.0)
    assert load_colour(-0.5) == load_colour(0.0)
    assert load_colour(1.0) == load_colour(1.7) == load_colour(100.0)
    steps = [load_colour(u / 10) for u in range(11)]
    lum = [_luminance(c) for c in steps]
    assert lum == sorted(lum) and lum[-1] > lum[0]
    assert all(c in Inferno256 for c in steps)
    # the grid view's colour bar spans exactly the colours links are drawn in
    assert load_colour(0.0) == LINK_PALETTE[0] and load_colour(1.0) == LINK_PALETTE[-1]


def test_the_l1_chart_reaches_its_usable_l1_line() -> None:
    """The dashed usable-L1 line is inside the chart's axis even when the buffers use a small part of it."""
    from loom_explorer.ui.charts import StackedBars

    chart = StackedBars("L1", "bytes")
    chart.update([("selected", [("in0", 1000), ("in1", 3000)])], limit=1_400_000)
    assert chart.limit.visible and chart.limit.location == 1_400_000
    assert chart.value_range.start == 0 and chart.value_range.end >= 1_400_000  # type: ignore[operator]
    chart.update([("selected", [("in0", 5000)])])  # no limit: the bars fill the axis
    assert not chart.limit.visible and 5000 <= chart.value_range.end < 6000
