"""The tables of docs/accuracy.md "Real models' profiler captures": every shipped capture read and predicted as
``ingest`` does, on the chip told from it (or, for a capture that does not name it, the chip
``data.CAPTURE_CHIPS`` states), with the share of its device time the model predicts and the error on that
time (uncalibrated: the hardware files' costs, the collectives' first-principles model; ``capture_report``
judges the calibration), overall and (in
brackets) of the default published kernel's ops (``op_mapping.published_kernels``: the
matmuls); then, per capture, the coverage by op code (``op_coverage``). ``python -m
loom_explorer.accuracy.captures_table`` prints them, each op-code table followed by the error per kernel
(the family's kernel the rows were costed as); a test checks the docs state every line.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from loom_explorer.accuracy.collective_calibration import UNCALIBRATED as UNCALIBRATED_COLLECTIVES
from loom_explorer.accuracy.collective_ingest import predict_collectives
from loom_explorer.accuracy.coverage import Coverage, coverage_of
from loom_explorer.accuracy.ingest import choose_hardware, read_ops_perf, report_measurements
from loom_explorer.accuracy.op_coverage import OpCodeCoverage, op_code_coverage, op_code_markdown
from loom_explorer.accuracy.op_mapping import published_kernels
from loom_explorer.accuracy.term_calibration import UNCALIBRATED
from loom_explorer.data import CAPTURE_CHIPS, CAPTURES, capture_path
from loom_explorer.model.collective import CollectiveKind
from loom_explorer.program import load_program
from loom_explorer.program.structure import program_family


def header() -> str:
    """The table's heading row; the bracketed figures are the default published kernel's ops'."""
    ops = published_kernels()[0].ops
    return (
        "| capture | chip and grid told | device time | matmul + attention | predicted: of the device time "
        f"| of the matmul + attention time | error on the predicted time: total ({ops}) | per row: median / worst "
        f"({ops}) |"
    )


@dataclass(frozen=True, slots=True)
class CaptureRow:
    name: str
    what: str
    hardware: str
    grid: tuple[int, int] | None
    coverage: Coverage
    op_codes: tuple[OpCodeCoverage, ...] = ()
    stated: bool = False  # the chip is ``CAPTURE_CHIPS``'s, not told from the capture

    def markdown(self) -> str:
        c = self.coverage
        primary = dict(c.by_kernel).get(published_kernels()[0].kernel)
        grid = f" {self.grid[0]}x{self.grid[1]}" if self.grid else ""
        stated = " (stated: not in the capture)" if self.stated else ""
        total = _pct(c.total_error, signed=True) + (f" ({_pct(primary.total_error, signed=True)})" if primary else "")
        rows = f"{_pct(c.median_error)} / {_pct(c.worst_error)}" + (
            f" ({_pct(primary.median_error)} / {_pct(primary.worst_error)})" if primary else ""
        )
        return (
            f"| `{self.name}` ({self.what}) | {self.hardware}{grid}{stated} | {c.device_ns / 1e6:.2f} ms | "
            f"{_pct(c.matmul_attention_share)} | {_pct(c.share)} | {_pct(c.share_of_matmul_attention)} | "
            f"{total} | {rows} |"
        )


def _pct(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "-"
    return f"{100 * x:+.1f}%" if signed else f"{100 * x:.1f}%"


def capture_row(name: str) -> CaptureRow:
    report = read_ops_perf(capture_path(name))
    stated = CAPTURE_CHIPS.get(name)
    hw, grid = stated if stated else choose_hardware(report)[:2]
    measurements = report_measurements(report, hw, None, grid, calibration=UNCALIBRATED)
    collectives = predict_collectives(report, constants=UNCALIBRATED_COLLECTIVES)
    return CaptureRow(
        name,
        CAPTURES[name],
        hw,
        grid,
        coverage_of(report, measurements, collectives.measurements),
        op_code_coverage(report, measurements, collectives),
        stated is not None,
    )


def table(rows: list[CaptureRow] | None = None) -> list[str]:
    """The summary table, one line per shipped capture."""
    rows = rows if rows is not None else [capture_row(n) for n in CAPTURES]
    heading = header()
    return [heading, "|" + "---|" * heading.count(" | ") + "---|", *(r.markdown() for r in rows)]


def kernel_markdown(c: Coverage) -> list[str]:
    """The error per kernel (the family's shipped kernel the rows were costed as): measured against
    predicted over its predicted rows, in total and per row."""
    out = [
        "| kernel | predicted rows | measured | predicted | error: total | per row: median / worst |",
        "|---|---|---|---|---|---|",
    ]
    for kernel, k in c.by_kernel:
        out.append(
            f"| `{kernel}` | {k.predicted_rows} | {k.predicted_measured_ns / 1e6:.3f} ms "
            f"| {k.predicted_ns / 1e6:.3f} ms | {_pct(k.total_error, signed=True)} "
            f"| {_pct(k.median_error)} / {_pct(k.worst_error)} |"
        )
    return out if c.by_kernel else []


def family_of(kernel: str) -> str:
    """The kernel family of a shipped kernel (``program/structure.py``); ``collective`` for a collective's kind
    (``collective_ingest``: its rows are costed by the collective model, not a kernel)."""
    if kernel in {k.value for k in CollectiveKind}:
        return "collective"
    return program_family(load_program(kernel)).name


def family_markdown(rows: list[CaptureRow]) -> list[str]:
    """The error per kernel family over every shipped capture: the predicted rows of its kernels in all of
    them, measured against predicted in total, and the median and worst of the per-row errors; with the
    captures each family's rows come from."""
    found: dict[str, list[tuple[str, Coverage]]] = {}
    for r in rows:
        for kernel, k in r.coverage.by_kernel:
            found.setdefault(family_of(kernel), []).append((r.name, k))
    out = [
        "| family | captures | predicted rows | measured | predicted | error: total | per row: median / worst |",
        "|---|---|---|---|---|---|---|",
    ]
    for family, parts in sorted(found.items()):
        measured = sum(k.predicted_measured_ns for _, k in parts)
        predicted = sum(k.predicted_ns for _, k in parts)
        errors = sorted(abs(e) for _, k in parts for e in k.row_errors)
        median = statistics.median(errors) if errors else None
        out.append(
            f"| {family} | {len({name for name, _ in parts})} | {sum(k.predicted_rows for _, k in parts)} "
            f"| {measured / 1e6:.3f} ms | {predicted / 1e6:.3f} ms "
            f"| {_pct(predicted / measured - 1 if measured else None, signed=True)} "
            f"| {_pct(median)} / {_pct(errors[-1] if errors else None)} |"
        )
    return out


def op_code_tables(rows: list[CaptureRow]) -> list[str]:
    """Each capture's coverage by op code, under a heading naming it, then the error per kernel."""
    out: list[str] = []
    for r in rows:
        out += ["", f"#### `{r.name}`", "", *op_code_markdown(r.op_codes)]
        kernels = kernel_markdown(r.coverage)
        out += ["", *kernels] if kernels else []
    return out


def document() -> list[str]:
    """Everything docs/accuracy.md states of the shipped captures: the summary, the error per family and the
    op-code tables."""
    rows = [capture_row(n) for n in CAPTURES]
    return [*table(rows), "", *family_markdown(rows), *op_code_tables(rows)]


if __name__ == "__main__":
    print("\n".join(document()))
