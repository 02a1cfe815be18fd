"""How well the calibrated model predicts real captures it was not fitted on, beside the uncalibrated model
and the two baselines (``baselines.py``), on the same folds: ``loom-explorer accuracy --by
capture|family|chip`` (``--folds``).

The rows (``calibration_rows``: every op of every shipped capture the model predicts) are split into folds:

* ``capture``: leave one capture out: each capture's rows predicted from a fit on every other capture;
* ``network``: leave one network out (``NETWORKS``): stricter, as two captures of one network (CLIP on two
  chips, two OFT runs) share their shapes;
* ``shape``: leave shapes out: the distinct shapes (``CalibrationRow.shape_key``) of each family dealt into
  ``SHAPE_FOLDS`` groups by a hash of the shape, each group's rows predicted from a fit on the others;
* ``chip``: leave one architecture out (Wormhole from Blackhole, and back).

Each method is fitted on a fold's training rows and predicts its held-out rows: ``model`` (the capture
calibration, ``term_calibration.gated_fit``: its gate too sees only the fold's training rows), ``roofline``,
``learned``; ``uncalibrated`` is the model
at the hardware files' costs (nothing fitted). The held-out predictions of every fold together are scored per
group (``--by``): rows, median and 90th-percentile |predicted / measured - 1|, and the total predicted over the
total measured device time, minus 1.

``check_scores`` scores the shipped calibration (fitted on the ``fit`` captures only) on the ``check``
captures (``data.CAPTURE_ROLES``), which no fit has seen.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from loom_explorer.accuracy.baselines import Predictor, fit_learned, fit_roofline
from loom_explorer.accuracy.calibration_row import CalibrationRow
from loom_explorer.accuracy.progress import Progress
from loom_explorer.accuracy.term_calibration import SHIPPED_FACTORS, TermScales, fit_term_scales, gated_fit, p90
from loom_explorer.data import CAPTURE_NETWORKS

METHODS = ("model", "uncalibrated", "roofline", "learned")
FOLDS = ("capture", "network", "shape", "chip")
GROUPINGS = ("capture", "family", "chip")
SHAPE_FOLDS = 10
MIN_FAMILY_ROWS = 20  # a family with fewer rows is scored but not judged (acceptance, docs)


class _Memo:
    """``fit_term_scales`` of a set of rows (with ``factors``), each set fitted once: the gate's inner folds of
    one outer fold are the outer folds of another (leave out captures a and b, in either order)."""

    def __init__(self, factors: tuple[str, ...] = SHIPPED_FACTORS) -> None:
        self.factors = factors
        self.fits: dict[frozenset[int], TermScales] = {}

    def __call__(self, rows: Sequence[CalibrationRow]) -> TermScales:
        key = frozenset(map(id, rows))
        if key not in self.fits:
            self.fits[key] = fit_term_scales(rows, factors=self.factors)
        return self.fits[key]


def _fit_model(rows: Sequence[CalibrationRow], memo: _Memo | None = None) -> Predictor:
    return gated_fit(rows, memo or _Memo()).predict_ns


def _uncalibrated(rows: Sequence[CalibrationRow]) -> Predictor:
    return lambda row: row.uncalibrated_ns


FITS: dict[str, Callable[[Sequence[CalibrationRow]], Predictor]] = {
    "model": _fit_model,
    "uncalibrated": _uncalibrated,
    "roofline": fit_roofline,
    "learned": fit_learned,
}


def fold_of(fold: str) -> Callable[[CalibrationRow], str]:
    """The fold a row is held out in, for the folding ``fold`` (module docstring)."""
    if fold == "capture":
        return lambda r: r.capture
    if fold == "network":
        return lambda r: CAPTURE_NETWORKS[r.capture]
    if fold == "chip":
        return lambda r: r.arch
    if fold == "shape":
        return lambda r: f"{int(hashlib.sha256(r.shape_key.encode()).hexdigest(), 16) % SHAPE_FOLDS}"
    raise ValueError(f"folds {fold!r}: expected one of {', '.join(FOLDS)}")


def group_of(grouping: str) -> Callable[[CalibrationRow], str]:
    if grouping not in GROUPINGS:
        raise ValueError(f"--by {grouping!r}: expected one of {', '.join(GROUPINGS)}")
    return {"capture": lambda r: r.capture, "family": lambda r: r.family, "chip": lambda r: r.arch}[grouping]


def held_out(
    rows: Sequence[CalibrationRow],
    fold: str,
    methods: Sequence[str] = METHODS,
    progress: Progress | None = None,
    factors: tuple[str, ...] = SHIPPED_FACTORS,
) -> dict[str, list[float]]:
    """Per method, every row's prediction from a fit on the folds it is not in (in ``rows``' order); the
    model's fit with the kernel's and architecture's own factors ``factors`` names."""
    key = fold_of(fold)
    folds = sorted({key(r) for r in rows})
    out = {m: [0.0] * len(rows) for m in methods}
    if progress:
        progress.phase(f"cross-validating (leave one {fold} out)", len(folds))
    memo = _Memo(factors)
    for done, k in enumerate(folds):
        if progress:
            progress.update(done)
        train = [r for r in rows if key(r) != k]
        test = [i for i, r in enumerate(rows) if key(r) == k]
        for m in methods:
            predict = _fit_model(train, memo) if m == "model" else FITS[m](train)
            for i in test:
                out[m][i] = predict(rows[i])
    if progress:
        progress.update(len(folds))
    return out


