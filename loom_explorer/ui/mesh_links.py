"""Bytes on every Ethernet link of a mesh, per direction, for the collectives of a mesh plan (the explorer's
mesh view, ``ui/mesh_page.py``).

**Chips.** Chip ``(r, c)`` of a ``rows x columns`` mesh (``MeshSpec``) has id ``r * columns + c`` (ttnn's
``MeshDevice`` numbers its devices row by row). A **pair link** joins two neighbouring chips: along the
``rows`` axis ``(r, c) - (r + 1, c)``, along ``columns`` ``(r, c) - (r, c + 1)``, each ``links`` fabric links
(the axis' ``links``), and the wrap pair of an axis that ``wraps``.

**Lines.** A collective along one axis of a view runs on every line of that axis at once:

* axis ``rows`` (of the ``mesh`` view, or the one-axis view ``rows``): one line per column, ``(0, c) ...
  (R - 1, c)``; axis ``columns``: one line per row;
* the ``ring`` view (a ``flat_ring`` mesh): one line through every chip in the ring's order: row 0 left to
  right, then the other rows back and forth over columns ``1 .. C - 1``, then column 0 back up (with an
  even number of rows; the transpose otherwise). On a 2 x C mesh (a T3000) this is the only ring through
  every chip along neighbour links: the perimeter.

``topology=ring`` closes the line with the link from its last chip back to its first (the axis' wrap pair,
or the flat ring's last hop); ``linear`` leaves that link out.

**Bytes per directed link** of one collective, ``n`` chips on the line, ``S`` its ``slice_bytes``, link
``i -> i + 1`` ("forward") and ``i + 1 -> i`` ("back"), positions ``0 .. n - 1``:

* all-gather, linear: forward ``(i + 1) S``, back ``(n - 1 - i) S``: every slice flows both ways from its
  chip to the line's two ends;
* reduce-scatter, linear: forward ``(n - 1 - i) S``, back ``(i + 1) S``: each chip's output slice gathers
  its partial sums from both sides, reduced at every hop, so a link carries one slice per chip beyond it;
* ring: each slice (or partial sum) goes half way round each way, ``(n - 1) / 2 * S`` on every directed
  link (the opposite chip of an even ring gets half from each side);
* all-reduce: a reduce-scatter then an all-gather, the sum: ``n S`` per directed link on a line,
  ``(n - 1) S`` on a ring.

These are the routes the collective family's busiest-link term counts (``families/collective/latency.py``):
its busiest link is ``n - 1`` slices on a line and ``(n - 1) / 2`` on a ring, the largest here. For an
all-reduce on a line the family adds the two phases' busiest links (``2 (n - 1)``: the phases run one after
the other, each held by its own busiest link) while each link carries ``n S`` in all.

**Busy time** of a link for one collective: its bytes spread over the collective's ``num_links`` links, each
moved at the registered collective model's payload rate: the link term (``link_cycles``) that model gives a
two-chip linear all-gather of one slice of those bytes (one hop, one link: exactly those bytes on one
link). The collectives run one after another, so a link's busy time over the plan is the sum.

The plan's collectives (:func:`plan_collectives`): each transition's (``JointSolution.edges``), the all-gather
inside a fused all-gather + matmul split (``agN``: its input's slices along the fused axis, at the input
tensor's config: ``splits.fused_gather``, as the planner costs it) and the all-gathers a split runs inside itself
(``splits.split_gathers``: the distributed norm's stats, a ``seq`` attention split's two chunk gathers).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from math import ceil

from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mesh.graph import OpGraph
from loom_explorer.mesh.joint import JointSolution, JointTables
from loom_explorer.mesh.splits import fused_gather, split_gathers
from loom_explorer.mesh.states import MeshError
from loom_explorer.mesh.transitions import Collective
from loom_explorer.model.collective import CollectiveKind, CollectiveOp, FabricTopology, collective_model

ROWS, COLUMNS, RING = "rows", "columns", "ring"


@dataclass(frozen=True, slots=True, order=True)
class Chip:
    """Chip ``(row, col)`` of the mesh."""

    row: int
    col: int

    def id(self, columns: int) -> int:
        """ttnn's device id: row by row."""
        return self.row * columns + self.col


@dataclass(frozen=True, slots=True)
class PairLink:
    """Two neighbouring chips joined by ``links`` fabric links, along ``axis``; ``wrap``: the axis' closing pair."""

    a: Chip
    b: Chip
    axis: str
    links: int
    wrap: bool = False

    def joins(self, x: Chip, y: Chip) -> bool:
        return {x, y} == {self.a, self.b}


