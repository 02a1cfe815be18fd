"""The profiler-report page's logic, without widgets (``profiler_page.py`` draws it): read a device-profiler
report (an upload's bytes, or a shipped capture by name), find every matmul and attention op's best TTNN
config (``accuracy/improve.py``), tabulate the ops, and turn one op into the explorer's inputs.

Untrusted input: an upload is parsed from its bytes (``read_ops_perf_bytes``: streamed row by row, stopped at
the first unusable row unless rows are skipped, and bounded in rows and bytes as ``ingest`` is), its file
name only labels it; a shipped capture is found by its name in ``CAPTURES`` (``capture_path`` refuses any
other). No path that came from a page is ever opened.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from loom_explorer.accuracy.coverage import coverage_lines
from loom_explorer.accuracy.csv_input import group_issues
from loom_explorer.accuracy.improve import Improvement, ImproveReport, improve_report
from loom_explorer.accuracy.ingest import (
    IngestError,
    IngestReport,
    choose_hardware,
    read_ops_perf_bytes,
)
from loom_explorer.accuracy.op_coverage import OpCodeCoverage, op_code_coverage
from loom_explorer.accuracy.progress import Progress
from loom_explorer.data import CAPTURE_CHIPS, CAPTURES, capture_path
from loom_explorer.hardware import list_hardware, load_hardware
from loom_explorer.problem import Problem
from loom_explorer.store import Measurement, open_store

OPS_COLUMNS = ["op", "calls", "measured us", "as run us", "best us", "gain ms", "best candidate / why not"]
COVERAGE_COLUMNS = ["op code", "rows", "device ms", "share %", "predicted %", "error %", "kernel / why not"]
NO_CHOICE = ""  # the hardware choice "the chip the report names"


@dataclass(frozen=True, slots=True)
class ReportSource:
    """Where a report comes from: an upload (``data``, its file name only a label) or a shipped capture
    (``capture``, a key of ``CAPTURES``)."""

    label: str
    data: bytes | None = None
    capture: str | None = None

    @staticmethod
    def upload(filename: str, data: bytes) -> ReportSource:
        """An upload, labelled by the last part of its file name (a browser sends no folder; any is dropped)."""
        return ReportSource(re.split(r"[\\/]", filename)[-1] or "report.csv", data=data)

    @staticmethod
    def shipped(name: str) -> ReportSource:
        return ReportSource(name, capture=name)

    def read(self, skip_bad_rows: bool = False, progress: Progress | None = None) -> IngestReport:
        """The report, parsed from bytes (IngestError in one line when it cannot be read)."""
        if self.capture is not None:
            if self.capture not in CAPTURES:  # capture_path refuses it too; said here in the page's words
                raise IngestError(f"{self.capture!r} is not a shipped capture")
            data = capture_path(self.capture).read_bytes()
        elif self.data is not None:
            data = self.data
        else:
            raise IngestError(f"{self.label}: nothing uploaded")
        return read_ops_perf_bytes(self.label, data, skip_bad_rows=skip_bad_rows, progress=progress)


@dataclass(frozen=True, slots=True)
class Analysis:
    """A report and its improvement: which hardware it was predicted on, on which worker grid, and why."""

    source: ReportSource
    report: IngestReport
    result: ImproveReport

    @property
    def hw_name(self) -> str:
        return self.result.hardware

    @property
    def grid(self) -> tuple[int, int] | None:
        return self.result.grid

    def op(self, key: str) -> Improvement:
        """The op of ``key``; KeyError naming it when there is none."""
        for o in self.result.ops:
            if o.key == key:
                return o
        raise KeyError(f"no op {key!r} in {self.source.label}")

    def measurements(self) -> tuple[Measurement, ...]:
        """Every ingested op as a results-store row, measured beside predicted (what ``ingest`` records)."""
        return self.result.measurements


def record(analysis: Analysis) -> dict[str, int]:
    """Record the report's measurements in the explorer's results store (``$LOOM_EXPLORER_STORE`` or the
    default, as ``ingest`` does, source ``report``): how many rows on each hardware name (a restricted grid
    is named ``<chip>@<columns>x<rows>``)."""
    rows = analysis.measurements()
    with open_store() as store:
        store.record_many(rows)
    return dict(Counter(m.hardware for m in rows))


def analyse(
    source: ReportSource, hw: str = NO_CHOICE, skip_bad_rows: bool = False, progress: Progress | None = None
) -> Analysis:
    """Read ``source`` and improve every matmul and attention op on ``hw`` (a shipped name), or on the chip
    the report names (``NO_CHOICE``). IngestError in one line when the report cannot be read or names no chip;
    the solves are remembered in (and answered from) the explorer's results store."""
    if hw and hw not in list_hardware():  # the shipped files: what ``improve`` loads by name
        raise IngestError(f"unknown hardware {hw!r}; choose one of {', '.join(list_hardware())}")
    report = source.read(skip_bad_rows, progress)
    if not report.ops:
        raise IngestError(
            f"{source.label}: no matmul, attention, norm or element-wise op the model reads "
            f"({len(report.skipped)} rows skipped)"
        )
    stated = CAPTURE_CHIPS.get(source.capture or "") if not hw else None
    grid: tuple[int, int] | None
    try:
        if stated is not None:  # a shipped capture that names no chip (or not its board): the one its README argues
            hw_name, (columns, rows) = stated
            grid = (columns, rows)
            chip = f"{hw_name}, {columns}x{rows} grid (stated for this shipped capture: it names no chip or no board)"
        else:
            hw_name, grid, chip = choose_hardware(report, hw or None)
    except IngestError:
        raise IngestError(
            f"{source.label}: the report does not say which chip it ran on; choose it under 'Predict on'"
        ) from None
    result = improve_report(report, hw_name, grid, chip, progress=progress)
    return Analysis(source, report, result)


