"""``loom-explorer ingest``: a device-profiler report read whole and checked (``ingest.read_ops_perf``), the
chip told from it (or ``--hw``), each op predicted with its own config (``ingest.report_measurements``), the
predictions recorded in the results store (unless a dry run), and the share of the capture's device time
the model answers for (``coverage``), also by op code (``op_coverage``); ``ingest_json`` is the ``--json``
contract. ``window`` (``capture_window``) says which rows are analysed: a signpost range, trace replays
counted once or per replay, devices merged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from loom_explorer.accuracy.capture_window import CaptureWindow
from loom_explorer.accuracy.collective_calibration import UNCALIBRATED as UNCALIBRATED_COLLECTIVES
from loom_explorer.accuracy.collective_ingest import CollectivePredictions, predict_collectives
from loom_explorer.accuracy.coverage import Coverage, coverage_of
from loom_explorer.accuracy.ingest import (
    IngestError,
    IngestReport,
    choose_hardware,
    read_ops_perf,
    report_measurements,
    summary_json,
)
from loom_explorer.accuracy.op_coverage import OpCodeCoverage, op_code_coverage
from loom_explorer.accuracy.progress import Progress
from loom_explorer.accuracy.term_calibration import UNCALIBRATED
from loom_explorer.hardware import load_hardware
from loom_explorer.store import Measurement, open_store


@dataclass(frozen=True, slots=True)
class Ingested:
    """A report ingested: its ops, the chip they were predicted on (``chip``: what it is and how it was
    told), their predictions (one per op, in order), what was recorded and the coverage."""

    report: IngestReport
    chip: str
    measurements: list[Measurement]
    coverage: Coverage
    recorded: int = 0  # measurements recorded in the store (none on a dry run)
    store: Path | None = None  # the store they were recorded in
    op_codes: tuple[OpCodeCoverage, ...] = ()  # the coverage by op code, most device time first
    collectives: CollectivePredictions = CollectivePredictions(None, (), ())  # the collective rows, per device


def ingest(
    file: str,
    hw: str | None,
    dry_run: bool,
    skip_bad_rows: bool,
    store: str | None,
    window: CaptureWindow | None = None,
    grid: tuple[int, int] | None = None,
    uncalibrated: bool = False,
    mesh: str | None = None,
) -> Ingested:
    """The report ``file`` ingested (module docstring): the whole file is read and checked before anything is
    predicted or recorded. ``grid`` (``--grid``, columns and rows) is the run's worker grid when the capture
    does not tell it (no ``AVAILABLE WORKER CORE COUNT``), or overrides the one it tells; an ``IngestError``
    when it is larger than the chip's. Predicted times are calibrated (``term_calibration``) unless
    ``uncalibrated``. The collective rows are predicted on the capture's mesh (``collective_ingest``; ``mesh``:
    ``--mesh``, else told from the capture) and recorded with the ops."""
    ids: list[int] = []
    store_path: Path | None = None
    with Progress() as progress:
        report = read_ops_perf(file, skip_bad_rows=skip_bad_rows, progress=progress, window=window)
        hw_name, told, chip_line = choose_hardware(report, hw) if report.ops else (None, None, "")
        if grid is not None and hw_name is not None:
            chip_line = f"{chip_line}; {_given_grid(hw_name, grid)}"
        run_grid = grid or told
        calibration = UNCALIBRATED if uncalibrated else None
        measurements = (
            report_measurements(report, hw_name, progress, run_grid, calibration=calibration)
            if hw_name and report.ops
            else []
        )
        collectives = predict_collectives(report, mesh, UNCALIBRATED_COLLECTIVES if uncalibrated else None)
        if collectives.choice is not None:
            chip_line = f"{chip_line}; " if chip_line else ""
            chip_line += f"collectives on {collectives.choice.reason}"
        if not dry_run:
            with open_store(store) as opened:
                ids = opened.record_many([*measurements, *collectives.measurements])
                store_path = opened.path
    return Ingested(
        report,
        chip_line,
        measurements,
        coverage_of(report, measurements, collectives.measurements),
        len(ids),
        store_path,
        op_code_coverage(report, measurements, collectives),
        collectives,
    )


def _given_grid(hw_name: str, grid: tuple[int, int]) -> str:
    """How ``--grid`` is said on the chip line; an ``IngestError`` when the grid does not fit ``hw_name``."""
    spec = load_hardware(hw_name)
    if grid[0] > spec.grid.columns or grid[1] > spec.grid.rows:
        raise IngestError(
            f"--grid {grid[0]}x{grid[1]} does not fit {hw_name}'s {spec.grid.columns}x{spec.grid.rows} grid"
        )
    return f"on the {grid[0]}x{grid[1]} worker grid given (--grid)"


def ingest_json(done: Ingested) -> dict[str, object]:
    """``ingest --json``: the report's summary, the chip, every op's prediction and the coverage."""
    doc = summary_json(done.report)
    doc["chip"] = done.chip
    doc["predictions"] = [
        {
            "row": op.row,
            "hardware": m.hardware,
            "candidate": m.candidate,
            "predicted_ns": m.predicted_ns,
            "measured_ns": m.measured_ns,
            "note": m.note,
        }
        for op, m in zip(done.report.ops, done.measurements, strict=True)
    ]
    doc["collectives"] = {
        "mesh": done.collectives.choice.reason if done.collectives.choice else None,
        "predicted": [
            {
                "row": c.row,
                "op_code": c.op_code,
                "device_id": c.device_id,
                "kind": m.kernel,
                "shape": m.shape,
                "predicted_ns": m.predicted_ns,
                "measured_ns": m.measured_ns,
            }
            for c, m in done.collectives.predicted
        ],
        "skipped": [{"row": c.row, "op_code": c.op_code, "reason": why} for c, why in done.collectives.skipped],
    }
    doc["coverage"] = done.coverage.as_json()
    doc["op_codes"] = [c.as_json() for c in done.op_codes]
    doc["window"] = {
        "start_signpost": done.report.window.start_signpost,
        "end_signpost": done.report.window.end_signpost,
        "trace_replays": done.report.window.trace_replays,
        "merge_devices": done.report.window.merge_devices,
    }
    doc["left_out"] = [
        {"row": x.row, "op_code": x.op_code, "kind": x.kind, "reason": x.reason} for x in done.report.left_out
    ]
    return doc
