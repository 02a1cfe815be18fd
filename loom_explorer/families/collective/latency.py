"""First-principles time of a collective on a line or ring of chips (``model/collective.py`` states the terms).

With ``N = ring_size`` devices, ``S = slice_bytes`` and ``L = num_links``:

* **Busiest directed link.** ttnn's collectives send both ways. On a line the link into an end chip carries
  every slice of the ``N - 1`` chips behind it (an all-gather's slices flowing out, a reduce-scatter's partial
  sums flowing in): ``N - 1`` slices. On a ring each slice goes half way round each way: ``(N - 1) / 2``
  slices per directed link. An all-reduce is a reduce-scatter then an all-gather: twice that. The slices of
  a link are spread over its ``L`` links: ``link_bytes = slices * S / L``.
* **Link rate.** A packet carries ``pages_per_packet = max(1, fabric_packet_bytes // page_bytes)`` whole
  pages (a page larger than a packet takes ``ceil(page / packet)`` packets). On the wire a payload of ``p``
  bytes is ``p + fabric_header_bytes`` bytes in ``ceil((p + h) / max_packet_bytes)`` Ethernet frames of
  ``packet_overhead_bytes`` each, so the line moves payload at ``link * p / wire(p)``. The fabric reaches a
  fraction ``e = fabric_bytes_per_cycle / (link * P / wire(P))`` of that at the measured packet size
  ``P = fabric_packet_bytes``; the model keeps ``e`` at every payload:
  ``rate(p) = e * link * p / wire(p)`` and ``link_cycles = ceil(link_bytes / rate(p))``.
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


def packet_payload_bytes(op: CollectiveOp, eth: EthernetSpec) -> int:
    """Payload of one fabric packet: as many whole pages as fit, at least one (split when larger)."""
    if op.page_bytes >= eth.fabric_packet_bytes:
        return ceil(op.page_bytes / ceil(op.page_bytes / eth.fabric_packet_bytes))
    return (eth.fabric_packet_bytes // op.page_bytes) * op.page_bytes


def _wire_bytes(payload_bytes: int, eth: EthernetSpec) -> int:
    framed = payload_bytes + eth.fabric_header_bytes
    return framed + ceil(framed / eth.max_packet_bytes) * eth.packet_overhead_bytes


def payload_rate(payload_bytes: int, eth: EthernetSpec) -> Fraction:
    """Payload bytes per cycle one link moves in one direction with packets of ``payload_bytes``."""
    link = Fraction(eth.link_bytes_per_cycle)

    def ideal(p: int) -> Fraction:
        return link * p / _wire_bytes(p, eth)

    efficiency = Fraction(eth.fabric_bytes_per_cycle) / ideal(eth.fabric_packet_bytes)
    return efficiency * ideal(payload_bytes)


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