@dataclass(frozen=True, slots=True)
class Score:
    """One method's error on one group of rows."""

    rows: int
    measured_ns: float
    predicted_ns: float
    median_abs_err: float
    p90_abs_err: float

    @property
    def total_err(self) -> float:
        return self.predicted_ns / self.measured_ns - 1

    def as_json(self) -> dict[str, float | int]:
        return {
            "rows": self.rows,
            "measured_ns": self.measured_ns,
            "predicted_ns": self.predicted_ns,
            "median_abs_err": self.median_abs_err,
            "p90_abs_err": self.p90_abs_err,
            "total_err": self.total_err,
        }


def score(pairs: Sequence[tuple[float, float]]) -> Score:
    """The score of ``(predicted_ns, measured_ns)`` pairs."""
    errors = [abs(p / m - 1) for p, m in pairs]
    return Score(
        len(errors), sum(m for _, m in pairs), sum(p for p, _ in pairs), statistics.median(errors), p90(errors)
    )


@dataclass(frozen=True, slots=True)
class GroupScores:
    group: str
    by_method: tuple[tuple[str, Score], ...]

    def of(self, method: str) -> Score:
        return dict(self.by_method)[method]


def scores_by(rows: Sequence[CalibrationRow], predictions: dict[str, list[float]], grouping: str) -> list[GroupScores]:
    """Each group's score per method (module docstring), then ``all``."""
    key = group_of(grouping)
    groups = sorted({key(r) for r in rows})

    def scored(indices: list[int]) -> GroupScores:
        return GroupScores(
            "",
            tuple((m, score([(p[i], rows[i].measured_ns) for i in indices])) for m, p in predictions.items()),
        )

    out = []
    for g in [*groups, "all"]:
        indices = [i for i, r in enumerate(rows) if g == "all" or key(r) == g]
        out.append(GroupScores(g, scored(indices).by_method))
    return out


def check_scores(
    rows: Sequence[CalibrationRow], grouping: str, factors: tuple[str, ...] = SHIPPED_FACTORS
) -> list[GroupScores]:
    """Every method fitted on the ``fit`` captures' rows and scored on the ``check`` captures' rows."""
    train = [r for r in rows if r.role == "fit"]
    test = [r for r in rows if r.role == "check"]
    fitted = {m: _fit_model(train, _Memo(factors)) if m == "model" else FITS[m](train) for m in METHODS}
    predictions = {m: [predict(r) for r in test] for m, predict in fitted.items()}
    return scores_by(test, predictions, grouping)
