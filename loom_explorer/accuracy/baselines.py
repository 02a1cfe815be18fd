"""The two baselines the capture calibration must beat out of sample, fitted on the same folds
(``capture_cv.py``): a fitted roofline per family and a small learned per-family regressor. Neither looks at
the model's schedule; both see only the op's sizes (``CalibrationRow.work_tiles``, ``tensor_bytes``, the
cores it ran on) and names.

**Roofline** (``fit_roofline``): per family, in cycles of the chip's clock,

    t = beta + maxp(w * work_tiles / cores, b * tensor_bytes)

a fixed cost, then the larger of the compute time (the tile iteration space spread over the op's cores at
``w`` cycles per tile) and the memory time (every tensor moved once at ``1 / b`` bytes per cycle); ``maxp(u,
v) = (u^4 + v^4)^(1/4)``, a smooth max so that the fit has a gradient at the ridge. ``beta``, ``w``, ``b``
are fitted in log space with the capture calibration's robust loss (``least_squares``). One set per family
for every chip: the chips differ by their clock (a fit per architecture, tried first, failed far worse out of
sample: a fold often leaves one capture of an architecture to fit it).

**Learned** (``fit_learned``): per family, ridge regression of ``log(measured_ns)`` on ``log work_tiles``,
``log tensor_bytes``, ``log cores`` (each ``log(1 + x)``), their squares and pairwise products, and one-hot
kernel, profiler op code and architecture; features standardised on the fold's rows, ridge ``RIDGE``. It is
the shape of Tenstorrent's own op-runtime predictors (a regression per op trained on measured runs), at the
size of the data here.

Each ``fit_*`` takes the training rows and returns a predictor of a row's time in ns; a family with no
training rows predicts its rows with every family's fit pooled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from loom_explorer.accuracy.calibration_row import CalibrationRow
from loom_explorer.accuracy.least_squares import Matrix, Vector, robust_least_squares

Predictor = Callable[[CalibrationRow], float]
RIDGE = 1.0
SMOOTH_MAX_POWER = 4.0


def _by_family(rows: Sequence[CalibrationRow], fit: Callable[[Sequence[CalibrationRow]], Predictor]) -> Predictor:
    fits = {f: fit([r for r in rows if r.family == f]) for f in sorted({r.family for r in rows})}
    pooled = fit(rows)
    return lambda row: fits.get(row.family, pooled)(row)


# ------------------------------------------------------------------------------------------- roofline


def _smooth_max(u: Vector, v: Vector) -> Vector:
    """``(u^p + v^p)^(1/p)`` for positive ``u``, ``v``, computed without overflow."""
    big = np.maximum(u, v)
    return big * ((u / big) ** SMOOTH_MAX_POWER + (v / big) ** SMOOTH_MAX_POWER) ** (1 / SMOOTH_MAX_POWER)


def _roofline_one(rows: Sequence[CalibrationRow]) -> Predictor:
    """One family's roofline (module docstring): three log parameters, in cycles of each chip's clock."""
    work = np.array([r.work_tiles / max(r.cores, 1) for r in rows]) + 1e-9
    moved = np.array([r.tensor_bytes for r in rows]) + 1e-9
    measured = np.array([r.measured_ns * r.clock_ghz for r in rows])  # cycles
    p = SMOOTH_MAX_POWER

    def residuals(x: Vector) -> tuple[Vector, Matrix]:
        beta, u, v = np.exp(x[0]), np.exp(x[1]) * work, np.exp(x[2]) * moved
        m = _smooth_max(u, v)
        t = beta + m
        # d m / d log w = (u / m)^p m; likewise for v
        jac = np.stack([np.full_like(t, beta), (u / m) ** p * m, (v / m) ** p * m], axis=1) / t[:, None]
        return np.log(t / measured), jac

    # start: half the smallest time fixed, the rates at their medians
    start = np.array(
        [np.log(0.5 * np.min(measured)), np.log(np.median(measured / work)), np.log(np.median(measured / moved))]
    )
    x = robust_least_squares(residuals, start, np.eye(3) * 1e-3).x

    def predict(row: CalibrationRow) -> float:
        u = np.exp(x[1]) * (row.work_tiles / max(row.cores, 1) + 1e-9)
        v = np.exp(x[2]) * (row.tensor_bytes + 1e-9)
        return float(np.exp(x[0]) + _smooth_max(np.array([u]), np.array([v]))[0]) / row.clock_ghz

    return predict


def fit_roofline(rows: Sequence[CalibrationRow]) -> Predictor:
    return _by_family(rows, _roofline_one)


# -------------------------------------------------------------------------------------------- learned


def _numeric(row: CalibrationRow) -> list[float]:
    base = [np.log1p(row.work_tiles), np.log1p(row.tensor_bytes), np.log1p(row.cores)]
    return base + [a * b for i, a in enumerate(base) for b in base[i:]]


def _learned_one(rows: Sequence[CalibrationRow]) -> Predictor:
    """One family's ridge regression (module docstring)."""
    names = sorted(
        {f"kernel={r.kernel}" for r in rows} | {f"op={r.op_code}" for r in rows} | {f"arch={r.arch}" for r in rows}
    )
    index = {n: i for i, n in enumerate(names)}

    def features(row: CalibrationRow) -> Vector:
        hot = np.zeros(len(names))
        for n in (f"kernel={row.kernel}", f"op={row.op_code}", f"arch={row.arch}"):
            if n in index:
                hot[index[n]] = 1.0
        return np.concatenate([_numeric(row), hot])

    x = np.array([features(r) for r in rows])
    y = np.log(np.array([r.measured_ns for r in rows]))
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std == 0] = 1.0
    z = (x - mean) / std
    intercept = y.mean()
    coef = np.linalg.solve(z.T @ z + RIDGE * np.eye(z.shape[1]), z.T @ (y - intercept))
    return lambda row: float(np.exp(intercept + ((features(row) - mean) / std) @ coef))


def fit_learned(rows: Sequence[CalibrationRow]) -> Predictor:
    return _by_family(rows, _learned_one)
