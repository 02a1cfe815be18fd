"""Bytes per directed Ethernet link for the collectives of a mesh plan (``ui/mesh_links.py``): hand-computed
lines and rings, the flat ring's chips, and agreement with the collective model's busiest link."""

from __future__ import annotations

from fractions import Fraction

import pytest

from loom_explorer.hardware.mesh_load import load_mesh, mesh_chip
from loom_explorer.mesh.states import MeshError
from loom_explorer.mesh.transitions import Collective
from loom_explorer.model.collective import CollectiveKind, CollectiveOp, FabricTopology, collective_model
from loom_explorer.ui.mesh_links import Chip, LinkCollective, busy_cycles, line_loads, link_loads, ring_order

AG, RS, AR = CollectiveKind.all_gather, CollectiveKind.reduce_scatter, CollectiveKind.all_reduce
LINE, RING = FabricTopology.linear, FabricTopology.ring
TILE_BYTES = 2048  # a bf16 32 x 32 tile


def _coll(view: str, axis: str, kind: CollectiveKind, topo: FabricTopology, slice_bytes: int, links: int = 1):
    coll = Collective(axis, kind, slice_bytes, links, topo, 0)
    return LinkCollective("t", ("u",), "transition", view, coll, TILE_BYTES)


def test_all_gather_on_a_line_of_4_by_hand() -> None:
    # chips 0-1-2-3, one 2048-B slice each; every slice flows both ways to the line's ends:
    # 0->1 carries chip 0's slice; 1->2 chips 0 and 1's; 2->3 chips 0, 1 and 2's; back the other way likewise
    assert line_loads(4, AG, LINE, 2048) == {
        (0, 1): 2048,
        (1, 2): 4096,
        (2, 3): 6144,
        (3, 2): 2048,
        (2, 1): 4096,
        (1, 0): 6144,
    }


def test_reduce_scatter_mirrors_the_gather_and_all_reduce_is_both() -> None:
    # reduce-scatter: a link carries one partial slice per chip beyond it
    assert line_loads(4, RS, LINE, 100) == {
        (0, 1): 300,
        (1, 2): 200,
        (2, 3): 100,
        (3, 2): 300,
        (2, 1): 200,
        (1, 0): 100,
    }
    assert set(line_loads(4, AR, LINE, 100).values()) == {400}  # n slices on every directed link
    # a ring of 5: each slice half way round each way, 2 slices per directed link, closing link included
    ring = line_loads(5, AG, RING, 100)
    assert len(ring) == 10 and set(ring.values()) == {200} and ring[(4, 0)] == ring[(0, 4)] == 200
    assert set(line_loads(8, AG, RING, 100).values()) == {350}  # the opposite chip: half from each side
    assert set(line_loads(8, AR, RING, 100).values()) == {700}


def test_a_line_of_4_on_a_mesh_maps_onto_its_chips() -> None:
    mesh = load_mesh("p150x4")  # 1 x 4 Blackhole chips, one axis "columns"
    loads = {
        (d.src, d.dst): d for d in link_loads(mesh, mesh_chip(mesh), [_coll("columns", "columns", AG, LINE, 2048)])
    }
    assert {k: int(d.link_bytes) for k, d in loads.items()} == {
        (Chip(0, 0), Chip(0, 1)): 2048,
        (Chip(0, 1), Chip(0, 0)): 6144,
        (Chip(0, 1), Chip(0, 2)): 4096,
        (Chip(0, 2), Chip(0, 1)): 4096,
        (Chip(0, 2), Chip(0, 3)): 6144,
        (Chip(0, 3), Chip(0, 2)): 2048,
        (Chip(0, 3), Chip(0, 0)): 0,  # the axis wraps; a linear collective leaves its closing pair idle
        (Chip(0, 0), Chip(0, 3)): 0,
    }


