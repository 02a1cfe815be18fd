"""Collective ops across the chips of a mesh: what one is, what its model answers, and the registry.

A collective (all-gather, reduce-scatter, all-reduce) runs over ``ring_size`` chips joined in a line or a
ring (one line of a mesh axis, or a mesh's flat ring), ``num_links`` Ethernet links between neighbours.
Sizes are per device and in bytes: ``slice_bytes`` is one device's share, the all-gather's input and the
reduce-scatter's output, so an all-gather writes ``ring_size * slice_bytes`` per device and a
reduce-scatter reads as many; an all-reduce reads and writes ``ring_size * slice_bytes``.

The model is a plug-in (``loom_explorer/plugins.py``), like the kernel families' models: the collective
family registers one :class:`CollectiveModel` under the entry-point group ``loom_explorer.collective_models``
and :func:`collective_model` returns it, so no core module imports a family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from loom_explorer.errors import LoomError
from loom_explorer.hardware.mesh_schema import MAX_LINKS_PER_PAIR, MAX_MESH_EXTENT, MeshSpec
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.plugins import PluginError, registered

GROUP = "loom_explorer.collective_models"
MAX_RING = MAX_MESH_EXTENT * MAX_MESH_EXTENT  # a flat ring through every chip of the largest mesh


class CollectiveError(LoomError, ValueError):
    """A collective op that cannot run as given; the message names the field."""


class CollectiveKind(str, Enum):
    all_gather = "all_gather"
    reduce_scatter = "reduce_scatter"
    all_reduce = "all_reduce"


class FabricTopology(str, Enum):
    """ttnn's ``Topology``: ``Linear`` (a line, the end chips not linked) or ``Ring``."""

    linear = "linear"
    ring = "ring"


@dataclass(frozen=True, slots=True)
class CollectiveOp:
    """One collective (see the module docstring). ``page_bytes``: the unit a fabric packet carries whole
    (a tile's bytes for a tiled tensor, a row's for a row-major one); ``input_in_dram`` /
    ``output_in_dram``: where the tensors live (DRAM interleaved, or L1); ``packet_payload_bytes``: the
    payload of one fabric packet when the run fixed it (a router's ``max_packet_payload_size_bytes`` and a
    ttnn version's pages per packet, as a source states them), else None: the family's rule for the mesh."""

    kind: CollectiveKind
    ring_size: int
    topology: FabricTopology
    num_links: int
    slice_bytes: int
    page_bytes: int
    input_in_dram: bool = True
    output_in_dram: bool = True
    packet_payload_bytes: int | None = None

    def __post_init__(self) -> None:
        if not 2 <= self.ring_size <= MAX_RING:
            raise CollectiveError(f"ring_size must be 2..{MAX_RING} devices, got {self.ring_size}")
        if self.topology is FabricTopology.ring and self.ring_size < 3:
            raise CollectiveError(f"topology ring needs ring_size >= 3 (2 devices are a line), got {self.ring_size}")
        if not 1 <= self.num_links <= MAX_LINKS_PER_PAIR:
            raise CollectiveError(f"num_links must be 1..{MAX_LINKS_PER_PAIR}, got {self.num_links}")
        if self.slice_bytes <= 0:
            raise CollectiveError(f"slice_bytes must be positive, got {self.slice_bytes}")
        if not 0 < self.page_bytes <= self.slice_bytes:
            raise CollectiveError(f"page_bytes must be 1..slice_bytes ({self.slice_bytes}), got {self.page_bytes}")
        if self.packet_payload_bytes is not None and self.packet_payload_bytes <= 0:
            raise CollectiveError(f"packet_payload_bytes must be positive, got {self.packet_payload_bytes}")


@dataclass(frozen=True, slots=True)
class CollectiveLatency:
    """A collective's time on each device, in cycles of the chips' clock, by term:

    * ``link_cycles``: the busiest directed link's payload over its rate (the transfers' steady state);
    * ``local_cycles``: the on-chip reads, writes and reductions around the transfers, overlapped with them;
    * ``hop_cycles``: the farthest packet's trip, hop by hop (the pipeline's fill);
    * ``fixed_cycles``: the kernels' launch and the barrier handshake across the chips.

    ``total_cycles = fixed + hop + max(link, local)``.
    """

    link_cycles: int
    local_cycles: int
    hop_cycles: int
    fixed_cycles: int

    @property
    def total_cycles(self) -> int:
        return self.fixed_cycles + self.hop_cycles + max(self.link_cycles, self.local_cycles)


@dataclass(frozen=True, slots=True)
class CollectiveModel:
    """A collective family's model: ``latency(op, mesh, chip)``."""

    name: str
    latency: Callable[[CollectiveOp, MeshSpec, HardwareSpec], CollectiveLatency]


def collective_model() -> CollectiveModel:
    """The registered collective model (exactly one may be registered)."""
    models = registered(GROUP, CollectiveModel)
    if len(models) != 1:
        raise PluginError(f"group {GROUP} must hold one collective model, holds {', '.join(models)}")
    return next(iter(models.values()))