def _us(ns: float | None) -> float | None:
    return round(ns / 1e3, 1) if ns is not None else None


def why_not(op: Improvement) -> str:
    """The op's best candidate, or the reason it has none (the last clause of its note)."""
    if op.best_candidate:
        return op.best_candidate
    return op.note.split("; ")[-1] if op.note else "not predicted"


def ops_frame(result: ImproveReport) -> pd.DataFrame:
    """One row per op, biggest predicted gain first (``result.ops``' order): key, calls, measured, as-run and
    best us per call, gain ms over the run, and the best candidate or why there is none. A missing figure
    is None in an object column (an empty cell, never NaN)."""
    rows = [
        {
            "op": o.key,
            "calls": o.calls,
            "measured us": _us(o.measured_ns),
            "as run us": _us(o.ran_ns),
            "best us": _us(o.best_ns),
            "gain ms": round(o.gain_ns / 1e6, 3) if o.gain_ns is not None else None,
            "best candidate / why not": why_not(o),
        }
        for o in result.ops
    ]
    frame: pd.DataFrame = pd.DataFrame(rows, columns=OPS_COLUMNS, dtype=object)
    return frame


def op_codes(analysis: Analysis) -> tuple[OpCodeCoverage, ...]:
    """The report's coverage by op code (``op_coverage``), most device time first."""
    return op_code_coverage(analysis.report, analysis.measurements())


def _pct(x: float | None) -> float | None:
    return round(100 * x, 1) if x is not None else None


def coverage_frame(analysis: Analysis) -> pd.DataFrame:
    """One row per op code of the report (``op_codes``): rows, device ms, share of the report's device time,
    the share of its time predicted, the error on that time (predicted vs measured) and the kernel it was
    costed as, or why not. A missing figure is None (an empty cell, never NaN)."""
    rows = []
    for c in op_codes(analysis):
        what = ", ".join(c.kernels)
        if c.reason:
            what = f"{what}; rest: {c.reason}" if what else c.reason
        rows.append(
            {
                "op code": c.op_code,
                "rows": c.rows,
                "device ms": round(c.device_ns / 1e6, 3),
                "share %": _pct(c.share),
                "predicted %": _pct(c.predicted_share),
                "error %": _pct(c.error),
                "kernel / why not": what,
            }
        )
    frame: pd.DataFrame = pd.DataFrame(rows, columns=COVERAGE_COLUMNS, dtype=object)
    return frame


