"""How much of a capture's device time the model answers for, and how well.

Over every device row of an ``ops_perf_results`` CSV (signposts and host ops left out), with ``T`` the summed
``DEVICE KERNEL DURATION``:

* the matmul and attention time ``T_mm`` is that of the op codes naming a matmul or an attention (a word
  some family gives, ``op_mapping.op_words``: e.g. ``MinimalMatmulOp``, ``RingJointSDPADeviceOperation``),
  ingested or not;
* the predicted time ``T_p`` is the measured duration of every row the model predicted;
* the shares are ``T_p / T`` and, for the matmul and attention rows alone (those predicted as a kernel of a
  family that gives such words, ``op_mapping.worded_kernels``), ``T_p,mm / T_mm``;
* the error on it is ``sum(predicted) / T_p - 1`` over the predicted rows (the whole predicted time against
  the measured), beside the median and worst of the per-row ``|predicted / measured - 1|``; the same per
  kernel.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from loom_explorer.accuracy.ingest import IngestReport
from loom_explorer.accuracy.op_mapping import op_words, worded_kernels
from loom_explorer.store import Measurement


@dataclass(frozen=True, slots=True)
class Coverage:
    device_ns: float  # T: every device row
    matmul_attention_ns: float  # T_mm
    predicted_measured_ns: float  # T_p: measured time of the predicted rows
    predicted_ns: float  # what the model predicts for those rows
    predicted_rows: int
    ingested_rows: int
    row_errors: tuple[float, ...]  # predicted / measured - 1 per predicted row
    predicted_matmul_attention_ns: float = 0.0  # T_p,mm: measured time of the predicted matmul/attention rows
    by_kernel: tuple[tuple[str, Coverage], ...] = ()  # the same over each kernel's predicted rows

    @property
    def share(self) -> float:
        return self.predicted_measured_ns / self.device_ns if self.device_ns else 0.0

    @property
    def matmul_attention_share(self) -> float:
        return self.matmul_attention_ns / self.device_ns if self.device_ns else 0.0

    @property
    def share_of_matmul_attention(self) -> float:
        return self.predicted_matmul_attention_ns / self.matmul_attention_ns if self.matmul_attention_ns else 0.0

    @property
    def total_error(self) -> float | None:
        return self.predicted_ns / self.predicted_measured_ns - 1 if self.predicted_measured_ns else None

    @property
    def median_error(self) -> float | None:
        return statistics.median(abs(e) for e in self.row_errors) if self.row_errors else None

    @property
    def worst_error(self) -> float | None:
        return max((abs(e) for e in self.row_errors), default=None)

    def as_json(self) -> dict[str, object]:
        return {
            "device_ns": self.device_ns,
            "matmul_attention_ns": self.matmul_attention_ns,
            "predicted_measured_ns": self.predicted_measured_ns,
            "predicted_ns": self.predicted_ns,
            "predicted_rows": self.predicted_rows,
            "ingested_rows": self.ingested_rows,
            "share": self.share,
            "share_of_matmul_attention": self.share_of_matmul_attention,
            "total_error": self.total_error,
            "median_abs_error": self.median_error,
            "worst_abs_error": self.worst_error,
            "by_kernel": {
                k: {
                    "rows": c.predicted_rows,
                    "measured_ns": c.predicted_measured_ns,
                    "predicted_ns": c.predicted_ns,
                    "total_error": c.total_error,
                    "median_abs_error": c.median_error,
                    "worst_abs_error": c.worst_error,
                }
                for k, c in self.by_kernel
            },
        }


def is_matmul_or_attention(op_code: str) -> bool:
    name = op_code.split("::")[-1].lower()
    return any(word in name for word in op_words())


def coverage_of(
    report: IngestReport, measurements: Sequence[Measurement], collectives: Sequence[Measurement] = ()
) -> Coverage:
    """The coverage of ``report`` by ``measurements`` (``report_measurements`` of it; module docstring) and
    by the predictions of its collective rows (``collective_ingest``)."""
    predicted = [m for m in [*measurements, *collectives] if m.predicted_ns is not None and m.measured_ns]
    return _coverage(
        predicted,
        device_ns=sum(ns for _, ns in report.device_ns_by_op),
        matmul_attention_ns=sum(ns for op, ns in report.device_ns_by_op if is_matmul_or_attention(op)),
        ingested_rows=len(report.ops) + len(report.collectives),
        predicted_matmul_attention_ns=sum(m.measured_ns or 0.0 for m in predicted if m.kernel in worded_kernels()),
        by_kernel=tuple(
            (k, _coverage([m for m in predicted if m.kernel == k])) for k in sorted({m.kernel for m in predicted})
        ),
    )


def _coverage(
    predicted: list[Measurement],
    device_ns: float = 0.0,
    matmul_attention_ns: float = 0.0,
    ingested_rows: int = 0,
    predicted_matmul_attention_ns: float = 0.0,
    by_kernel: tuple[tuple[str, Coverage], ...] = (),
) -> Coverage:
    return Coverage(
        device_ns=device_ns,
        matmul_attention_ns=matmul_attention_ns,
        predicted_measured_ns=sum(m.measured_ns or 0.0 for m in predicted),
        predicted_ns=sum(m.predicted_ns or 0.0 for m in predicted),
        predicted_rows=len(predicted),
        ingested_rows=ingested_rows,
        row_errors=tuple((m.predicted_ns or 0.0) / (m.measured_ns or 1.0) - 1 for m in predicted),
        predicted_matmul_attention_ns=predicted_matmul_attention_ns,
        by_kernel=by_kernel,
    )


def coverage_lines(c: Coverage) -> list[str]:
    """The coverage as the lines ``ingest`` prints."""
    lines = [
        f"device time {c.device_ns / 1e6:.3f} ms; matmul and attention {100 * c.matmul_attention_share:.1f}% "
        f"of it; predicted {c.predicted_rows} of {c.ingested_rows} ingested rows: {100 * c.share:.1f}% of the "
        f"device time, {100 * c.share_of_matmul_attention:.1f}% of the matmul and attention time"
    ]
    for label, k in (("all predicted", c), *c.by_kernel):
        if k.total_error is not None and k.median_error is not None and k.worst_error is not None:
            lines.append(
                f"error, {label} ({k.predicted_rows} rows, {k.predicted_measured_ns / 1e6:.3f} ms measured): "
                f"{100 * k.total_error:+.1f}% in total; per row median {100 * k.median_error:.1f}%, "
                f"worst {100 * k.worst_error:.1f}%"
            )
    return lines
