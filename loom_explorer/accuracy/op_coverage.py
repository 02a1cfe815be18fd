"""The coverage report of a capture by op code: every op code of its device rows with how many rows it has,
its device time and share of the capture's, how much of it the model predicts and with what error, and,
for what is not predicted, one reason.

Over the analysed device rows (``IngestReport.device_ns_by_op`` / ``device_rows_by_op``: signposts, host ops
and rows left out of the window are not among them), for op code ``c`` with summed duration ``T_c``:

* ``share = T_c / T`` (``T`` the capture's device time);
* the predicted rows are those with a prediction (``Measurement.predicted_ns``); ``predicted share =
  measured time of those rows / T_c``; ``error = sum(predicted) / sum(measured) - 1`` over them;
* the reason a row is not predicted is its skip reason (``SkippedRow``), or for an ingested row the model
  did not predict, the clause of its note that says why (``not predicted: ...`` or the constraint the
  config violates). An op code with rows of several reasons names the commonest, with its count and how many
  other reasons there are (``reason (12 of 15 rows; 1 other reason)``).
* ``kernels``: the kernels its predicted rows were costed as (whose family's error it is).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from loom_explorer.accuracy.collective_ingest import CollectivePredictions
from loom_explorer.accuracy.ingest import NO_DURATION_REASON, SIGNPOST_REASON, IngestReport
from loom_explorer.store import Measurement


@dataclass(frozen=True, slots=True)
class OpCodeCoverage:
    """One op code of a capture (module docstring)."""

    op_code: str
    rows: int
    device_ns: float
    share: float  # of the capture's device time
    predicted_rows: int
    predicted_measured_ns: float
    predicted_ns: float
    kernels: tuple[str, ...]
    reason: str  # why the rows not predicted are not ("" when every row is predicted)

    @property
    def predicted_share(self) -> float:
        return self.predicted_measured_ns / self.device_ns if self.device_ns else 0.0

    @property
    def error(self) -> float | None:
        return self.predicted_ns / self.predicted_measured_ns - 1 if self.predicted_measured_ns else None

    @property
    def status(self) -> str:
        if self.predicted_rows == 0:
            return "skipped"
        return "predicted" if self.predicted_rows == self.rows else "partly"

    def as_json(self) -> dict[str, object]:
        return {
            "op_code": self.op_code,
            "rows": self.rows,
            "device_ns": self.device_ns,
            "share": self.share,
            "status": self.status,
            "predicted_rows": self.predicted_rows,
            "predicted_share": self.predicted_share,
            "measured_ns_of_predicted": self.predicted_measured_ns,
            "predicted_ns": self.predicted_ns,
            "error": self.error,
            "kernels": list(self.kernels),
            "reason": self.reason,
        }


def _failure(m: Measurement) -> str:
    """Why an ingested op was not predicted: the clause of its note that says so (else its last clause)."""
    clauses = [c for c in m.note.split("; ") if c]
    for c in clauses:
        if c.startswith("not predicted") or "illegal" in c:
            return c
    return clauses[-1] if clauses else "not predicted"


def one_reason(reasons: Sequence[str]) -> str:
    """The commonest of ``reasons`` (one per row not predicted), with its count when there are others."""
    if not reasons:
        return ""
    counted = Counter(reasons).most_common()
    reason, n = counted[0]
    if len(counted) == 1:
        return reason if n == 1 else f"{reason} ({n} rows)"
    others = len(counted) - 1
    return f"{reason} ({n} of {len(reasons)} rows; {others} other reason{'s' if others > 1 else ''})"


def op_code_coverage(
    report: IngestReport, measurements: Sequence[Measurement], collectives: CollectivePredictions | None = None
) -> tuple[OpCodeCoverage, ...]:
    """Every op code of ``report``'s device rows, most device time first (module docstring); ``measurements``
    are ``report_measurements`` of it, one per ingested op in order (none when nothing was predicted);
    ``collectives`` the predictions of its collective rows (``collective_ingest``)."""
    total = sum(ns for _, ns in report.device_ns_by_op)
    rows = dict(report.device_rows_by_op)
    reasons: dict[str, list[str]] = {}
    for s in report.skipped:
        if s.reason not in (SIGNPOST_REASON, NO_DURATION_REASON):  # rows of no device time
            reasons.setdefault(s.op_code, []).append(s.reason)
    predicted: dict[str, list[Measurement]] = {}
    for op, m in zip(report.ops, measurements, strict=False):
        if m.predicted_ns is not None and m.measured_ns:
            predicted.setdefault(op.op_code, []).append(m)
        else:
            reasons.setdefault(op.op_code, []).append(_failure(m))
    if collectives is not None:
        for c, m in collectives.predicted:
            predicted.setdefault(c.op_code, []).append(m)
        for c, why in collectives.skipped:
            reasons.setdefault(c.op_code, []).append(why)
    if len(measurements) < len(report.ops):  # ingested, never predicted (no chip to predict on)
        for op in report.ops[len(measurements) :]:
            reasons.setdefault(op.op_code, []).append("not predicted (no chip to predict on)")
    out = []
    for code, ns in report.device_ns_by_op:
        done = predicted.get(code, [])
        out.append(
            OpCodeCoverage(
                op_code=code,
                rows=rows.get(code, 0),
                device_ns=ns,
                share=ns / total if total else 0.0,
                predicted_rows=len(done),
                predicted_measured_ns=sum(m.measured_ns or 0.0 for m in done),
                predicted_ns=sum(m.predicted_ns or 0.0 for m in done),
                kernels=tuple(sorted({m.kernel for m in done})),
                reason=one_reason(reasons.get(code, [])),
            )
        )
    return tuple(sorted(out, key=lambda c: (-c.device_ns, c.op_code)))


def _pct(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "-"
    return f"{100 * x:+.1f}%" if signed else f"{100 * x:.1f}%"


def op_code_lines(table: Sequence[OpCodeCoverage]) -> list[str]:
    """The table as ``ingest`` prints it: one line per op code."""
    lines = ["op code                                   rows   device ms  share  predicted  error    kernel / reason"]
    for c in table:
        what = ", ".join(c.kernels)
        if c.reason:
            what = f"{what}; rest: {c.reason}" if what else c.reason
        lines.append(
            f"{c.op_code[:40]:<40} {c.rows:>6} {c.device_ns / 1e6:>11.3f} {_pct(c.share):>6} "
            f"{_pct(c.predicted_share):>10}  {_pct(c.error, signed=True):>7}  {what}"
        )
    return lines


MARKDOWN_HEADER = (
    "| op code | rows | device time | share | predicted | error (predicted vs measured) | kernel; or why not |",
    "|---|---|---|---|---|---|---|",
)


def op_code_markdown(table: Sequence[OpCodeCoverage]) -> list[str]:
    """The table as docs/accuracy.md states it."""
    out = list(MARKDOWN_HEADER)
    for c in table:
        what = ", ".join(f"`{k}`" for k in c.kernels)
        if c.reason:
            why = c.reason.replace("|", "/")
            what = f"{what}; rest: {why}" if what else why
        out.append(
            f"| `{c.op_code}` | {c.rows} | {c.device_ns / 1e6:.3f} ms | {_pct(c.share)} | {_pct(c.predicted_share)} "
            f"| {_pct(c.error, signed=True)} | {what} |"
        )
    return out
