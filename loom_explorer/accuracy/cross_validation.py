"""Leave-one-shape-out cross-validation of ``calibrate``'s fit: how well the model predicts shapes whose
measurements no constant was fitted on.

For each shape ``s`` (M, K, N) of a card's rows, the constants are fitted (``calibrate.fit_constants``, the
same coordinate descent from the same starting values) on the rows of every other shape, and the rows of
``s`` (every config kind, dtype and fidelity measured at that shape) are predicted with them. The error of
those predictions, over every shape, is the cross-validated error; the in-sample error predicts every row
with constants fitted on all of them. Folds are independent and run in parallel, one per worker process.
"""

from __future__ import annotations

import os
from concurrent.futures import as_completed
from dataclasses import dataclass

from loom_explorer.accuracy.calibrate import CONSTANTS, card_of, fit_constants, with_constants
from loom_explorer.accuracy.gemm_data import Case, Row, predict_cases
from loom_explorer.accuracy.progress import Progress
from loom_explorer.accuracy.scoring import ErrorsByKind, errors_by_kind
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.solve.children import worker_pool


@dataclass(frozen=True, slots=True)
class CrossValidation:
    """One card's rows, each predicted by constants fitted without its shape (``rows``, in file order), and
    their errors."""

    card: str
    folds: int  # shapes
    rows: list[Row]
    errors: ErrorsByKind


def _fold(hw: HardwareSpec, card: str, train: list[Case], test: list[Case], constants: tuple[str, ...]) -> list[Row]:
    fitted = fit_constants(hw, train, card, constants=constants)
    return predict_cases(test, {card: with_constants(hw, fitted)}).rows


def cross_validate(
    hw: HardwareSpec,
    cases: list[Case],
    processes: int | None = None,
    progress: Progress | None = None,
    constants: tuple[str, ...] = CONSTANTS,
) -> CrossValidation:
    """Leave-one-shape-out errors of ``hw``'s card's rows among ``cases`` when ``constants`` are fitted
    (module docstring); ``processes`` folds at a time (default one per CPU core)."""
    card = card_of(hw)
    mine = [c for c in cases if c.card == card]
    shapes = sorted({c.shape for c in mine})
    rows: list[Row] = []
    if progress:
        progress.phase("cross-validating (shapes)", len(shapes))
    workers = min(len(shapes), processes or os.cpu_count() or 1) or 1
    with worker_pool(workers) as pool:  # workers ignore Ctrl-C and end with the command
        futures = [
            pool.submit(
                _fold, hw, card, [c for c in mine if c.shape != s], [c for c in mine if c.shape == s], constants
            )
            for s in shapes
        ]
        for done, future in enumerate(as_completed(futures), start=1):
            rows.extend(future.result())
            if progress:
                progress.update(done)
    rows.sort(key=lambda r: (r.file, r.line))
    return CrossValidation(card, len(shapes), rows, errors_by_kind(rows))