@dataclass(frozen=True, slots=True)
class LinkCollective:
    """One collective of a plan: the ``collective`` itself (``transitions.Collective``: its axis, kind, slice,
    ``num_links``, ``topology`` and latency, the collective model's), which tensor it moves (to which ops),
    why (``transition``, ``fused into OP``, ``stats of OP``, ``chunks i of OP``), on which view, and the
    tensor's ``page_bytes``."""

    tensor: str
    consumers: tuple[str, ...]
    why: str
    view: str
    collective: Collective
    page_bytes: int

    @property
    def slice_bytes(self) -> int:
        """Bytes each device's slice puts on the links: the collective's, a page at least (a slice smaller than
        a page moves one page, as ``transitions.collective_cycles`` prices it)."""
        return max(self.collective.slice_bytes, self.page_bytes)

    @property
    def label(self) -> str:
        c = self.collective
        to = f" -> {','.join(self.consumers)}" if self.consumers else ""
        why = "" if self.why == "transition" else f" ({self.why})"
        return (
            f"{self.tensor}{to}: {c.kind.value} on {c.axis}{why}, {self.slice_bytes:,} B/device, "
            f"{c.links}L {c.topology.value}"
        )


@dataclass(frozen=True, slots=True)
class LinkShare:
    """One collective's part of one directed link: its bytes and the link's busy cycles for them."""

    collective: LinkCollective
    link_bytes: Fraction
    busy_cycles: int


@dataclass(frozen=True, slots=True)
class DirectedLoad:
    """One direction of a pair link (``src -> dst``) and every collective's share of it."""

    src: Chip
    dst: Chip
    pair: PairLink
    shares: tuple[LinkShare, ...]

    @property
    def link_bytes(self) -> Fraction:
        return sum((s.link_bytes for s in self.shares), Fraction(0))

    @property
    def busy_cycles(self) -> int:
        return sum(s.busy_cycles for s in self.shares)


def mesh_chips(mesh: MeshSpec) -> tuple[Chip, ...]:
    return tuple(Chip(r, c) for r in range(mesh.rows.chips) for c in range(mesh.columns.chips))


def pair_links(mesh: MeshSpec) -> tuple[PairLink, ...]:
    """Every neighbouring pair of chips (module docstring), the wrap pairs last."""
    rows, cols = mesh.rows.chips, mesh.columns.chips
    out = [PairLink(Chip(r, c), Chip(r + 1, c), ROWS, mesh.rows.links) for r in range(rows - 1) for c in range(cols)]
    out += [
        PairLink(Chip(r, c), Chip(r, c + 1), COLUMNS, mesh.columns.links) for r in range(rows) for c in range(cols - 1)
    ]
    if mesh.rows.wraps:
        out += [PairLink(Chip(rows - 1, c), Chip(0, c), ROWS, mesh.rows.links, wrap=True) for c in range(cols)]
    if mesh.columns.wraps:
        out += [PairLink(Chip(r, cols - 1), Chip(r, 0), COLUMNS, mesh.columns.links, wrap=True) for r in range(rows)]
    return tuple(out)


def ring_order(mesh: MeshSpec) -> tuple[Chip, ...]:
    """The flat ring's chips in order (module docstring); MeshError when no such ring runs along neighbours."""
    rows, cols = mesh.rows.chips, mesh.columns.chips

    def snake(r_n: int, c_n: int) -> list[tuple[int, int]]:
        order = [(0, c) for c in range(c_n)]
        for r in range(1, r_n):
            span = range(c_n - 1, 0, -1) if r % 2 else range(1, c_n)
            order += [(r, c) for c in span]
        return order + [(r, 0) for r in range(r_n - 1, 0, -1)]

    if rows < 2 or cols < 2:
        raise MeshError(f"mesh {mesh.name}: a flat ring needs two axes of at least 2 chips")
    if rows % 2 == 0:
        return tuple(Chip(r, c) for r, c in snake(rows, cols))
    if cols % 2 == 0:
        return tuple(Chip(r, c) for c, r in snake(cols, rows))
    raise MeshError(f"mesh {mesh.name}: {rows} x {cols} chips (both odd) have no ring along neighbour links")


def axis_lines(mesh: MeshSpec, view: str, axis: str) -> tuple[tuple[Chip, ...], ...]:
    """The lines of chips a collective along ``axis`` of ``view`` runs on (module docstring)."""
    rows, cols = mesh.rows.chips, mesh.columns.chips
    if view == RING or axis == RING:
        return (ring_order(mesh),)
    if axis == ROWS:
        return tuple(tuple(Chip(r, c) for r in range(rows)) for c in range(cols))
    if axis == COLUMNS:
        return tuple(tuple(Chip(r, c) for c in range(cols)) for r in range(rows))
    raise MeshError(f"view {view!r} has no axis {axis!r} on mesh {mesh.name}")


