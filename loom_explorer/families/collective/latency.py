"""First-principles time of a collective on a line or ring of chips (``model/collective.py`` states the terms).

With ``N = ring_size`` devices, ``S = slice_bytes`` and ``L = num_links``:

* **Busiest directed link.** ttnn's collectives send both ways. On a line the link into an end chip carries
  every slice of the ``N - 1`` chips behind it (an all-gather's slices flowing out, a reduce-scatter's partial
  sums flowing in): ``N - 1`` slices. On a ring each slice goes half way round each way: ``(N - 1) / 2``
  slices per directed link. An all-reduce is a reduce-scatter then an all-gather: twice that. The slices of
  a link are spread over its ``L`` links: ``link_bytes = slices * S / L``.
* **Packets.** ttnn's CCL writers put at most ``MAX_PAGES_PER_PACKET = 2`` pages in one fabric packet:
  ``num_tiles_to_write_per_packet = min(2, packet_size_bytes / page_size)``, "scatter-write currently only
  supports 2 distinct noc addresses" (tt-metal@ttnn/cpp/ttnn/operations/experimental/ccl/
  reduce_scatter_minimal_async/device/reduce_scatter_minimal_async_program.cpp@00382a5c53107057a648bf4ebddea5f8005916ea;
  the all-gather's, tt-metal@.../all_gather_async/device/all_gather_async_program_minimal_variants.cpp@
  00edc3bfef7044f53a09372555924b6bbd6d9f11, the same). So a packet carries ``min(2, fabric_packet_bytes //
  page_bytes)`` whole pages: two bfloat16 tiles (2 x 2,048 B) fill a 4,096 B packet, two bfloat8_b tiles
  (2 x 1,088 B) make a 2,176 B one. A page larger than a packet takes ``ceil(page / packet)`` packets. The
  cap moves with ttnn: a later all-gather factory allows 4 (tt-metal@.../all_gather_async/device/
  all_gather_async_default_program_factory.cpp@00db5f6bbf497a482edce6c3b890ff740ef5f493, "scatter-write
  currently supports 4 distinct noc addresses"); the model follows the commits above. A run that fixed its
  packets (``CollectiveOp.packet_payload_bytes``: its router's payload setting and its ttnn's cap, as its
  source states them) carries that payload instead.
* **Link rate.** On the wire a payload of ``p`` bytes is ``wire(p) = p + h + ceil((p + h) / max_packet_bytes)
  * packet_overhead_bytes`` bytes (``h = fabric_header_bytes``; ``EthernetSpec.wire_bytes``). The fabric's
  rate is per-packet limited (its goldens move fewer bytes per cycle in smaller packets, more packets per
  second), so one packet takes ``t(p) = a + b * wire(p)`` cycles: a fixed cost ``a`` and a cost ``b`` per wire
  byte. Two measured points, ``(P, R) = (fabric_packet_bytes, fabric_bytes_per_cycle)`` and ``(Q, S) =
  (fabric_small_packet_bytes, fabric_small_bytes_per_cycle)``, give ``t(P) = P / R`` and ``t(Q) = Q / S``, so
  ``b = (t(P) - t(Q)) / (wire(P) - wire(Q))`` and ``a = t(Q) - b * wire(Q)``: the line through them, both
  points reproduced exactly. Without the second point ``a = 0`` and ``b = t(P) / wire(P)``, which is
  ``rate(p) = e * link * p / wire(p)`` with ``e = R / (link * P / wire(P))``: the line rate's share of the
  wire, at the efficiency measured at ``P``. No packet crosses faster than its wire bytes at the line rate,
  so ``t(p)`` is at least ``wire(p) / link_bytes_per_cycle``: the line through the two points rises more
  slowly than the wire beyond them (its slope is fitted between 2,048 and 4,096 B), and without this floor
  a larger packet, such as a run's 6,144 B, would be priced above the line rate. Both golden points are
  below the floor's rate, so they are unchanged. Either way ``rate(p) = p / t(p)`` and ``link_cycles =
  ceil(link_bytes / rate(p))``. Nothing here is fitted to a collective's time.
* **Hops.** The farthest packet crosses ``N - 1`` hops on a line and ``ceil((N - 1) / 2)`` on a ring
  (twice for an all-reduce), each ``hop_latency_cycles``: the pipeline's fill.
* **Local work.** Each device reads its input and writes its output; when a tensor is in DRAM that traffic
  moves at the chip's DRAM rate (``dram.chip_read_bytes_per_cycle``; a collective's workers are few, so the
  rate is an upper bound). A reduce-scatter adds ``N - 1`` partial slices of ``S`` bytes: ``(N - 1) * S /
  page_bytes`` page adds of ``eltwise_tile_cycles`` each, spread over ``L`` links' workers. Local work
  overlaps the transfers: the op takes the longer of the two.
* **Fixed.** The kernels' launch (``compute.kernel_launch_cycles``) and a barrier handshake before the
  first transfer: a round trip over the farthest hops (``2 * hops * hop_latency_cycles``).
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil

from loom_explorer.hardware.mesh_schema import EthernetSpec, MeshSpec
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.collective import CollectiveKind, CollectiveLatency, CollectiveOp, FabricTopology


def busiest_link_slices(op: CollectiveOp) -> Fraction:
    """Slices of ``slice_bytes`` crossing the busiest directed link (before the split over links)."""
    n = op.ring_size
    one = Fraction(n - 1) if op.topology is FabricTopology.linear else Fraction(n - 1, 2)
    return 2 * one if op.kind is CollectiveKind.all_reduce else one


def farthest_hops(op: CollectiveOp) -> int:
    """Hops of the farthest transfer: ``N - 1`` on a line, ``ceil((N - 1) / 2)`` on a ring; twice for an
    all-reduce (its reduce-scatter, then its all-gather)."""
    n = op.ring_size
    one = n - 1 if op.topology is FabricTopology.linear else ceil((n - 1) / 2)
    return 2 * one if op.kind is CollectiveKind.all_reduce else one


MAX_PAGES_PER_PACKET = 2
"""Pages ttnn's CCL writers put in one fabric packet (module docstring, "Packets")."""


