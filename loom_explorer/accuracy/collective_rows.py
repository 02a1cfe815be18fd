"""The published collective times (``data/published/collective_times.csv``) and the collective rows of the
shipped multi-device captures, as rows the collective model is fitted and judged on.

A row of the CSV is

* **measured** when ``time_us`` is given (a measured device time, or one derived from printed cycles), an
  **upper bound** when only ``time_us_high`` is (a perf target the nightly asserts the measured time is
  below): a bound is scored as "predicted <= bound", never as an error;
* on the mesh its ``mesh`` names (``hw/meshes``); a row whose mesh is not shipped is skipped, saying so.

Cells a row leaves empty are filled, each saying where from (``inferred``): ``dtype``, ``num_links``,
``memory`` and ``layout`` from a row of the same op, mesh, ring size and shapes that states them (the
nightly's shape table states what the model run's measured rows do not print); else ``num_links`` is the
ring's links on the mesh (``collective_reading.ring_links``), the layout tiled, the memory DRAM. A row with
no data format at all is skipped. ``fp16`` is read as a 2-byte format (bfloat16's size). The slice is the
all-gather's input (or its output / ring size), the reduce-scatter's output (or its input / ring size), the
all-reduce's input / ring size.

A capture's collective rows are read by ``ingest`` (``capture_collective``), one per device, each on the
mesh the capture is told to have run on; the capture's name is the row's topology when the mesh is one
of the CSV's too (``topology``: the mesh's name, the group a leave-one-topology-out fold leaves out).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from loom_explorer.accuracy.collective_reading import CollectiveReading, Shape, collective_op
from loom_explorer.data import published_path
from loom_explorer.errors import LoomError
from loom_explorer.hardware.load import HardwareError
from loom_explorer.hardware.mesh_load import load_mesh, mesh_chip
from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.hardware.schema import DataFormat, parse_data_format
from loom_explorer.model.collective import CollectiveError, CollectiveKind, CollectiveOp, FabricTopology

COLLECTIVE_TIMES = "collective_times.csv"
FILLED = ("dtype", "num_links", "memory", "layout")  # the cells a row may take from a row of the same op


class CollectiveDataError(LoomError, ValueError):
    """The collective times file cannot be read; the message names the file, line and column."""


@dataclass(frozen=True, slots=True)
class CollectiveRow:
    """One collective time on one mesh (module docstring)."""

    case: str
    topology: str  # the mesh's name: what a leave-one-topology-out fold leaves out
    mesh: MeshSpec
    op: CollectiveOp
    time_us: float
    upper_bound: bool  # time_us is a perf target (predicted <= it), not a measurement
    source: str
    inferred: str = ""  # the cells filled in, and from where
    device_id: int | None = None

    @property
    def clock_ghz(self) -> float:
        return mesh_chip(self.mesh).clock_ghz


@dataclass(frozen=True, slots=True)
class SkippedCollective:
    case: str
    reason: str


def _shape(text: str) -> Shape | None:
    if not text.strip():
        return None
    dims = [int(d) for d in text.lower().split("x")]
    if not 1 <= len(dims) <= 4 or min(dims) < 1:
        raise ValueError(f"shape {text!r} is not 1-4 positive extents joined by x")
    padded = [1] * (4 - len(dims)) + dims
    return (padded[0], padded[1], padded[2], padded[3])


def _dtype(text: str) -> DataFormat:
    return DataFormat.bfloat16 if text.strip().lower() == "fp16" else parse_data_format(text)


def _slice(kind: CollectiveKind, ring: int, inp: Shape | None, out: Shape | None) -> tuple[Shape, int]:
    """(the tensor, parts) whose bytes / parts are one device's slice (module docstring)."""
    if kind is CollectiveKind.all_gather:
        found = (inp, 1) if inp else (out, ring)
    elif kind is CollectiveKind.reduce_scatter:
        found = (out, 1) if out else (inp, ring)
    else:
        found = (inp, ring)
    shape, parts = found
    if shape is None:
        raise ValueError("neither input_shape nor output_shape gives the slice")
    return shape, parts