def test_the_t3000_ring_runs_round_the_perimeter() -> None:
    mesh = load_mesh("t3000")
    order = ring_order(mesh)
    assert order == tuple(Chip(r, c) for r, c in ((0, 0), (0, 1), (0, 2), (0, 3), (1, 3), (1, 2), (1, 1), (1, 0)))
    loads = link_loads(mesh, mesh_chip(mesh), [_coll("ring", "ring", AG, RING, 2048)])
    assert len(loads) == 2 * (4 + 6)  # both directions of 4 rows pairs and 6 columns pairs
    loaded = {(d.src, d.dst) for d in loads if d.link_bytes}
    idle = {(d.src, d.dst) for d in loads if not d.link_bytes}
    assert len(loaded) == 16 and all(d.link_bytes == 7 * 1024 for d in loads if d.link_bytes)  # 3.5 slices
    # the two middle rows pairs are not on the ring
    assert idle == {
        (Chip(0, 1), Chip(1, 1)),
        (Chip(1, 1), Chip(0, 1)),
        (Chip(0, 2), Chip(1, 2)),
        (Chip(1, 2), Chip(0, 2)),
    }


def test_a_2d_axis_runs_on_every_line_and_the_ring_order_of_other_shapes() -> None:
    mesh = load_mesh("t3000")
    loads = link_loads(mesh, mesh_chip(mesh), [_coll("mesh", "rows", AG, LINE, 4096)])
    assert {int(d.link_bytes) for d in loads if d.pair.axis == "rows"} == {4096}  # 4 columns, a pair each
    assert {int(d.link_bytes) for d in loads if d.pair.axis == "columns"} == {0}
    tall = load_mesh("t3000").model_copy(update={"rows": mesh.columns, "columns": mesh.rows})  # 4 x 2
    order = ring_order(tall)
    assert len(set(order)) == 8 and all(
        abs(a.row - b.row) + abs(a.col - b.col) == 1 for a, b in zip(order, order[1:] + order[:1], strict=True)
    )
    odd = mesh.model_copy(
        update={
            "rows": mesh.columns.model_copy(update={"chips": 3}),
            "columns": mesh.columns.model_copy(update={"chips": 3}),
        }
    )
    with pytest.raises(MeshError, match="both odd"):
        ring_order(odd)


@pytest.mark.parametrize(("kind", "topo"), [(AG, LINE), (RS, LINE), (AG, RING), (RS, RING)])
def test_the_busiest_link_is_the_collective_model_s(kind: CollectiveKind, topo: FabricTopology) -> None:
    """The busiest lane's bytes and busy time are the collective family's busiest link and link term."""
    mesh = load_mesh("t3000")
    chip = mesh_chip(mesh)
    slice_bytes, links = 64 * TILE_BYTES, 2
    loads = link_loads(mesh, chip, [_coll("mesh", "columns", kind, topo if topo is LINE else LINE, slice_bytes, links)])
    if topo is RING:
        loads = link_loads(mesh, chip, [_coll("ring", "ring", kind, RING, slice_bytes, 1)])
        links = 1
    n = 4 if topo is LINE else 8
    busiest = max(loads, key=lambda d: d.link_bytes)
    slices = Fraction(n - 1) if topo is LINE else Fraction(n - 1, 2)
    assert busiest.link_bytes == slices * slice_bytes
    op = CollectiveOp(kind, n, topo, links, slice_bytes, TILE_BYTES)
    assert busiest.busy_cycles == collective_model().latency(op, mesh, chip).link_cycles
    assert busy_cycles(mesh, chip, Fraction(0), TILE_BYTES) == 0


def test_a_slice_below_a_page_moves_a_page_and_the_label_reads_the_collective() -> None:
    coll = _coll("ring", "ring", AG, RING, 100, links=2)
    assert coll.collective.slice_bytes == 100 and coll.slice_bytes == TILE_BYTES  # one page on the wire
    assert coll.label == f"t -> u: all_gather on ring, {TILE_BYTES:,} B/device, 2L ring"