def line_loads(
    n: int, kind: CollectiveKind, topology: FabricTopology, slice_bytes: int
) -> dict[tuple[int, int], Fraction]:
    """Bytes per directed link ``(i, j)`` (positions on a line of ``n`` chips, ``j = i +- 1``, modulo ``n`` for
    the ring's closing link) of one collective (module docstring). Links carrying nothing are left out."""
    s = Fraction(slice_bytes)
    out: dict[tuple[int, int], Fraction] = {}
    if topology is FabricTopology.ring:
        each = s * (n - 1) / 2 * (2 if kind is CollectiveKind.all_reduce else 1)
        for i in range(n):
            out[(i, (i + 1) % n)] = out[((i + 1) % n, i)] = each
        return out
    for i in range(n - 1):
        gather_fwd, gather_back = (i + 1) * s, (n - 1 - i) * s
        if kind is CollectiveKind.all_gather:
            fwd, back = gather_fwd, gather_back
        elif kind is CollectiveKind.reduce_scatter:
            fwd, back = gather_back, gather_fwd
        else:  # all-reduce: the reduce-scatter, then the all-gather
            fwd = back = gather_fwd + gather_back
        out[(i, i + 1)], out[(i + 1, i)] = fwd, back
    return out


def busy_cycles(mesh: MeshSpec, chip: HardwareSpec, bytes_per_link: Fraction, page_bytes: int) -> int:
    """Cycles one link takes to move ``bytes_per_link`` at the collective model's payload rate (module docstring)."""
    payload = ceil(bytes_per_link)
    if payload <= 0:
        return 0
    one_hop = CollectiveOp(CollectiveKind.all_gather, 2, FabricTopology.linear, 1, payload, min(page_bytes, payload))
    return collective_model().latency(one_hop, mesh, chip).link_cycles


def link_loads(mesh: MeshSpec, chip: HardwareSpec, collectives: Iterable[LinkCollective]) -> tuple[DirectedLoad, ...]:
    """Both directions of every pair link of ``mesh`` with each collective's share (module docstring)."""
    pairs = pair_links(mesh)
    shares: dict[tuple[Chip, Chip], list[LinkShare]] = {}
    for coll in collectives:
        c = coll.collective
        for line in axis_lines(mesh, coll.view, c.axis):
            n = len(line)
            if c.topology is FabricTopology.ring and n < 3:
                raise MeshError(f"{coll.label}: a ring needs 3 chips, the line has {n}")
            for (i, j), b in line_loads(n, c.kind, c.topology, coll.slice_bytes).items():
                src, dst = line[i], line[j]
                if not any(p.joins(src, dst) for p in pairs):
                    raise MeshError(f"{coll.label}: chips {src} and {dst} are not joined by a link of {mesh.name}")
                cycles = busy_cycles(mesh, chip, b / c.links, coll.page_bytes)
                shares.setdefault((src, dst), []).append(LinkShare(coll, b, cycles))
    out = []
    for p in pairs:
        for src, dst in ((p.a, p.b), (p.b, p.a)):
            out.append(DirectedLoad(src, dst, p, tuple(shares.get((src, dst), ()))))
    return tuple(out)


def plan_collectives(tables: JointTables, solution: JointSolution) -> tuple[LinkCollective, ...]:
    """Every collective the plan runs, in graph order: transitions, fused gathers, norm stats (module docstring)."""
    graph: OpGraph = tables.graph
    mesh, chip = tables.mesh, tables.chip
    configs = dict(solution.configs)
    chosen = dict(solution.splits)
    out: list[LinkCollective] = []
    for op in graph.ops:
        s = chosen.get(op.name)
        if s is None or s.problem is None:
            continue
        view = tables.view(s.view)
        if s.fused_axis is not None:
            tensor = op.inputs[0]
            f = fused_gather(mesh, chip, graph, s, view, configs[tensor].axes[s.fused_axis])
            gather = Collective(
                f.axis.name, CollectiveKind.all_gather, f.slice_bytes, f.config.links, f.config.topology,
                f.latency_cycles,
            )  # fmt: skip
            out.append(LinkCollective(tensor, (op.name,), f"fused into {op.name}", view.name, gather, f.page_bytes))
        for g in split_gathers(op, view, s.roles, s.output):
            own = g.collective(mesh, chip)
            out.append(LinkCollective(op.name, (op.name,), f"{g.what} of {op.name}", view.name, own, g.page_bytes))
    for e in solution.edges:
        page = graph.op(e.tensor).output.page_bytes
        out += [LinkCollective(e.tensor, e.consumers, "transition", e.src.view, c, page) for c in e.cost.collectives]
    order = {o.name: i for i, o in enumerate(graph.ops)}
    return tuple(sorted(out, key=lambda c: order.get(c.tensor, 0)))
