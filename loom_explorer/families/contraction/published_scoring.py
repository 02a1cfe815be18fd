"""The statistics of the model against the published matmul measurements (``published`` reads and predicts
the rows; ``accuracy/scoring.py`` holds the statistics every kernel shares): overall, per card and per regime;
per config kind (``errors_by_kind``); per pair of a hand-tuned row and the out-of-box row of the same shape,
dtype and fidelity, measured and predicted speed-up (``speedup_pairs``); the three-constant roofline baseline
``max(ideal_compute / e_c, dram_bytes / (bw * e_d)) + t0`` (``fit_baseline``: grid search over ``e_c``,
``e_d``, ``t0`` in closed form, least squares of the relative error), scored leaving one shape out
(``roofline_cross_validated``); and the tables ``loom-explorer accuracy`` prints (``accuracy_tables``,
``accuracy_json``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from loom_explorer.accuracy.csv_input import RowIssue
from loom_explorer.accuracy.scoring import Summary, rounded, summarise
from loom_explorer.families.contraction.published import KINDS, Report, Row


@dataclass(frozen=True, slots=True)
class Baseline:
    compute_eff: float
    dram_eff: float
    overhead_ns: float

    def predict(self, row: Row) -> float:
        return max(row.ideal_ns / self.compute_eff, row.dram_ns / self.dram_eff) + self.overhead_ns


def fit_baseline(rows: list[Row]) -> Baseline:
    """Three-constant roofline fitted on ``rows`` (module docstring): for each grid point ``(e_c, e_d)``,
    ``t0 = max(0, sum((y - b) / y^2) / sum(1 / y^2))`` minimises ``sum(((b + t0 - y) / y)^2)`` with
    ``b = max(ideal / e_c, dram / e_d)``; the point of least loss is kept (the first on a tie)."""
    ideal = np.array([r.ideal_ns for r in rows])
    dram = np.array([r.dram_ns for r in rows])
    ys = np.array([r.measured_ns for r in rows])
    inv2 = 1.0 / ys**2
    den = float(inv2.sum())
    best: tuple[float, Baseline] | None = None
    for ec in [x / 100 for x in range(20, 101, 2)]:
        compute = ideal / ec
        for ed in [x / 100 for x in range(10, 101, 3)]:
            base = np.maximum(compute, dram / ed)
            t0 = max(0.0, float(((ys - base) * inv2).sum()) / den)
            loss = float((((base + t0 - ys) / ys) ** 2).sum())
            if best is None or loss < best[0]:
                best = (loss, Baseline(ec, ed, t0))
    assert best is not None
    return best[1]


def speedup_pairs(rows: list[Row]) -> list[tuple[Row, Row]]:
    """(hand-tuned, out-of-box) rows of the same card, shape, dtype and fidelity."""
    oob = {(r.card, r.shape, r.dtype, r.fidelity): r for r in rows if r.kind == "out_of_box"}
    return [
        (r, oob[(r.card, r.shape, r.dtype, r.fidelity)])
        for r in rows
        if r.kind == "manual" and (r.card, r.shape, r.dtype, r.fidelity) in oob
    ]


@dataclass(frozen=True, slots=True)
class ErrorsByKind:
    """Error summaries of one set of predictions: over every row, and per config kind (manual, out_of_box)."""

    all: Summary
    by_kind: dict[str, Summary]

    def to_json(self) -> dict[str, object]:
        return {"all": self.all.to_json(), "by_kind": {k: s.to_json() for k, s in self.by_kind.items()}}


def errors_by_kind(rows: list[Row], predicted: Sequence[float | None] | None = None) -> ErrorsByKind:
    """Summaries of ``predicted`` (aligned with ``rows``; default each row's own prediction) against the
    measurements; rows without a prediction are left out."""
    values = list(predicted) if predicted is not None else [r.predicted_ns for r in rows]

    def pairs(kind: str | None) -> list[tuple[float, float]]:
        return [(p, r.measured_ns) for r, p in zip(rows, values, strict=True) if p and kind in (None, r.kind)]

    return ErrorsByKind(
        summarise(pairs(None)), {k: summarise(pairs(k)) for k in KINDS if any(r.kind == k for r in rows)}
    )


def roofline_cross_validated(rows: list[Row]) -> list[float | None]:
    """Leave one shape out: each row predicted by a roofline (``fit_baseline``) fitted on the rows of its card
    with another shape (None when its card has no other shape)."""
    predicted: list[float | None] = [None] * len(rows)
    for card, shape in {(r.card, r.shape) for r in rows}:
        train = [r for r in rows if r.card == card and r.shape != shape]
        if train:
            fit = fit_baseline(train)
            for i, r in enumerate(rows):
                if r.card == card and r.shape == shape:
                    predicted[i] = fit.predict(r)
    return predicted


@dataclass(frozen=True, slots=True)
class CardComparison:
    """One card's rows: the model's errors (in sample: the constants as given; and, when asked for, leave one
    shape out: the constants refitted without each shape) beside the three-constant roofline's, fitted on
    the same rows the same ways."""

    card: str
    fit: Baseline  # the roofline on every row of the card
    model: ErrorsByKind
    roofline: ErrorsByKind  # in sample
    roofline_cross_validated: ErrorsByKind
    model_cross_validated: ErrorsByKind | None = None


@dataclass(frozen=True, slots=True)
class Speedup:
    """Hand-tuned over automatic config, ``auto_ns / tuned_ns``, measured and predicted (rounded to 3 digits);
    ``error_pct = 100 * (predicted - measured) / measured`` (2 digits)."""

    tuned: Row
    measured: float
    predicted: float
    error_pct: float


@dataclass(frozen=True, slots=True)
class AccuracyTables:
    """What ``accuracy`` reports: error summaries over every scored row, per card and per regime, the
    comparison with the roofline per card and the speedups (``accuracy_tables``)."""

    rows: list[Row]
    summary: Summary
    by_card: dict[str, Summary]
    by_regime: dict[str, Summary]
    comparisons: list[CardComparison]
    speedups: list[Speedup]
    speedup_median_abs_err_pct: float | None
    skipped: list[RowIssue]


def accuracy_tables(report: Report, cross_validated: dict[str, ErrorsByKind] | None = None) -> AccuracyTables:
    """The summaries, comparisons and speedups of ``report`` (``AccuracyTables``); ``cross_validated``: the
    model's leave-one-shape-out errors per card, when they were computed (``published_calibrate.cross_validate``)."""
    ok = [r for r in report.rows if r.predicted_ns is not None]

    def pairs(rows: list[Row]) -> list[tuple[float, float]]:
        return [(r.predicted_ns, r.measured_ns) for r in rows if r.predicted_ns is not None]

    comparisons = []
    for card in sorted({r.card for r in ok}):
        mine = [r for r in ok if r.card == card]
        fit = fit_baseline(mine)
        comparisons.append(
            CardComparison(
                card,
                fit,
                errors_by_kind(mine),
                errors_by_kind(mine, [fit.predict(r) for r in mine]),
                errors_by_kind(mine, roofline_cross_validated(mine)),
                (cross_validated or {}).get(card),
            )
        )
    speedups = []
    for tuned, auto in speedup_pairs(ok):
        assert tuned.predicted_ns is not None and auto.predicted_ns is not None
        measured, predicted = auto.measured_ns / tuned.measured_ns, auto.predicted_ns / tuned.predicted_ns
        speedups.append(
            Speedup(tuned, round(measured, 3), round(predicted, 3), round(100 * (predicted - measured) / measured, 2))
        )
    return AccuracyTables(
        rows=report.rows,
        summary=summarise(pairs(ok)),
        by_card={c: summarise(pairs([r for r in ok if r.card == c])) for c in sorted({r.card for r in ok})},
        by_regime={
            g: summarise(pairs([r for r in ok if r.regime == g])) for g in ("small", "compute-bound", "dram-bound")
        },
        comparisons=comparisons,
        speedups=speedups,
        speedup_median_abs_err_pct=rounded(statistics.median(abs(s.error_pct) for s in speedups)) if speedups else None,
        skipped=report.skipped,
    )


def accuracy_json(tables: AccuracyTables) -> dict[str, object]:
    """The ``accuracy --json`` contract: rows, summaries (overall, per card, per regime), the comparison with
    the fitted roofline per card, and the hand-tuned-over-automatic speedups."""
    return {
        "rows": [
            {
                **r.source,
                "candidate": r.candidate,
                "regime": r.regime,
                "predicted_ns": rounded(r.predicted_ns, 1),
                "measured_ns": r.measured_ns,
                "error_pct": rounded(r.error_pct),
                "note": r.note,
                "hardware": r.hardware,
                "hardware_sha256": r.hardware_sha256,
            }
            for r in tables.rows
        ],
        "summary": tables.summary.to_json(),
        "by_card": {c: s.to_json() for c, s in tables.by_card.items()},
        "by_regime": {g: s.to_json() for g, s in tables.by_regime.items()},
        "versus_roofline": {
            c.card: {
                "roofline_fit": {
                    "compute_eff": c.fit.compute_eff,
                    "dram_eff": c.fit.dram_eff,
                    "overhead_ns": round(c.fit.overhead_ns, 1),
                },
                "model": c.model.to_json(),
                "roofline": c.roofline.to_json(),
                "roofline_cross_validated": c.roofline_cross_validated.to_json(),
                "model_cross_validated": c.model_cross_validated.to_json() if c.model_cross_validated else None,
            }
            for c in tables.comparisons
        },
        "speedups": {
            "pairs": [
                {
                    "card": s.tuned.card,
                    "M": s.tuned.shape[0],
                    "K": s.tuned.shape[1],
                    "N": s.tuned.shape[2],
                    "dtype": s.tuned.dtype,
                    "fidelity": s.tuned.fidelity,
                    "measured": s.measured,
                    "predicted": s.predicted,
                    "error_pct": s.error_pct,
                }
                for s in tables.speedups
            ],
            "median_abs_err_pct": tables.speedup_median_abs_err_pct,
        },
        "skipped": [str(s) for s in tables.skipped],
    }
