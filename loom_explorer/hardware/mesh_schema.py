"""Pydantic schema of a mesh description (``hw/meshes/*.yaml``): chips joined by Ethernet.

A mesh is ``rows x columns`` chips of one shipped chip description (``chip``: a ``hw/*.yaml`` name), joined
along both axes by Ethernet links. ttnn names the axes of a ``MeshDevice`` of shape ``(rows, columns)`` by
``cluster_axis``: 0 runs down a column (``rows`` chips), 1 along a row (``columns`` chips); a collective on
``cluster_axis=a`` runs over the ``axis(a).chips`` chips of one line of that axis.

Per axis (:class:`MeshAxisSpec`):

* ``links``: Ethernet links joining each neighbouring pair of chips along the axis that the fabric (and so
  ttnn's collectives) can use; a pair joined by ``links`` links moves at most ``links`` times one link's
  rate in each direction;
* ``wraps``: the axis' two end chips are joined too (``links`` links), so a ring (ttnn ``Topology::Ring``)
  runs along it; without it only a line (``Topology::Linear``) does;
* ``dispatch_links``: links per pair that exist but carry fast dispatch to a chip without its own PCIe
  (an n300's second chip), not the fabric: they are not in ``links`` and no collective uses them.

``flat_ring``: the links also close one ring through every chip (a T3000's 2 x 4 chips snake into a ring of
8, which ttnn uses when it opens the mesh as ``1 x 8``); the ring's hops have the smaller axis' ``links``.

Per link (:class:`EthernetSpec`), all in the chips' clock (bytes per cycle = GB/s / clock GHz):

* ``link_bytes_per_cycle``: the line rate per direction (Wormhole: 100 Gb/s), headers included;
* ``max_packet_bytes`` / ``packet_overhead_bytes``: the Ethernet frame's payload limit and per-frame bytes
  (header, CRC): a payload of ``p`` bytes takes ``ceil(p / max_packet_bytes)`` frames;
* ``fabric_packet_bytes`` / ``fabric_header_bytes``: the payload a fabric packet carries as ttnn's
  collectives send it and the fabric's routing header per packet;
* ``fabric_bytes_per_cycle``: the measured payload rate of one link in one direction through the fabric
  (unicast writes of ``fabric_packet_bytes`` packets), the rate every first-principles collective time
  starts from; ``hop_latency_cycles``: one packet's time through one chip-to-chip hop (router to router).
* ``fabric_small_packet_bytes`` / ``fabric_small_bytes_per_cycle`` (optional, both or neither): a second
  measured point of the same benchmark at a smaller packet (the goldens' 2,048 B row). The fabric's rate is
  per packet limited, so the two points fix a per-packet cost and a per-wire-byte cost
  (``families/collective/latency.py``). Without them the model keeps one point and prices every packet size
  in proportion to its wire bytes (no per-packet cost): a mesh whose golden has no second packet size
  leaves them out. Given, the small packet is below ``fabric_packet_bytes``, its rate within the line rate,
  and the two points' per-packet times ``t = packet / rate`` must give a line ``t = a + b * wire`` with
  ``a >= 0`` and ``b >= 0`` (a larger packet never takes less time; a packet never takes less than its
  wire bytes' share): anything else is refused, naming ``fabric_small_bytes_per_cycle``.

Bounds as in ``schema.py``: extents at most 64 chips per axis, 16 links per pair (a Wormhole chip has 16
Ethernet cores, a Blackhole chip 14), rates and sizes as the chip schema's.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from loom_explorer.hardware.schema import Bytes, Cycles, Rate, _Frozen

MESH_SCHEMA_VERSION = 1
MAX_MESH_EXTENT = 64
MAX_LINKS_PER_PAIR = 16

Chips = Annotated[int, Field(ge=1, le=MAX_MESH_EXTENT)]
Links = Annotated[int, Field(ge=0, le=MAX_LINKS_PER_PAIR)]


def fabric_wire_bytes(
    payload_bytes: int, fabric_header_bytes: int, max_packet_bytes: int, packet_overhead_bytes: int
) -> int:
    """Bytes on the wire for one fabric packet of ``p = payload_bytes``: ``p + h`` framed bytes (``h``, the
    fabric header) in ``ceil((p + h) / max_packet_bytes)`` Ethernet frames of ``packet_overhead_bytes``."""
    framed = payload_bytes + fabric_header_bytes
    return framed + ceil(framed / max_packet_bytes) * packet_overhead_bytes


class MeshAxisSpec(_Frozen):
    """One axis of the mesh: its chip count, the links per neighbouring pair, whether it closes a ring."""

    chips: Chips
    links: Links = Field(description="Ethernet links per neighbouring chip pair the fabric can use")
    wraps: bool = Field(description="the end chips are linked too: a ring runs along the axis")
    dispatch_links: Links = Field(
        default=0, description="links per neighbouring pair reserved for dispatch (not in links, not for the fabric)"
    )

    # field validators (not one model validator) so that an error names the field at fault, and so its line
    @field_validator("links")
    @classmethod
    def _links_join_neighbours(cls, links: int, info: ValidationInfo) -> int:
        chips = info.data.get("chips")
        if chips is not None and chips > 1 and links == 0:
            raise ValueError(f"an axis of {chips} chips needs links >= 1 between neighbours")
        return links

    @field_validator("wraps")
    @classmethod
    def _ring_needs_three(cls, wraps: bool, info: ValidationInfo) -> bool:
        chips = info.data.get("chips")
        if wraps and chips is not None and chips < 3:
            raise ValueError(f"a ring needs at least 3 chips on the axis ({chips} chips are no ring)")
        return wraps

    @field_validator("dispatch_links")
    @classmethod
    def _pair_has_room(cls, dispatch_links: int, info: ValidationInfo) -> int:
        links = info.data.get("links")
        if links is not None and links + dispatch_links > MAX_LINKS_PER_PAIR:
            raise ValueError(f"links {links} + dispatch_links {dispatch_links} exceed {MAX_LINKS_PER_PAIR} per pair")
        return dispatch_links


class EthernetSpec(_Frozen):
    """One Ethernet link, per direction (see the module docstring)."""

    link_bytes_per_cycle: Rate
    max_packet_bytes: Bytes
    packet_overhead_bytes: Annotated[int, Field(ge=0, le=4096)]
    fabric_packet_bytes: Bytes
    fabric_header_bytes: Annotated[int, Field(ge=0, le=4096)]
    fabric_bytes_per_cycle: Rate
    fabric_small_packet_bytes: Bytes | None = Field(
        default=None, description="a second measured packet size, below fabric_packet_bytes (optional)"
    )
    fabric_small_bytes_per_cycle: Rate | None = Field(
        default=None,
        validate_default=True,
        description="the measured payload rate at fabric_small_packet_bytes (given with it, or neither)",
    )
    hop_latency_cycles: Cycles

    def wire_bytes(self, payload_bytes: int) -> int:
        """Bytes on the wire for one fabric packet of ``payload_bytes`` (:func:`fabric_wire_bytes`)."""
        return fabric_wire_bytes(
            payload_bytes, self.fabric_header_bytes, self.max_packet_bytes, self.packet_overhead_bytes
        )

    @field_validator("fabric_bytes_per_cycle")
    @classmethod
    def _within_line_rate(cls, rate: float, info: ValidationInfo) -> float:
        line = info.data.get("link_bytes_per_cycle")
        if line is not None and rate > line:
            raise ValueError(f"{rate} exceeds the line rate link_bytes_per_cycle {line}")
        return rate

    @field_validator("fabric_small_packet_bytes")
    @classmethod
    def _below_the_packet(cls, small: int | None, info: ValidationInfo) -> int | None:
        packet = info.data.get("fabric_packet_bytes")
        if small is not None and packet is not None and small >= packet:
            raise ValueError(f"{small} must be below fabric_packet_bytes {packet}")
        return small

    @field_validator("fabric_small_bytes_per_cycle")
    @classmethod
    def _a_second_point_on_a_line(cls, rate: float | None, info: ValidationInfo) -> float | None:
        d = info.data
        if "fabric_small_packet_bytes" not in d:  # that field failed: its own error names it
            return rate
        small = d["fabric_small_packet_bytes"]
        if (small is None) != (rate is None):
            raise ValueError("fabric_small_packet_bytes and fabric_small_bytes_per_cycle go together (both or neither)")
        if rate is None or small is None:
            return rate
        line = d.get("link_bytes_per_cycle")
        if line is not None and rate > line:
            raise ValueError(f"{rate} exceeds the line rate link_bytes_per_cycle {line}")
        needed = ("max_packet_bytes", "packet_overhead_bytes", "fabric_packet_bytes", "fabric_header_bytes")
        if any(k not in d for k in needed) or "fabric_bytes_per_cycle" not in d:
            return rate  # an earlier field failed, and its own error names it
        big, big_rate = d["fabric_packet_bytes"], d["fabric_bytes_per_cycle"]
        wire_small, wire_big = (
            fabric_wire_bytes(p, d["fabric_header_bytes"], d["max_packet_bytes"], d["packet_overhead_bytes"])
            for p in (small, big)
        )
        t_small, t_big = Fraction(small) / Fraction(rate), Fraction(big) / Fraction(big_rate)
        if t_small > t_big:  # b < 0
            raise ValueError(
                f"a {small} B packet at {rate} B/cycle takes {float(t_small):.1f} cycles, longer than a {big} B "
                f"packet at fabric_bytes_per_cycle {big_rate} ({float(t_big):.1f}): "
                "a larger packet cannot take less time"
            )
        if t_small * wire_big < t_big * wire_small:  # a < 0
            raise ValueError(
                f"{rate} B/cycle at {small} B moves more per wire byte than fabric_bytes_per_cycle {big_rate} at "
                f"{big} B: the line through the two points would give a packet a negative fixed cost"
            )
        return rate


class MeshSpec(_Frozen):
    """A mesh of identical chips; ``rows`` is ttnn's ``cluster_axis`` 0, ``columns`` its 1."""

    schema_version: Literal[1]
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = Field(max_length=400)
    chip: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    rows: MeshAxisSpec
    columns: MeshAxisSpec
    flat_ring: bool = Field(
        default=False,
        description="the chips also form one ring through the whole mesh (ttnn opens it as 1 x chips)",
    )
    ethernet: EthernetSpec

    @property
    def chips(self) -> int:
        return self.rows.chips * self.columns.chips

    @property
    def shape(self) -> tuple[int, int]:
        """ttnn's ``MeshShape(rows, columns)``."""
        return (self.rows.chips, self.columns.chips)

    def axis(self, cluster_axis: int) -> MeshAxisSpec:
        """The axis ttnn calls ``cluster_axis`` (0: ``rows``, 1: ``columns``)."""
        if cluster_axis == 0:
            return self.rows
        if cluster_axis == 1:
            return self.columns
        raise ValueError(f"cluster_axis must be 0 (rows) or 1 (columns), got {cluster_axis}")