def _filled(cells: dict[str, str], rows: list[dict[str, str]]) -> tuple[dict[str, str], list[str]]:
    """``cells`` with the empty ``FILLED`` cells taken from a row of the same op, mesh, ring and shapes."""
    key = ("op", "mesh", "ring_size", "input_shape", "output_shape")
    same = [r for r in rows if r is not cells and all(r[k] == cells[k] for k in key)]
    out, notes = dict(cells), []
    for name in FILLED:
        if out[name].strip():
            continue
        donor = next((r for r in same if r[name].strip()), None)
        if donor is not None:
            out[name] = donor[name]
            notes.append(f"{name} {donor[name]} from {donor['case_id']}")
    return out, notes


def published_rows(
    path: Path | None = None, mesh_of: Callable[[str], MeshSpec] = load_mesh
) -> tuple[tuple[CollectiveRow, ...], tuple[SkippedCollective, ...]]:
    """Every row of the collective times file (default the shipped one) on its mesh, and the rows skipped."""
    path = path or published_path(COLLECTIVE_TIMES)
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    out: list[CollectiveRow] = []
    skipped: list[SkippedCollective] = []
    for line, raw in enumerate(rows, start=2):
        case = raw.get("case_id", "") or f"line {line}"
        cells, notes = _filled(raw, rows)
        try:
            mesh = mesh_of(cells["mesh"])
        except HardwareError as exc:
            skipped.append(SkippedCollective(case, f"mesh {cells['mesh']!r} is not shipped ({exc})"))
            continue
        try:
            row = _row(cells, mesh, notes)
        except CollectiveError as exc:
            skipped.append(SkippedCollective(case, str(exc)))
            continue
        except (KeyError, ValueError) as exc:
            raise CollectiveDataError(f"{path} line {line} ({case}): {exc}") from None
        if row is None:
            skipped.append(SkippedCollective(case, "no data format stated, none of a row of the same shapes"))
        else:
            out.append(row)
    return tuple(out), tuple(skipped)


def _row(cells: dict[str, str], mesh: MeshSpec, notes: list[str]) -> CollectiveRow | None:
    kind = CollectiveKind(cells["op"])
    ring = int(cells["ring_size"])
    if not cells["dtype"].strip():
        return None
    if not cells["layout"].strip():
        notes.append("layout tile (assumed)")
    if not cells["memory"].strip():
        notes.append("memory DRAM (assumed)")
    if not cells["num_links"].strip():
        notes.append("num_links: the mesh's links on the ring")
    shape, parts = _slice(kind, ring, _shape(cells["input_shape"]), _shape(cells["output_shape"]))
    in_dram = "l1" not in cells["memory"].lower()
    reading = CollectiveReading(
        kind=kind,
        ring_size=ring,
        topology=FabricTopology(cells["topology"].strip().lower()),
        num_links=int(cells["num_links"]) if cells["num_links"].strip() else None,
        cluster_axis=int(cells["cluster_axis"]) if cells["cluster_axis"].strip() else None,
        shape=shape,
        parts=parts,
        dtype=_dtype(cells["dtype"]),
        tiled=cells["layout"].strip().lower() in ("", "tile"),
        input_in_dram=in_dram,
        output_in_dram=in_dram,
    )
    bound = not cells["time_us"].strip()
    time_us = float(cells["time_us_high"] if bound else cells["time_us"])
    if not time_us > 0:
        raise ValueError(f"time {time_us} us is not positive")
    return CollectiveRow(
        case=cells["case_id"],
        topology=mesh.name,
        mesh=mesh,
        op=collective_op(reading, mesh, mesh_chip(mesh)),
        time_us=time_us,
        upper_bound=bound,
        source=f"{cells['source_path']}@{cells['commit'][:8]}",
        inferred="; ".join(notes),
    )
