"""Fit the hardware description's estimated constants to the published matmul times: ``loom-explorer
calibrate`` (``--kernel gemm``, the default), and how well the fit predicts shapes it has not seen.

The constants fitted (``CONSTANTS``) are the estimates of the YAML files that matmuls exercise (their comments
name ``loom_explorer/data/published/gemm_flops_calibration.csv``): the op-to-op gap (the per-op fixed cost the
traced wall clock adds to the device kernel time), Dst sub-block overhead, tile pack, the multicast handshake;
one core's DRAM read bandwidth; and the achieved cycles of a tile matmul per fidelity (LoFi, HiFi2, HiFi4),
which the shipped files give at their ideal (tech report) values and the fit may only raise. The fit
(``accuracy/calibrate.py``) minimises the mean squared log error (``scoring.log_loss``) over every row of the
chip's card; every evaluation re-predicts every row with the exact config it ran
(``published.predict_cases``).

Leave-one-shape-out cross-validation (``cross_validate``): for each shape (M, K, N) of a card's rows, the
constants are fitted on the rows of every other shape, and the rows of that shape (every config kind, dtype
and fidelity measured at it) are predicted with them (``accuracy/cross_validation.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from loom_explorer.accuracy.calibrate import (
    Calibration,
    CalibrationError,
    MapFn,
    card_of,
    fit_constants,
    shipped_constants,
    with_constants,
)
from loom_explorer.accuracy.cross_validation import leave_groups_out
from loom_explorer.accuracy.progress import Progress
from loom_explorer.accuracy.scoring import log_loss
from loom_explorer.families.contraction.published import Case, Row, predict_cases
from loom_explorer.families.contraction.published_scoring import ErrorsByKind, errors_by_kind
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.solve.children import worker_pool

# "section.key" or "section.key.entry" (an entry of a per-fidelity table); each is tried at SCALES times
# its shipped value (accuracy/calibrate.py)
CONSTANTS: tuple[str, ...] = (
    "compute.op_to_op_gap_cycles",  # the per-op fixed cost a traced wall clock sees beyond the device launch
    "compute.subblock_overhead_cycles",
    "compute.tile_pack_cycles",
    "noc.multicast_handshake_cycles",
    "dram.core_read_bytes_per_cycle",
    "compute.matmul_tile_cycles.lofi",
    "compute.matmul_tile_cycles.hifi2",
    "compute.matmul_tile_cycles.hifi4",
    "compute.unpack_bytes_per_cycle",  # only where the hardware file gives one
    "dram.step_read_bytes_per_cycle",  # the same
)


def gemm_loss(cases: list[Case], hw: HardwareSpec, card: str) -> float:
    """Mean ``log(predicted/measured)^2`` over the predicted rows, plus 1 per row the model finds illegal."""
    return log_loss([(r.predicted_ns, r.measured_ns) for r in predict_cases(cases, {card: hw}).rows])


def fit_gemm(
    hw: HardwareSpec,
    train: list[Case],
    card: str,
    constants: tuple[str, ...] = CONSTANTS,
    map_fn: MapFn = map,
    progress: Progress | None = None,
) -> dict[str, float]:
    """The fitted value of each of ``constants`` that ``hw`` gives, on the cases ``train``
    (``calibrate.fit_constants``; ``map_fn``: a pool's ``map`` costs the trials of a constant in parallel)."""
    return fit_constants(hw, train, card, constants=constants, loss=gemm_loss, map_fn=map_fn, progress=progress)


@dataclass(frozen=True, slots=True)
class GemmCalibration:
    """A fit of the matmul constants, and the errors of every row of the card in sample, with the constants as
    given and with the fitted ones."""

    calibration: Calibration
    before: ErrorsByKind
    after: ErrorsByKind


def calibrate(
    hw: HardwareSpec,
    cases: list[Case],
    processes: int | None = None,
    progress: Progress | None = None,
    start: HardwareSpec | None = None,
    constants: tuple[str, ...] = CONSTANTS,
) -> GemmCalibration:
    """Fit ``constants`` of ``hw`` on every row of its card (``fit_constants``) from ``start`` (default ``hw``
    itself; ``calibrate.start_values`` undoes an earlier calibration), the trials of one constant costed in
    parallel (``processes``, default one per CPU core). ``cross_validate`` scores the same fit on shapes it
    leaves out."""
    card = card_of(hw)
    mine = [c for c in cases if c.card == card]
    shapes = {c.shape for c in mine}
    if len(mine) < 5 or len(shapes) < 3:
        raise CalibrationError(
            f"only {len(mine)} rows of {len(shapes)} shapes for card {card}: a fit needs at least 5 rows of 3 shapes"
        )
    workers = processes or os.cpu_count() or 1
    begin = start or hw
    with worker_pool(workers) as pool:  # workers ignore Ctrl-C and end with the command
        best = fit_gemm(begin, mine, card, constants, pool.map, progress)
    fitted = with_constants(begin, best)
    return GemmCalibration(
        Calibration(
            hardware=fitted,
            values=best,
            shipped=shipped_constants(begin, constants),
            given=shipped_constants(hw, constants),
            rows=len(mine),
        ),
        before=errors_by_kind(predict_cases(mine, {card: hw}).rows),
        after=errors_by_kind(predict_cases(mine, {card: fitted}).rows),
    )


@dataclass(frozen=True, slots=True)
class CrossValidation:
    """One card's rows, each predicted by constants fitted without its shape (``rows``, in file order), and
    their errors."""

    card: str
    folds: int  # shapes
    rows: list[Row]
    errors: ErrorsByKind


def _fold(hw: HardwareSpec, card: str, train: list[Case], test: list[Case], constants: tuple[str, ...]) -> list[Row]:
    fitted = fit_gemm(hw, train, card, constants)
    return predict_cases(test, {card: with_constants(hw, fitted)}).rows


def _shape(case: Case) -> tuple[int, int, int]:
    return case.shape


def _file_order(row: Row) -> tuple[str, int]:
    return row.file, row.line


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
    folds, rows = leave_groups_out(hw, card, mine, _shape, _fold, constants, _file_order, "shapes", processes, progress)
    return CrossValidation(card, folds, rows, errors_by_kind(rows))
