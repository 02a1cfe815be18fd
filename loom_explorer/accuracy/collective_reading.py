"""A collective op as a capture row or a published row states it, and the ``CollectiveOp`` it is on a mesh.

A reading keeps what the source says: the kind, ``ring_size``, topology, ``num_links`` and ``cluster_axis``
(either may be unstated), the tensor whose bytes give the slice (``shape``, ``parts``: ``slice_bytes =
bytes(shape) / parts``), its data format and layout, and where the tensors live. On a mesh
(``collective_op``):

* **the ring's place** (``ring_links``): with ``cluster_axis = a`` the ring is one line of that axis, so
  ``ring_size`` must be the axis' chip count, and a ``Ring`` topology needs the axis to wrap; the links per
  neighbouring pair are the axis' ``links``. Without ``cluster_axis`` the ring runs along the one axis of
  ``ring_size`` chips, or (``ring_size`` = every chip of a ``flat_ring`` mesh) through the whole mesh, with
  the smaller ``links`` of its axes. A ring the mesh cannot hold is a ``CollectiveError`` saying why.
* **links**: ``num_links`` as stated, else the ring's links per pair; a stated ``num_links`` above the
  mesh's is an error naming the mesh (the mesh file would be wrong).
* **bytes**: a tiled tensor of logical ``(W, Z, Y, X)`` holds ``W * Z * ceil(Y / 32) * ceil(X / 32)``
  tiles of the chip's ``tile_bytes[format]``, its page one tile; a row-major one ``W * Z * Y * X`` elements
  of 2 (bfloat16) or 4 (float32) bytes, its page one row of ``X`` elements (block formats are tiled only).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.hardware.schema import DataFormat, HardwareSpec
from loom_explorer.model.collective import CollectiveError, CollectiveKind, CollectiveOp, FabricTopology

TILE = 32
ROW_MAJOR_ELEMENT_BYTES = {DataFormat.bfloat16: 2, DataFormat.float32: 4}
Shape = tuple[int, int, int, int]  # logical (W, Z, Y, X)


@dataclass(frozen=True, slots=True)
class CollectiveReading:
    """A collective as its source states it (module docstring)."""

    kind: CollectiveKind
    ring_size: int
    topology: FabricTopology
    num_links: int | None  # None: the ring's links on the mesh
    cluster_axis: int | None  # None: not stated
    shape: Shape  # the tensor whose bytes / ``parts`` are one device's slice
    parts: int
    dtype: DataFormat
    tiled: bool = True
    input_in_dram: bool = True
    output_in_dram: bool = True

    def describe(self) -> str:
        axis = "" if self.cluster_axis is None else f" axis {self.cluster_axis}"
        links = "" if self.num_links is None else f" x{self.num_links} links"
        return f"{self.kind.value} {self.topology.value} {self.ring_size}{axis}{links}"


def ring_links(mesh: MeshSpec, ring_size: int, cluster_axis: int | None, topology: FabricTopology) -> int:
    """Links per neighbouring pair of a ring of ``ring_size`` chips on ``mesh`` (module docstring)."""
    ring = topology is FabricTopology.ring
    if cluster_axis is not None:
        try:
            axis = mesh.axis(cluster_axis)
        except ValueError as exc:
            raise CollectiveError(str(exc)) from None
        if axis.chips != ring_size:
            raise CollectiveError(
                f"ring_size {ring_size} on cluster_axis {cluster_axis}: mesh {mesh.name} ({mesh.shape[0]}x"
                f"{mesh.shape[1]}) has {axis.chips} chips on that axis"
            )
        if ring and not axis.wraps:
            raise CollectiveError(f"a Ring on cluster_axis {cluster_axis}: mesh {mesh.name}'s axis does not wrap")
        return axis.links
    multi = [a for a in (mesh.rows, mesh.columns) if a.chips > 1]
    if ring_size == mesh.chips and len(multi) == 2:
        if not mesh.flat_ring:
            raise CollectiveError(f"a ring of all {ring_size} chips: mesh {mesh.name} has no flat ring")
        return min(a.links for a in multi)
    fits = [a for a in multi if a.chips == ring_size and (a.wraps or not ring)]
    if not fits:
        raise CollectiveError(f"ring_size {ring_size} ({topology.value}) fits no axis of mesh {mesh.name}")
    return max(a.links for a in fits)


def tensor_bytes(shape: Shape, dtype: DataFormat, tiled: bool, chip: HardwareSpec) -> tuple[int, int]:
    """(bytes, page bytes) of a tensor (module docstring)."""
    w, z, y, x = shape
    if tiled:
        tile = chip.tile_bytes[dtype]
        return w * z * ceil(y / TILE) * ceil(x / TILE) * tile, tile
    if dtype not in ROW_MAJOR_ELEMENT_BYTES:
        raise CollectiveError(f"a row-major tensor of {dtype.value}: block formats are tiled only")
    element = ROW_MAJOR_ELEMENT_BYTES[dtype]
    return w * z * y * x * element, x * element


def collective_op(reading: CollectiveReading, mesh: MeshSpec, chip: HardwareSpec) -> CollectiveOp:
    """The op ``reading`` is on ``mesh`` of ``chip``s (module docstring); CollectiveError when it cannot be."""
    links = ring_links(mesh, reading.ring_size, reading.cluster_axis, reading.topology)
    num_links = reading.num_links if reading.num_links is not None else links
    if num_links > links:
        raise CollectiveError(
            f"num_links {num_links}: mesh {mesh.name} has {links} links per chip pair on that ring (its file?)"
        )
    total, page = tensor_bytes(reading.shape, reading.dtype, reading.tiled, chip)
    return CollectiveOp(
        kind=reading.kind,
        ring_size=reading.ring_size,
        topology=reading.topology,
        num_links=num_links,
        slice_bytes=max(1, total // reading.parts),
        page_bytes=min(page, max(1, total // reading.parts)),
        input_in_dram=reading.input_in_dram,
        output_in_dram=reading.output_in_dram,
    )
