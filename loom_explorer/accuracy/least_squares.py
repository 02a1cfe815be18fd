"""A small robust nonlinear least-squares solver (numpy only), shared by the capture calibration and its
fitted-roofline baseline.

It minimises ``sum_i w_i(r_i) r_i(x)^2 + |P x|^2`` over the parameters ``x``, where ``r(x)`` are residuals
(here the log ratio of predicted to measured time, so over- and under-prediction weigh alike) and ``P`` a
fixed penalty matrix (the ridge that pulls per-kernel and per-chip adjustments toward their family's value).
``w`` are Cauchy weights, ``w = 1 / (1 + (r / delta)^2)``, recomputed each iteration (iteratively
reweighted least squares): a row the model misses by 10x (``|r| = 2.3``) weighs 1% of a row it hits, so a
capture whose software ran an op far from the model cannot drag the scales of every other capture's rows
(a Huber loss, tried first, let it).

Each iteration is a Levenberg-Marquardt step: solve ``(J^T W J + P^T P + mu diag(J^T W J + P^T P)) dx =
-(J^T W r + P^T P x)`` and keep the step if the (re-weighted) loss fell, else raise ``mu`` tenfold. It stops
when a step moves the loss by less than ``tol`` relative, or after ``max_iterations``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float64]
Matrix = npt.NDArray[np.float64]
# x -> (residuals r(x), Jacobian dr/dx)
Residuals = Callable[[Vector], tuple[Vector, Matrix]]

DELTA = 0.25  # the |log ratio| at which a row's weight has halved: about 28% off


@dataclass(frozen=True, slots=True)
class Fitted:
    x: Vector
    loss: float
    iterations: int


def cauchy_weights(r: Vector, delta: float = DELTA) -> Vector:
    """``1 / (1 + (r / delta)^2)``: the Cauchy loss's IRLS weights."""
    return 1.0 / (1.0 + (r / delta) ** 2)


def _loss(r: Vector, w: Vector, penalty: Matrix, x: Vector) -> float:
    p = penalty @ x
    return float(np.sum(w * r * r) + p @ p)


def robust_least_squares(
    residuals: Residuals,
    x0: Vector,
    penalty: Matrix | None = None,
    *,
    delta: float = DELTA,
    max_iterations: int = 100,
    tol: float = 1e-9,
) -> Fitted:
    """The ``x`` of least robust loss from ``x0`` (module docstring)."""
    x = np.asarray(x0, dtype=np.float64).copy()
    pen = np.zeros((0, x.size)) if penalty is None else penalty
    ptp = pen.T @ pen
    r, jac = residuals(x)
    w = cauchy_weights(r, delta)
    loss = _loss(r, w, pen, x)
    mu = 1e-3
    iterations = 0
    for iterations in range(1, max_iterations + 1):  # noqa: B007 (the count is returned)
        jw = jac * w[:, None]
        a = jac.T @ jw + ptp
        g = jac.T @ (w * r) + ptp @ x
        improved = False
        for _ in range(12):
            damped = a + mu * np.diag(np.diag(a) + 1e-12)
            try:
                step = np.linalg.solve(damped, -g)
            except np.linalg.LinAlgError:
                mu *= 10
                continue
            candidate = x + step
            r_new, jac_new = residuals(candidate)
            new_loss = _loss(r_new, w, pen, candidate)
            if np.isfinite(new_loss) and new_loss < loss:
                x, r, jac = candidate, r_new, jac_new
                mu = max(mu / 3, 1e-9)
                improved = True
                break
            mu *= 10
        w = cauchy_weights(r, delta)
        new = _loss(r, w, pen, x)
        if not improved or abs(loss - new) <= tol * max(1.0, abs(loss)):
            loss = new
            break
        loss = new
    return Fitted(x, loss, iterations)
