"""What the explorer's mesh section shows of a mesh plan, as plain columns and frames (no widgets).

* :func:`mesh_scene`: the chips as boxes at ``(column, row)`` (row 0 on top, as ttnn's ``MeshShape``
  counts), and both directions of every pair link as two lanes beside the line between the chips (the
  direction of travel on its right), a wrap pair as two stubs leaving the mesh's edge; each lane coloured
  and sized by its bytes over the plan (``ui/mesh_links.py``) against the busiest lane's, with its bytes, busy
  time and collectives for the hover;
* :func:`ops_frame`: one row per op (and the input, when it is converted): the chosen split, the per-chip
  problem, its proven on-chip cycles, the cycles its split is charged (on-chip plus its own collectives:
  a fused all-gather, a distributed norm's stats), the collectives converting its output and their cycles,
  the op's total; ttnn's split and total beside them when it is costed; a last row with the totals. The
  totals are the plan's latency per device: the objective sums exactly these terms (``mesh/joint.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import hypot

import pandas as pd

from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mesh.joint import JointSolution
from loom_explorer.mesh.plan import MeshPlan
from loom_explorer.mesh.splits import ChipProblem
from loom_explorer.ui.mesh_links import DirectedLoad, mesh_chips
from loom_explorer.ui.scene import Columns, load_colour

IDLE_COLOUR = "#c9ced6"
LANE_OFFSET = 0.07  # a lane's distance from the line between two chips' centres
BOX = 0.56  # a chip box's side (chips are 1 apart)
WRAP_STUB = 0.42  # how far a wrap pair's stubs reach past the box
MIN_WIDTH, MAX_WIDTH = 1.5, 10.0  # line widths (screen px) of an idle and of the busiest lane
TOTAL = "total"


@dataclass(frozen=True, slots=True)
class MeshScene:
    chips: Columns  # x, y, label, id, position
    links: Columns  # xs, ys, src, dst, axis, links, bytes, share, busy_us, collectives, colour, width
    rows: int
    columns: int
    max_link_bytes: float


def _lane(x0: float, y0: float, x1: float, y1: float) -> tuple[list[float], list[float]]:
    """A straight lane from chip box to chip box, shifted to the right of its direction."""
    dx, dy = x1 - x0, y1 - y0
    length = hypot(dx, dy)
    ux, uy = dx / length, dy / length
    ox, oy = -uy * LANE_OFFSET, ux * LANE_OFFSET
    start, end = BOX / 2, length - BOX / 2
    return (
        [x0 + ux * start + ox, x0 + ux * end + ox],
        [y0 + uy * start + oy, y0 + uy * end + oy],
    )


def _wrap(x0: float, y0: float, x1: float, y1: float) -> tuple[list[float], list[float]]:
    """A wrap lane: a stub leaving the source's far edge, a break, a stub entering the destination."""
    dx, dy = x0 - x1, y0 - y1  # travel away from the destination, round the wrap
    length = hypot(dx, dy)
    ux, uy = dx / length, dy / length
    ox, oy = -uy * LANE_OFFSET, ux * LANE_OFFSET
    near, far = BOX / 2, BOX / 2 + WRAP_STUB
    nan = float("nan")
    return (
        [x0 + ux * near + ox, x0 + ux * far + ox, nan, x1 - ux * far + ox, x1 - ux * near + ox],
        [y0 + uy * near + oy, y0 + uy * far + oy, nan, y1 - uy * far + oy, y1 - uy * near + oy],
    )


def mesh_scene(mesh: MeshSpec, chip: HardwareSpec, loads: tuple[DirectedLoad, ...], problem: str = "") -> MeshScene:
    """The chips and lanes of ``mesh`` under ``loads`` (module docstring); ``problem``: each chip's work, for
    the chips' hover."""
    cols = mesh.columns.chips
    chips: dict[str, list[object]] = {k: [] for k in ("x", "y", "label", "id", "position", "problem")}
    for c in mesh_chips(mesh):
        for key, value in (
            ("x", c.col),
            ("y", c.row),
            ("label", str(c.id(cols))),
            ("id", c.id(cols)),
            ("position", f"({c.row}, {c.col})"),
            ("problem", problem),
        ):
            chips[key].append(value)
    busiest = max((float(d.link_bytes) for d in loads), default=0.0)
    keys = ("xs", "ys", "src", "dst", "axis", "links", "bytes", "share", "busy_us", "collectives", "colour", "width")
    links: dict[str, list[object]] = {k: [] for k in keys}
    for d in loads:
        draw = _wrap if d.pair.wrap else _lane
        xs, ys = draw(d.src.col, d.src.row, d.dst.col, d.dst.row)
        b = float(d.link_bytes)
        share = b / busiest if busiest else 0.0
        names = [f"{s.collective.label}: {float(s.link_bytes):,.0f} B" for s in d.shares]
        lane: tuple[tuple[str, object], ...] = (
            ("xs", xs),
            ("ys", ys),
            ("src", f"chip {d.src.id(cols)} ({d.src.row}, {d.src.col})"),
            ("dst", f"chip {d.dst.id(cols)} ({d.dst.row}, {d.dst.col})"),
            ("axis", f"{d.pair.axis}{' wrap' if d.pair.wrap else ''}"),
            ("links", d.pair.links),
            ("bytes", b),
            ("share", share),
            ("busy_us", chip.cycles_to_us(d.busy_cycles)),
            ("collectives", "; ".join(names) or "none"),
            ("colour", load_colour(share) if b else IDLE_COLOUR),
            ("width", MIN_WIDTH + (MAX_WIDTH - MIN_WIDTH) * share if b else MIN_WIDTH),
        )
        for name, cell in lane:
            links[name].append(cell)
    return MeshScene(Columns(chips), Columns(links), mesh.rows.chips, cols, busiest)


