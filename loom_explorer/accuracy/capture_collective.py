"""The collective rows of a multi-device device-profiler capture: which op codes are collectives, what a row
says of its op, and which shipped mesh the capture ran on.

**Op codes** (the last ``::`` part, lower case): ``allgather``, ``reducescatter`` or ``allreduce``, then
only ``async``/``minimal`` and an op suffix (``deviceoperation``, ``operation``, ``op``): e.g.
``AllGatherAsyncDeviceOperation``, ``ReduceScatterMinimalAsyncDeviceOperation``, ``AllReduceAsync``. A code
that names a collective with more (``AllGatherMatmul``, ``AllGatherConcat``, a ``Llama`` variant) is a fused
op, skipped saying so.

**A row** (``read_collective``): ``ATTRIBUTES`` give ``ring_size`` (required), ``topology``
(``Topology::Linear`` / ``Topology::Ring``; required), ``num_links`` and ``cluster_axis`` (optional), ``dim``;
the slice is ``INPUT_0``: an all-gather's input is one slice, a reduce-scatter's and an all-reduce's input
is ``ring_size`` slices (its bytes / ``ring_size``). ``INPUT_0_DATATYPE`` and ``INPUT_0_LAYOUT`` (``TILE``:
pages are tiles; ``ROW_MAJOR``: rows) give the bytes; ``INPUT_0_MEMORY`` and the last ``OUTPUT_<i>_MEMORY``
(a reduce-scatter's ``OUTPUT_0`` is its intermediate buffer, its result the last) say DRAM or L1.

**The mesh** (``infer_mesh``): the shipped meshes (``hw/meshes``) whose chip is of the capture's one
architecture (``DEVICE ARCH``) and which have as many chips as the capture has devices (``DEVICE ID``), and
on which every collective row's ring fits (``collective_reading.ring_links``). One such mesh: it is the
capture's. None, or several: the collectives are not predicted, each skipped with the reason (the
candidates named), unless the mesh is given (``ingest --mesh``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from loom_explorer.accuracy.capture import DTYPES, ProfilerRow, RowSkip, attributes_of
from loom_explorer.accuracy.capture_chip import arch_family
from loom_explorer.accuracy.collective_reading import CollectiveReading, ring_links
from loom_explorer.hardware.load import HardwareError
from loom_explorer.hardware.mesh_load import list_meshes, load_mesh, mesh_chip
from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.model.collective import CollectiveError, CollectiveKind, FabricTopology

_KINDS = {
    "allgather": CollectiveKind.all_gather,
    "reducescatter": CollectiveKind.reduce_scatter,
    "allreduce": CollectiveKind.all_reduce,
}
_PLAIN = re.compile(r"(allgather|reducescatter|allreduce)(minimal)?(async)?(deviceoperation|operation|op)?")
_TOPOLOGY = {"linear": FabricTopology.linear, "ring": FabricTopology.ring}


def collective_word(name: str) -> bool:
    """Whether lower-case op code ``name`` names a collective at all (plain or fused)."""
    return any(word in name for word in _KINDS)


def collective_kind(name: str) -> CollectiveKind:
    """The kind of a plain collective's lower-case op code ``name``; RowSkip for a fused one (docstring)."""
    m = _PLAIN.fullmatch(name)
    if m is None:
        raise RowSkip(f"{name}: a collective fused with other work, not a plain all-gather/reduce-scatter/all-reduce")
    return _KINDS[m.group(1)]


def _int_attr(attrs: dict[str, str], name: str) -> int | None:
    text = attrs.get(name, "").strip().strip("'")
    if not text or text.lower() in ("std::nullopt", "nullopt", "none"):
        return None
    try:
        return int(text)
    except ValueError:
        raise RowSkip(f"ATTRIBUTES {name} {text!r} is not a whole number") from None


