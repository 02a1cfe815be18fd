"""What the grid view draws, as plain columns (no Bokeh here): tiles, DRAM endpoints, multicast
rectangles and NoC links, all in the hardware file's NoC coordinates.

* Every router of the ``noc_width x noc_height`` NoC grid is a tile: a compute core (idle or working), a
  DRAM endpoint, or another tile (Ethernet, PCIe, ARC, harvested).
* A working core's ``work`` is the share of a full per-core block it holds (1.0 everywhere except the
  last row/column of a ragged contraction, where it is ``min(P, E - i*P) / P`` along each axis with
  ``E`` tiles of the dimension and ``P = per_core_<dim>``); layouts without per-core extents in tiles
  (attention, flattened 1-D) give every working core 1.0.
* A link ``a -> b`` of NoC ``n`` is drawn beside the line between the two routers, NoC0 on one side and
  NoC1 on the other (two lanes), so both directions stay visible; a wrap-around link (the torus edge) is
  drawn as a stub leaving ``a`` towards the chip edge. Colour follows utilisation over the predicted run.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bokeh.palettes import Inferno256

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Axis
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.noc.graph import Coord, core_coord, dram_endpoints
from loom_explorer.traffic.loads import TrafficReport
from loom_explorer.traffic.transfers import Transfer, used_cores

if TYPE_CHECKING:
    from bokeh.models.sources import DataDict

LANE_OFFSET = 0.17  # NoC0 lane on the +offset side of a link, NoC1 on the -offset side (tile pitch 1)
STUB = 0.45  # length of a wrap-around link's stub


@dataclass(frozen=True, slots=True)
class Columns:
    """Equal-length columns keyed by name (a Bokeh ColumnDataSource's ``data``)."""

    data: dict[str, list[object]]

    def __len__(self) -> int:
        return len(next(iter(self.data.values()), []))

    def source_data(self) -> DataDict:
        """The columns as a ColumnDataSource's ``data`` (a new dict holding the same lists)."""
        return dict(self.data)


@dataclass(frozen=True, slots=True)
class GridScene:
    tiles: Columns  # x, y, kind, label, work, colour, received, sent
    dram: Columns  # x, y, bank, read, written
    rects: Columns  # x, y (centre), width, height, tensor, bytes
    links: Columns  # x0, y0, x1, y1, noc, bytes, utilisation, colour, label
    width: int
    height: int


def load_colour(utilisation: float) -> str:
    """Inferno from dark (idle) to bright (the busiest link's share of the predicted run; 1.0 = saturated)."""
    idx = round(min(max(utilisation, 0.0), 1.0) * 200) + 40
    return Inferno256[min(idx, 255)]


def core_work(schedule: SymbolicSchedule, values: dict[str, int], pos: tuple[int, int]) -> float:
    """Share of a full per-core block held by the core at grid position ``pos`` (module docstring)."""
    share = 1.0
    along: tuple[tuple[Axis, int], ...] = (("x", pos[0]), ("y", pos[1]))
    for axis, index in along:
        dims = schedule.candidate.dims_on(axis)
        if len(dims) != 1 or f"per_core_{dims[0]}" not in values:
            continue
        dim = dims[0]
        if schedule.problem.program.dim(dim).tile == 1:
            continue
        per = values[f"per_core_{dim}"]
        extent = schedule.problem.tiles(dim)
        share *= max(0, min(per, extent - index * per)) / per
    return share


def _tiles(
    hw: HardwareSpec, schedule: SymbolicSchedule | None, values: dict[str, int], transfers: list[Transfer]
) -> Columns:
    received: dict[Coord, int] = defaultdict(int)
    sent: dict[Coord, int] = defaultdict(int)
    for t in transfers:
        sent[t.src] += t.bytes_sent
        for d in t.dsts:
            received[d] += t.bytes * t.count
    cores = {core_coord(hw, i, j): (i, j) for j in range(hw.grid.rows) for i in range(hw.grid.columns)}
    working = set(used_cores(schedule, values)) if schedule is not None and values else set()
    banks = {c: k for k, c in enumerate(dram_endpoints(hw))}
    dram_tiles = {(e.x, e.y): e.channel for e in hw.dram.endpoints}
    cols: dict[str, list[object]] = {k: [] for k in ("x", "y", "kind", "label", "work", "colour", "received", "sent")}
    for y in range(hw.grid.noc_height):
        for x in range(hw.grid.noc_width):
            pos = cores.get((x, y))
            if pos is not None:
                work = core_work(schedule, values, pos) if pos in working and schedule is not None else 0.0
                kind = "core" if work > 0 else "idle core"
                label = f"core ({pos[0]}, {pos[1]}) at NoC ({x}, {y})"
                colour = "#a9c8ee" if work >= 1 else ("#d9e7f8" if work > 0 else "#eceef1")
            elif (x, y) in dram_tiles:
                work, kind, colour = 0.0, "dram", "#e2c46b" if (x, y) in banks else "#f1e4b5"
                label = f"DRAM channel {dram_tiles[(x, y)]} endpoint at NoC ({x}, {y})"
            else:
                work, kind, colour, label = 0.0, "other", "#f6f7f8", f"router ({x}, {y})"
            for key, value in (
                ("x", x),
                ("y", y),
                ("kind", kind),
                ("label", label),
                ("work", round(work, 3)),
                ("colour", colour),
                ("received", received.get((x, y), 0)),
                ("sent", sent.get((x, y), 0)),
            ):
                cols[key].append(value)
    return Columns(cols)


def _dram(hw: HardwareSpec, report: TrafficReport | None) -> Columns:
    eps = dram_endpoints(hw)
    loads = {b.bank: b for b in report.dram} if report else {}
    cols: dict[str, list[object]] = {"x": [], "y": [], "bank": [], "read": [], "written": []}
    for bank, (x, y) in enumerate(eps):
        b = loads.get(bank)
        for key, value in (
            ("x", x),
            ("y", y),
            ("bank", bank),
            ("read", b.bytes_read if b else 0),
            ("written", b.bytes_written if b else 0),
        ):
            cols[key].append(value)
    return Columns(cols)


def _rects(transfers: list[Transfer]) -> Columns:
    """One rectangle per distinct (tensor, bounding box of a multicast's destinations and sender)."""
    boxes: dict[tuple[str, int, int, int, int], int] = defaultdict(int)
    for t in transfers:
        if t.kind != "multicast":
            continue
        xs = [c[0] for c in (t.src, *t.dsts)]
        ys = [c[1] for c in (t.src, *t.dsts)]
        boxes[(t.tensor, min(xs), min(ys), max(xs), max(ys))] += t.bytes_sent
    cols: dict[str, list[object]] = {k: [] for k in ("x", "y", "width", "height", "tensor", "bytes")}
    for (tensor, x0, y0, x1, y1), nbytes in boxes.items():
        for key, value in (
            ("x", (x0 + x1) / 2),
            ("y", (y0 + y1) / 2),
            ("width", x1 - x0 + 0.8),
            ("height", y1 - y0 + 0.8),
            ("tensor", tensor),
            ("bytes", nbytes),
        ):
            cols[key].append(value)
    return Columns(cols)


def link_segment(noc: int, src: Coord, dst: Coord) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) of the drawn link: beside the router-to-router line, in its NoC's lane."""
    (ax, ay), (bx, by) = src, dst
    dx, dy = bx - ax, by - ay
    if abs(dx) > 1 or abs(dy) > 1:  # wrap-around: a stub from src towards the edge it leaves by
        dx = -1 if dx > 1 else (1 if dx < -1 else dx)
        dy = -1 if dy > 1 else (1 if dy < -1 else dy)
        tx, ty = ax + STUB * dx, ay + STUB * dy
    else:
        tx, ty = bx, by
    off = LANE_OFFSET if noc == 0 else -LANE_OFFSET
    ox, oy = (0.0, off) if dy == 0 else (off, 0.0)
    # leave a little gap at both routers so that arrows of consecutive links stay apart
    sx, sy = ax + 0.22 * (tx - ax), ay + 0.22 * (ty - ay)
    ex, ey = ax + 0.78 * (tx - ax), ay + 0.78 * (ty - ay)
    return sx + ox, sy + oy, ex + ox, ey + oy


