"""The statistics of the model's predictions against measured times, whatever kernel they time.

* ``summarise``: of (predicted, measured) pairs, the count, the median and 90th-percentile absolute error
  ``|100 * (predicted - measured) / measured|`` and Spearman's rank correlation of the two (Pearson's of
  their tie-averaged ranks): ``Summary``;
* ``summarise_errors``: of signed errors (None: a row without a prediction), the count, the median and worst
  absolute error and the median signed error (the model's bias: negative is optimistic), with the rows not
  predicted counted: ``ErrorSummary``;
* ``log_loss``: the loss the calibration fits minimise, ``mean(log(predicted / measured)^2)`` over the
  predicted rows plus 1 per row without a prediction;
* ``pct`` and ``rounded``: a figure as the reports print it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def rounded(x: float | None, digits: int = 2) -> float | None:
    return None if x is None else round(x, digits)


def pct(value: float | None, spec: str = "") -> str:
    """An error figure in percent, or ``-`` where there is none (no scored row)."""
    return "-" if value is None else f"{value:{spec}}%"


@dataclass(frozen=True, slots=True)
class Summary:
    n: int
    median_abs_err_pct: float | None
    p90_abs_err_pct: float | None
    spearman: float | None

    def to_json(self) -> dict[str, object]:
        return {
            "n": self.n,
            "median_abs_err_pct": rounded(self.median_abs_err_pct),
            "p90_abs_err_pct": rounded(self.p90_abs_err_pct),
            "spearman": rounded(self.spearman, 4),
        }


def _ranks(v: np.ndarray) -> np.ndarray:
    """0-based ranks of ``v``, ties sharing the mean of their ranks."""
    order = np.argsort(v, kind="stable")
    ordered = v[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]  # the first of each run of equal values
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], len(v)] - 1
    out = np.empty(len(v))
    out[order] = ((first + last) / 2)[np.cumsum(starts) - 1]
    return out


def _spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rank correlation (Pearson's of the tie-averaged ranks); None under 3 pairs or without
    spread."""
    if len(xs) < 3:
        return None
    rx, ry = _ranks(np.asarray(xs, dtype=float)), _ranks(np.asarray(ys, dtype=float))
    dx, dy = rx - rx.mean(), ry - ry.mean()
    var = math.sqrt(float((dx * dx).sum()) * float((dy * dy).sum()))
    return float((dx * dy).sum()) / var if var else None


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]


def summarise(pairs: list[tuple[float, float]]) -> Summary:
    """(predicted, measured) pairs -> error summary."""
    if not pairs:
        return Summary(0, None, None, None)
    errors = [abs(100.0 * (p - m) / m) for p, m in pairs]
    return Summary(
        len(pairs), statistics.median(errors), _p90(errors), _spearman([p for p, _ in pairs], [m for _, m in pairs])
    )


@dataclass(frozen=True, slots=True)
class ErrorSummary:
    """Signed errors of some rows: how many, the median and worst absolute error, and the median signed
    error (the model's bias: negative is optimistic). ``illegal`` counts rows the model could not predict."""

    n: int
    median_abs_err_pct: float | None
    worst_abs_err_pct: float | None
    median_err_pct: float | None
    illegal: int = 0

    def to_json(self) -> dict[str, object]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 2)

        return {
            "n": self.n,
            "median_abs_err_pct": r(self.median_abs_err_pct),
            "worst_abs_err_pct": r(self.worst_abs_err_pct),
            "median_err_pct": r(self.median_err_pct),
            "illegal": self.illegal,
        }


def summarise_errors(errors: list[float | None]) -> ErrorSummary:
    scored = [e for e in errors if e is not None]
    if not scored:
        return ErrorSummary(0, None, None, None, len(errors))
    absolute = [abs(e) for e in scored]
    return ErrorSummary(
        len(scored), statistics.median(absolute), max(absolute), statistics.median(scored), len(errors) - len(scored)
    )


def log_loss(predictions: Sequence[tuple[float | None, float]]) -> float:
    """Mean ``log(predicted/measured)^2`` over the (predicted, measured) pairs with a prediction, plus 1 per
    pair without one (the model finds the row illegal)."""
    pairs = [(p, m) for p, m in predictions if p]
    if not pairs:
        return math.inf
    return sum(math.log(p / m) ** 2 for p, m in pairs) / len(pairs) + len(predictions) - len(pairs)
