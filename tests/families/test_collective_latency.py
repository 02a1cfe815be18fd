"""The collective family's first-principles latency (``families/collective/latency.py``) on hand-computed cases."""

from __future__ import annotations

from fractions import Fraction

import pytest

from loom_explorer.families.collective.latency import (
    busiest_link_slices,
    collective_latency,
    farthest_hops,
    link_cycles,
    payload_rate,
)
from loom_explorer.hardware.mesh_load import load_mesh, mesh_chip
from loom_explorer.model.collective import CollectiveKind, CollectiveOp, FabricTopology

AG, RS, AR = CollectiveKind.all_gather, CollectiveKind.reduce_scatter, CollectiveKind.all_reduce
LINE, RING = FabricTopology.linear, FabricTopology.ring


def op(kind: CollectiveKind, n: int, topology: FabricTopology, slice_bytes: int, links: int = 1) -> CollectiveOp:
    return CollectiveOp(kind, n, topology, links, slice_bytes, 2048)


def test_line_of_two_moves_one_slice_one_hop() -> None:
    one = op(AG, 2, LINE, 4096)
    assert busiest_link_slices(one) == 1
    assert farthest_hops(one) == 1


def test_ring_of_eight_moves_half_the_slices_each_way() -> None:
    eight = op(RS, 8, RING, 4096)
    assert busiest_link_slices(eight) == Fraction(7, 2)
    assert farthest_hops(eight) == 4  # ceil(7 / 2)


@pytest.mark.parametrize(("n", "topology"), [(2, LINE), (4, LINE), (8, RING), (5, RING)])
def test_all_reduce_is_a_reduce_scatter_then_an_all_gather(n: int, topology: FabricTopology) -> None:
    rs, ag, ar = (op(k, n, topology, 8192) for k in (RS, AG, AR))
    assert busiest_link_slices(ar) == busiest_link_slices(rs) + busiest_link_slices(ag)
    assert farthest_hops(ar) == farthest_hops(rs) + farthest_hops(ag)


def test_fabric_packets_move_at_the_golden_rate() -> None:
    """At the mesh's fabric packet size the rate is the measured fabric rate: a 4096 B packet of two 2048 B
    tiles on a T3000 link moves 11.78 B/cycle, so a line of 2 moving 117,800 B over one link takes 10,000
    cycles; over 2 links half."""
    mesh = load_mesh("t3000")
    eth = mesh.ethernet
    assert float(payload_rate(eth.fabric_packet_bytes, eth)) == pytest.approx(11.78, rel=1e-12)
    assert link_cycles(op(AG, 2, LINE, 117_800), mesh) in (10_000, 10_001)  # ceil of 117800 / 11.78
    assert link_cycles(op(AG, 2, LINE, 117_800, links=2), mesh) in (5_000, 5_001)
    # a smaller page packs fewer payload bytes per frame: slower than the golden rate
    assert payload_rate(1088 * 3, eth) < payload_rate(eth.fabric_packet_bytes, eth)


def test_total_is_fixed_hops_and_the_longer_of_link_and_local() -> None:
    mesh = load_mesh("t3000")
    chip = mesh_chip(mesh)
    lat = collective_latency(op(AG, 8, RING, 1 << 20), mesh, chip)
    hop = mesh.ethernet.hop_latency_cycles
    assert lat.hop_cycles == 4 * hop
    assert lat.fixed_cycles == chip.compute.kernel_launch_cycles + 2 * 4 * hop
    assert lat.total_cycles == lat.fixed_cycles + lat.hop_cycles + max(lat.link_cycles, lat.local_cycles)