def packet_payload_bytes(op: CollectiveOp, eth: EthernetSpec) -> int:
    """Payload of one fabric packet: the op's stated one, else up to ``MAX_PAGES_PER_PACKET`` whole pages that
    fit, at least one (a page larger than a packet split evenly over ``ceil(page / packet)`` packets)."""
    if op.packet_payload_bytes is not None:
        return op.packet_payload_bytes
    if op.page_bytes >= eth.fabric_packet_bytes:
        return ceil(op.page_bytes / ceil(op.page_bytes / eth.fabric_packet_bytes))
    return min(MAX_PAGES_PER_PACKET, eth.fabric_packet_bytes // op.page_bytes) * op.page_bytes


def packet_cycles(payload_bytes: int, eth: EthernetSpec) -> Fraction:
    """Cycles one link takes per packet of ``payload_bytes``: ``a + b * wire(p)`` through the measured points
    (module docstring, "Link rate"; ``a = 0`` when the mesh gives one point only), at least the packet's wire
    bytes at the line rate."""
    big = eth.fabric_packet_bytes
    t_big = Fraction(big) / Fraction(eth.fabric_bytes_per_cycle)
    wire_big = eth.wire_bytes(big)
    if eth.fabric_small_packet_bytes is None or eth.fabric_small_bytes_per_cycle is None:
        per_wire_byte, fixed = t_big / wire_big, Fraction(0)
    else:
        small = eth.fabric_small_packet_bytes
        t_small = Fraction(small) / Fraction(eth.fabric_small_bytes_per_cycle)
        wire_small = eth.wire_bytes(small)
        per_wire_byte = (t_big - t_small) / (wire_big - wire_small)
        fixed = t_small - per_wire_byte * wire_small
    wire = eth.wire_bytes(payload_bytes)
    return max(fixed + per_wire_byte * wire, Fraction(wire) / Fraction(eth.link_bytes_per_cycle))


def payload_rate(payload_bytes: int, eth: EthernetSpec) -> Fraction:
    """Payload bytes per cycle one link moves in one direction with packets of ``payload_bytes``:
    ``p / packet_cycles(p)``."""
    return Fraction(payload_bytes) / packet_cycles(payload_bytes, eth)


def link_cycles(op: CollectiveOp, mesh: MeshSpec) -> int:
    link_bytes = busiest_link_slices(op) * op.slice_bytes / op.num_links
    return ceil(link_bytes / payload_rate(packet_payload_bytes(op, mesh.ethernet), mesh.ethernet))


def local_cycles(op: CollectiveOp, chip: HardwareSpec) -> int:
    n, s = op.ring_size, op.slice_bytes
    read_bytes = s if op.kind is CollectiveKind.all_gather else n * s
    write_bytes = s if op.kind is CollectiveKind.reduce_scatter else n * s
    dram_bytes = read_bytes * op.input_in_dram + write_bytes * op.output_in_dram
    dram = ceil(Fraction(dram_bytes) / Fraction(chip.dram.chip_read_bytes_per_cycle))
    if op.kind is CollectiveKind.all_gather:
        return dram
    adds = ceil((n - 1) * s / op.page_bytes / op.num_links)
    return dram + adds * chip.compute.eltwise_tile_cycles


def collective_latency(op: CollectiveOp, mesh: MeshSpec, chip: HardwareSpec) -> CollectiveLatency:
    """The terms of ``op`` on ``mesh`` (module docstring)."""
    hops = farthest_hops(op) * mesh.ethernet.hop_latency_cycles
    return CollectiveLatency(
        link_cycles=link_cycles(op, mesh),
        local_cycles=local_cycles(op, chip),
        hop_cycles=hops,
        fixed_cycles=chip.compute.kernel_launch_cycles + 2 * hops,
    )