def read_collective(row: ProfilerRow, name: str, attributes: str) -> CollectiveReading:
    """What a collective's row says of its op (module docstring); RowSkip with the reason when it cannot."""
    kind = collective_kind(name)
    attrs, _ = attributes_of(attributes)
    ring = _int_attr(attrs, "ring_size")
    if ring is None or ring < 2:
        raise RowSkip("ATTRIBUTES give no ring_size of 2 or more devices")
    topology_text = attrs.get("topology", "").split("::")[-1].strip().lower()
    if topology_text not in _TOPOLOGY:
        raise RowSkip(f"ATTRIBUTES topology {topology_text or 'absent'!r} is not Topology::Linear or Topology::Ring")
    shape = row.shape("INPUT_0")
    if shape is None:
        raise RowSkip("INPUT_0 has no shape")
    dtype_text = row.get("INPUT_0_DATATYPE").split("::")[-1].upper()
    if dtype_text not in DTYPES:
        raise RowSkip(f"INPUT_0_DATATYPE {dtype_text or 'empty'!r} is not one of {', '.join(DTYPES)}")
    layout = row.get("INPUT_0_LAYOUT").split("::")[-1].upper()
    if layout not in ("TILE", "ROW_MAJOR", ""):
        raise RowSkip(f"INPUT_0_LAYOUT {layout!r} is not TILE or ROW_MAJOR")
    outputs = [row.get(f"OUTPUT_{i}_MEMORY") for i in range(8)]
    output_memory = next((m for m in reversed(outputs) if m), "")
    return CollectiveReading(
        kind=kind,
        ring_size=ring,
        topology=_TOPOLOGY[topology_text],
        num_links=_int_attr(attrs, "num_links"),
        cluster_axis=_int_attr(attrs, "cluster_axis"),
        shape=shape,
        parts=1 if kind is CollectiveKind.all_gather else ring,
        dtype=DTYPES[dtype_text],
        tiled=layout != "ROW_MAJOR",
        input_in_dram="L1" not in row.get("INPUT_0_MEMORY").upper(),
        output_in_dram="L1" not in output_memory.upper(),
    )


@dataclass(frozen=True, slots=True)
class MeshChoice:
    """The mesh a capture's collectives are predicted on (``None``: not told) and how it was told."""

    mesh: MeshSpec | None
    reason: str


def _fits(mesh: MeshSpec, readings: Iterable[CollectiveReading]) -> bool:
    try:
        for r in readings:
            ring_links(mesh, r.ring_size, r.cluster_axis, r.topology)
    except CollectiveError:
        return False
    return True


def infer_mesh(
    archs: Iterable[str], devices: Iterable[int], readings: Iterable[CollectiveReading], given: str | None = None
) -> MeshChoice:
    """The capture's mesh (module docstring): ``given`` (a mesh name or file) when set, else the one shipped
    mesh that fits the capture's architecture, device count and rings."""
    if given:
        try:
            mesh = load_mesh(given)
        except HardwareError as exc:
            return MeshChoice(None, f"--mesh {given}: {exc}")
        return MeshChoice(mesh, f"{mesh.name} ({mesh.shape[0]}x{mesh.shape[1]}, --mesh)")
    families = {arch_family(a) for a in archs if a}
    count = len(set(devices))
    wanted = list(readings)
    if len(families) != 1:
        return MeshChoice(None, "the capture names no single DEVICE ARCH: give --mesh")
    arch = families.pop()
    fits = []
    for name in list_meshes():
        mesh = load_mesh(name)
        if mesh.chips == count and mesh_chip(mesh).arch.name == arch and _fits(mesh, wanted):
            fits.append(mesh)
    told = f"{arch}, {count} devices, rings {sorted({(r.ring_size, r.cluster_axis) for r in wanted}, key=str)}"
    if len(fits) == 1:
        m = fits[0]
        return MeshChoice(m, f"{m.name} ({m.shape[0]}x{m.shape[1]} {m.chip}; told from the capture: {told})")
    if not fits:
        return MeshChoice(None, f"no shipped mesh fits the capture ({told}): give --mesh")
    return MeshChoice(None, f"several shipped meshes fit ({', '.join(m.name for m in fits)}; {told}): give --mesh")


@dataclass(frozen=True, slots=True)
class IngestedCollective:
    """One device's row of a collective op, as ``ingest`` reads it (``read_collective``)."""

    row: int
    op_code: str
    reading: CollectiveReading
    device_kernel_ns: float
    device_id: int | None
    device_arch: str | None