@dataclass(frozen=True, slots=True)
class OpCost:
    """One op of a solution: its split, what it is charged, the collectives converting its output."""

    op: str
    split: str
    problem: ChipProblem | None
    split_cycles: int
    collectives: tuple[str, ...]
    collective_cycles: int

    @property
    def total_cycles(self) -> int:
        return self.split_cycles + self.collective_cycles


def op_costs(solution: JointSolution) -> tuple[OpCost, ...]:
    """Every op's share of ``solution``'s latency (module docstring); their totals sum to its latency."""
    charged = dict(solution.split_cycles)
    out = []
    for op, s in solution.splits:
        edges = [e for e in solution.edges if e.tensor == op and e.cost.collectives]
        words = tuple(
            f"{c.kind.value} on {c.axis} -> {','.join(e.consumers)}: {c.slice_bytes:,} B/device, "
            f"{c.links}L {c.topology.value}, {c.latency_cycles:,} cyc"
            for e in edges
            for c in e.cost.collectives
        )
        cycles = sum(e.cost.latency_cycles for e in edges)
        if s.problem is None and not edges:
            continue  # the graph's input (or output) without a conversion
        out.append(OpCost(op, s.name, s.problem, charged.get(op, 0), words, cycles))
    return tuple(out)


def ops_frame(ours: MeshPlan, ttnn: MeshPlan | None, chip: HardwareSpec) -> pd.DataFrame:
    """The ops table (module docstring); ``ours.result`` must be a solution."""
    assert isinstance(ours.result, JointSolution)
    onchip = {(s.op, s.split): s.onchip_cycles for s in ours.splits}
    mine = {c.op: c for c in op_costs(ours.result)}
    theirs = {c.op: c for c in op_costs(ttnn.result)} if ttnn and isinstance(ttnn.result, JointSolution) else {}
    names = [op for op, _ in ours.result.splits if op in mine or op in theirs]
    rows = []
    for name in names:
        c = mine.get(name)
        row: dict[str, object] = {"op": name}
        if c is not None:
            cycles = onchip.get((c.op, c.split)) if c.problem is not None else None
            row.update(
                {
                    "split": c.split,
                    "per-chip problem": c.problem.label if c.problem else "",
                    "on-chip cycles": _count(cycles),
                    "split cycles": _count(c.split_cycles if c.problem else None),
                    "collectives after it": "; ".join(c.collectives),
                    "collective cycles": _count(c.collective_cycles),
                    "op us": _us(chip, c.total_cycles),
                }
            )
        if theirs:
            t = theirs.get(name)
            row["ttnn split"] = t.split if t else ""
            row["ttnn us"] = _us(chip, t.total_cycles) if t else ""
        rows.append(row)
    total: dict[str, object] = {
        "op": TOTAL,
        "split": f"view {ours.result.view}",
        "op us": _us(chip, ours.result.latency_cycles),
    }
    if theirs:
        assert ttnn is not None and isinstance(ttnn.result, JointSolution)
        total["ttnn split"] = f"view {ttnn.result.view}"
        total["ttnn us"] = _us(chip, ttnn.result.latency_cycles)
    columns = list(OPS_COLUMNS) + (["ttnn split", "ttnn us"] if theirs else [])
    frame: pd.DataFrame = pd.DataFrame([*rows, total], columns=columns).fillna("")
    return frame


OPS_COLUMNS = (
    "op",
    "split",
    "per-chip problem",
    "on-chip cycles",
    "split cycles",
    "collectives after it",
    "collective cycles",
    "op us",
)


def _count(cycles: int | None) -> str:
    return "" if cycles is None else f"{cycles:,}"


def _us(chip: HardwareSpec, cycles: int) -> str:
    return f"{chip.cycles_to_us(cycles):,.2f}"