def summary_lines(analysis: Analysis) -> list[str]:
    """How the chip was told, the model's coverage of the report and the totals (as ``improve`` prints), and the
    unusable rows left out (read with --skip-bad-rows), counted and grouped by reason."""
    r = analysis.result
    lines = [f"{analysis.source.label}: predicted on {r.chip}", *coverage_lines(r.coverage)]
    total = r.totals_line()
    bad = analysis.report.bad
    left_out = (
        [f"skipped {len(bad)} unusable row{'s' if len(bad) > 1 else ''} (--skip-bad-rows):", *group_issues(list(bad))]
        if bad
        else []
    )
    return [*lines, total, *left_out]


# ---- one op in the explorer ---------------------------------------------------------------------------

ProblemKey = tuple[object, ...]


def problem_key(hw_name: str, problem: Problem) -> ProblemKey:
    """What the explorer's inputs say of a problem: hardware, kernel, shape, data format (the first
    tensor's), fidelity and program options. Two problems of one key are the same explorer problem."""
    first = problem.program.tensors[0].name
    return (
        hw_name,
        problem.program.name,
        problem.shape,
        problem.data_format(first),
        problem.fidelity,
        tuple(sorted(problem.options)),
    )


@dataclass(frozen=True, slots=True)
class MeasuredOp:
    """An op of a report as the Measure chart marks it: measured per call beside its prediction as it ran,
    shown while the explorer shows the problem of ``key``."""

    label: str
    candidate: str
    shape: str
    predicted_us: float
    measured_us: float
    key: ProblemKey


@dataclass(frozen=True, slots=True)
class OpenedOp:
    """What the explorer is given for an op (its ``ExplorerState`` inputs), what it cannot express of the
    op (``notes``) and the op's point for the Measure chart (None when it was not predicted as it ran)."""

    inputs: dict[str, object]
    notes: tuple[str, ...] = field(default=())
    marker: MeasuredOp | None = None


class CannotOpen(ValueError):
    """An op the explorer cannot show (the model does not predict it); the message says why."""


def open_op(op: Improvement, hw_name: str, grid: tuple[int, int] | None, activations: list[str]) -> OpenedOp:
    """The explorer's inputs for ``op``'s problem on ``hw_name`` (a shipped hardware name) and the notes on
    what they leave out: per-tensor formats other than the first tensor's, fp32 accumulation, optional
    tensors (bias), L1 placements, an activation the explorer does not offer, and the capture's worker grid
    when it is smaller than the chip's (the explorer solves on the whole chip). CannotOpen when the op has
    no problem."""
    problem = op.problem
    if problem is None:
        raise CannotOpen(f"{op.key} cannot be opened in the explorer: {why_not(op)}")
    first = problem.program.tensors[0].name
    dtype = problem.data_format(first)
    notes = _left_out(problem, dtype.value)
    activation = problem.activation or "none"
    if activation not in activations:
        notes.append(f"activation {activation}")
        activation = "none"
    hw = load_hardware(hw_name)
    full = (hw.grid.columns, hw.grid.rows)
    if grid is not None and grid != full:
        notes.append(
            f"the capture's {grid[0]}x{grid[1]} worker grid: the explorer solves on {hw_name}'s whole "
            f"{full[0]}x{full[1]} grid (it cannot restrict the grid)"
        )
    inputs: dict[str, object] = {
        "hw": hw_name,
        "kernel": op.kernel,
        "shape": problem.shape_text,
        "dtype": dtype.value,
        "fidelity": problem.fidelity.value,
        "program_options": sorted(problem.options),
        "activation": activation,
        "target": problem.target.value,
    }
    marker = None
    if op.ran_ns is not None and op.ran_ns > 0 and op.measured_ns > 0:
        marker = MeasuredOp(
            op.key,
            op.ran_candidate,
            problem.shape_text,
            op.ran_ns / 1e3,
            op.measured_ns / 1e3,
            problem_key(hw_name, problem),
        )
    return OpenedOp(inputs, tuple(notes), marker)


def _left_out(problem: Problem, dtype: str) -> list[str]:
    """What of ``problem`` the explorer's inputs (one data format, no accumulation, bias or placement
    choice) cannot express."""
    notes = [f"{t} in {f.value}" for t, f in problem.formats if f.value != dtype and problem.is_enabled(t)]
    if problem.fp32_acc:
        notes.append("fp32 accumulation (fp32_dest_acc_en)")
    notes += [f"the {t} operand" for t in sorted(problem.enabled)]
    notes += [f"{t} in {p.value}" for t, p in problem.placements if p.value != "dram"]
    return notes
