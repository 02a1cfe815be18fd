"""The collective family's first-principles latency (``families/collective/latency.py``) on hand-computed cases."""

from __future__ import annotations

from fractions import Fraction

import pytest

from loom_explorer.families.collective.latency import (
    MAX_PAGES_PER_PACKET,
    busiest_link_slices,
    collective_latency,
    farthest_hops,
    link_cycles,
    packet_cycles,
    packet_payload_bytes,
    payload_rate,
)
from loom_explorer.hardware.mesh_load import load_mesh, mesh_chip
from loom_explorer.model.collective import CollectiveKind, CollectiveOp, FabricTopology

AG, RS, AR = CollectiveKind.all_gather, CollectiveKind.reduce_scatter, CollectiveKind.all_reduce
LINE, RING = FabricTopology.linear, FabricTopology.ring


def op(
    kind: CollectiveKind, n: int, topology: FabricTopology, slice_bytes: int, links: int = 1, page_bytes: int = 2048
) -> CollectiveOp:
    return CollectiveOp(kind, n, topology, links, slice_bytes, page_bytes)


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


BF16_TILE, BFP8_TILE = 2048, 1088  # bytes of a 32x32 tile (hw/*.yaml tile_bytes)


def test_a_packet_carries_at_most_two_pages() -> None:
    """ttnn's cap of 2 pages per packet: two bfloat16 tiles fill a 4096 B packet, two bfloat8_b tiles make
    2176 B (not the 3 x 1088 = 3264 B that fit); a page larger than the packet is split evenly."""
    eth = load_mesh("galaxy").ethernet
    assert MAX_PAGES_PER_PACKET == 2
    assert packet_payload_bytes(op(RS, 8, RING, 1 << 20, page_bytes=BF16_TILE), eth) == 4096
    assert packet_payload_bytes(op(RS, 8, RING, 1 << 20, page_bytes=BFP8_TILE), eth) == 2176
    assert packet_payload_bytes(op(AG, 2, LINE, 1 << 20, page_bytes=512), eth) == 1024
    assert packet_payload_bytes(op(AG, 2, LINE, 1 << 20, page_bytes=4096), eth) == 4096
    assert packet_payload_bytes(op(AG, 2, LINE, 1 << 20, page_bytes=6000), eth) == 3000  # 2 packets of 3000 B


@pytest.mark.parametrize("name", ["t3000", "galaxy", "p150x4", "p150x8"])
def test_the_two_point_rate_reproduces_both_golden_points(name: str) -> None:
    eth = load_mesh(name).ethernet
    assert eth.fabric_small_packet_bytes is not None and eth.fabric_small_bytes_per_cycle is not None
    assert payload_rate(eth.fabric_packet_bytes, eth) == Fraction(eth.fabric_bytes_per_cycle)
    assert payload_rate(eth.fabric_small_packet_bytes, eth) == Fraction(eth.fabric_small_bytes_per_cycle)
    # between the points the rate lies between them; a packet's time grows with its size
    between = payload_rate(2176, eth)
    assert Fraction(eth.fabric_small_bytes_per_cycle) < between < Fraction(eth.fabric_bytes_per_cycle)
    assert 0 < packet_cycles(16, eth) < packet_cycles(2048, eth) < packet_cycles(4096, eth)


def test_a_galaxy_bfp8_packet_moves_at_the_line_through_the_goldens() -> None:
    """Galaxy goldens (fabric_bandwidth.csv, one link, unicast write): 2048 B at 7.25 B/cycle (282.48 cycles a
    packet, 2162 wire bytes) and 4096 B at 11.77 (348.00 cycles, 4243 wire bytes): b = 65.52 / 2081 cycles per
    wire byte, a = 282.48 - 2162 b; a 2176 B packet (2290 wire bytes) takes a + 2290 b = 286.51 cycles:
    7.595 B/cycle."""
    eth = load_mesh("galaxy").ethernet
    assert (eth.wire_bytes(2048), eth.wire_bytes(4096), eth.wire_bytes(2176)) == (2162, 4243, 2290)
    assert float(packet_cycles(2176, eth)) == pytest.approx(286.51, abs=0.01)
    assert float(payload_rate(2176, eth)) == pytest.approx(7.595, abs=0.001)