def _links(report: TrafficReport | None) -> Columns:
    cols: dict[str, list[object]] = {
        k: [] for k in ("x0", "y0", "x1", "y1", "noc", "bytes", "utilisation", "colour", "label")
    }
    for link in report.links if report else ():
        x0, y0, x1, y1 = link_segment(link.noc, link.src, link.dst)
        for key, value in (
            ("x0", x0),
            ("y0", y0),
            ("x1", x1),
            ("y1", y1),
            ("noc", link.noc),
            ("bytes", link.bytes),
            ("utilisation", round(link.utilisation, 4)),
            ("colour", load_colour(link.utilisation)),
            ("label", f"NoC{link.noc} {link.src} -> {link.dst}"),
        ):
            cols[key].append(value)
    return Columns(cols)


def grid_scene(
    hw: HardwareSpec,
    schedule: SymbolicSchedule | None,
    values: dict[str, int],
    transfers: list[Transfer],
    report: TrafficReport | None,
) -> GridScene:
    """Everything the grid view draws for one schedule (``schedule=None``: the bare chip).

    ``transfers`` and ``report`` may be one tensor's only (the view's operand filter)."""
    return GridScene(
        tiles=_tiles(hw, schedule, values, transfers),
        dram=_dram(hw, report),
        rects=_rects(transfers),
        links=_links(report),
        width=hw.grid.noc_width,
        height=hw.grid.noc_height,
    )
