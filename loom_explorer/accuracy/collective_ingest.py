"""A capture's collective rows predicted, per device, as results-store entries: what ``ingest`` and
``improve`` add for a multi-device capture.

The capture's mesh is told from the capture (``capture_collective.infer_mesh``) or given (``--mesh``); each
collective row (``IngestReport.collectives``, one per device) is its ``CollectiveOp`` on that mesh
(``collective_reading.collective_op``), predicted with the collective model's terms (``model/collective.py``)
and the shipped constants (``collective_calibration``). Every device of one op gets the same prediction: a
report does not say where on the ring a device sits. A row the mesh cannot hold, or every row when no mesh
is told, is skipped with the reason.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone

from loom_explorer.accuracy.capture_collective import IngestedCollective, MeshChoice
from loom_explorer.accuracy.collective_accuracy import capture_choice, case_name, report_rows
from loom_explorer.accuracy.collective_calibration import CollectiveConstants, shipped_constants
from loom_explorer.accuracy.collective_rows import CollectiveRow
from loom_explorer.accuracy.ingest import IngestReport
from loom_explorer.hardware.mesh_load import mesh_chip
from loom_explorer.model.collective import collective_model
from loom_explorer.store import Measurement


@dataclass(frozen=True, slots=True)
class CollectivePredictions:
    """A report's collectives: the mesh told, one entry per predicted row, and the rows skipped (row, reason)."""

    choice: MeshChoice | None  # None: the report has no collective rows
    predicted: tuple[tuple[IngestedCollective, Measurement], ...]
    skipped: tuple[tuple[IngestedCollective, str], ...]

    @property
    def measurements(self) -> list[Measurement]:
        return [m for _, m in self.predicted]


def _measurement(
    c: IngestedCollective, row: CollectiveRow, constants: CollectiveConstants, created: str, file: str
) -> Measurement:
    chip = mesh_chip(row.mesh)
    lat = collective_model().latency(row.op, row.mesh, chip)
    op = row.op
    shape = {
        "ring_size": op.ring_size,
        "num_links": op.num_links,
        "slice_bytes": op.slice_bytes,
        "page_bytes": op.page_bytes,
    }
    document = {
        "source_file": file,
        "row": c.row,
        "op_code": c.op_code,
        "mesh": row.mesh.name,
        "device_id": c.device_id,
        "topology": op.topology.value,
        "input_in_dram": op.input_in_dram,
        "output_in_dram": op.output_in_dram,
    }
    notes = [f"{file} row {c.row} ({c.op_code})", f"on mesh {row.mesh.name}, device {c.device_id}"]
    if (constants.link_efficiency, constants.extra_fixed_cycles) != (1.0, 0.0):
        notes.append(
            f"calibrated: eta {constants.link_efficiency:.3f}, extra fixed {constants.extra_fixed_cycles:.0f} cycles"
        )
    return Measurement(
        source="report",
        hardware=row.mesh.name,
        hardware_sha256=hashlib.sha256(row.mesh.model_dump_json().encode()).hexdigest(),
        kernel=op.kind.value,
        shape=shape,
        candidate=f"{op.topology.value} ring of {op.ring_size}, {op.num_links} links",
        schedule_json=json.dumps(document),
        predicted_cycles=lat.total_cycles,
        predicted_ns=constants.cycles(lat) / chip.clock_ghz,
        breakdown={
            "link": lat.link_cycles,
            "local": lat.local_cycles,
            "hop": lat.hop_cycles,
            "fixed": lat.fixed_cycles,
        },
        measured_ns=c.device_kernel_ns,
        measured_what="device kernel duration",
        note="; ".join(notes),
        created=created,
    )


def predict_collectives(
    report: IngestReport, mesh: str | None = None, constants: CollectiveConstants | None = None
) -> CollectivePredictions:
    """Every collective row of ``report`` predicted on its mesh (module docstring)."""
    if not report.collectives:
        return CollectivePredictions(None, (), ())
    constants = shipped_constants() if constants is None else constants
    choice = capture_choice(report, mesh)
    rows, skipped = report_rows(report, choice)
    by_case = {r.case: r for r in rows}
    why = {s.case: s.reason for s in skipped}
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    predicted, left = [], []
    for c in report.collectives:
        case = case_name(report.file.name, c)
        if case in by_case:
            predicted.append((c, _measurement(c, by_case[case], constants, created, report.file.name)))
        else:
            left.append((c, why.get(case, "not predicted")))
    return CollectivePredictions(choice, tuple(predicted), tuple(left))