def test_without_the_second_point_the_rate_is_the_wire_share_of_one_point() -> None:
    """No small point: ``rate(p) = e * link * p / wire(p)`` with ``e`` the efficiency at the packet size."""
    eth = load_mesh("galaxy").ethernet.model_copy(
        update={"fabric_small_packet_bytes": None, "fabric_small_bytes_per_cycle": None}
    )
    link = Fraction(eth.link_bytes_per_cycle)
    big = eth.fabric_packet_bytes
    e = Fraction(eth.fabric_bytes_per_cycle) / (link * big / eth.wire_bytes(big))
    for p in (16, 1088, 2176, 3264, 4096):
        assert payload_rate(p, eth) == e * link * p / eth.wire_bytes(p)
    # no fixed cost per packet: a packet's time is in proportion to its wire bytes
    assert packet_cycles(1088, eth) / eth.wire_bytes(1088) == packet_cycles(4096, eth) / eth.wire_bytes(4096)
    assert payload_rate(eth.fabric_packet_bytes, eth) == Fraction(eth.fabric_bytes_per_cycle)


def test_bf16_tiles_price_the_same_with_or_without_the_second_point() -> None:
    """bfloat16 tiles travel in full 4096 B packets, the large golden point: the second point does not move
    them (the mesh planner's collectives); bfloat8_b tiles (2176 B packets) are slower with it."""
    mesh = load_mesh("galaxy")
    one_point = mesh.model_copy(
        update={
            "ethernet": mesh.ethernet.model_copy(
                update={"fabric_small_packet_bytes": None, "fabric_small_bytes_per_cycle": None}
            )
        }
    )
    bf16 = op(RS, 8, RING, 64 * BF16_TILE, links=4, page_bytes=BF16_TILE)
    bfp8 = op(RS, 8, RING, 64 * BFP8_TILE, links=4, page_bytes=BFP8_TILE)
    assert link_cycles(bf16, mesh) == link_cycles(bf16, one_point)
    assert link_cycles(bfp8, mesh) > link_cycles(bfp8, one_point)


def test_a_stated_packet_payload_is_the_one_priced() -> None:
    """A run that fixed its packets (a 6,144 B router payload of three bfloat16 pages) is priced with them,
    not with the two-page rule."""
    eth = load_mesh("t3000").ethernet
    stated = CollectiveOp(AG, 8, RING, 1, 1 << 20, BF16_TILE, packet_payload_bytes=6144)
    assert packet_payload_bytes(stated, eth) == 6144
    assert packet_payload_bytes(op(AG, 8, RING, 1 << 20), eth) == 4096


@pytest.mark.parametrize("name", ["n300", "t3000", "galaxy", "p150x4", "p150x8"])
def test_no_packet_crosses_faster_than_its_wire_bytes_at_the_line_rate(name: str) -> None:
    """Beyond the golden points the two-point line would rise more slowly than the wire: the line rate is the
    floor of a packet's time there, and below the larger point (every packet the two-page rule makes) the
    line is above the floor, so nothing priced before moves."""
    eth = load_mesh(name).ethernet
    line = Fraction(eth.link_bytes_per_cycle)
    big = eth.fabric_packet_bytes
    t_big = Fraction(big) / Fraction(eth.fabric_bytes_per_cycle)
    if eth.fabric_small_packet_bytes is None or eth.fabric_small_bytes_per_cycle is None:
        slope, fixed = t_big / eth.wire_bytes(big), Fraction(0)
    else:
        small = eth.fabric_small_packet_bytes
        t_small = Fraction(small) / Fraction(eth.fabric_small_bytes_per_cycle)
        slope = (t_big - t_small) / (eth.wire_bytes(big) - eth.wire_bytes(small))
        fixed = t_small - slope * eth.wire_bytes(small)
    for payload in range(64, 4 * big + 1, 64):
        t = packet_cycles(payload, eth)
        assert t >= eth.wire_bytes(payload) / line, payload
        assert payload_rate(payload, eth) < line
        if payload <= big:
            assert t == fixed + slope * eth.wire_bytes(payload), payload  # the two-point line, as before
