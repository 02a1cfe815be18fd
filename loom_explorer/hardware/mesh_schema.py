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

Bounds as in ``schema.py``: extents at most 64 chips per axis, 16 links per pair (a Wormhole chip has 16
Ethernet cores, a Blackhole chip 14), rates and sizes as the chip schema's.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator

from loom_explorer.hardware.schema import Bytes, Cycles, Rate, _Frozen

MESH_SCHEMA_VERSION = 1
MAX_MESH_EXTENT = 64
MAX_LINKS_PER_PAIR = 16

Chips = Annotated[int, Field(ge=1, le=MAX_MESH_EXTENT)]
Links = Annotated[int, Field(ge=0, le=MAX_LINKS_PER_PAIR)]


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
    hop_latency_cycles: Cycles

    @field_validator("fabric_bytes_per_cycle")
    @classmethod
    def _within_line_rate(cls, rate: float, info: ValidationInfo) -> float:
        line = info.data.get("link_bytes_per_cycle")
        if line is not None and rate > line:
            raise ValueError(f"{rate} exceeds the line rate link_bytes_per_cycle {line}")
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
