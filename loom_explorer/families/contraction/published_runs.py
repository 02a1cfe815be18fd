"""The published matmul measurements as the accuracy tools run them: ``PUBLISHED``, the contraction family's
:class:`~loom_explorer.accuracy.published.PublishedKernel` (``accuracy.py`` registers it), with its runs:

* ``run_accuracy`` (``loom-explorer accuracy``, the default kernel): every ``use_trace=True`` row predicted
  with its own config (``published``), optionally each card's leave-one-shape-out error with the constants
  the hardware file notes as calibrated (or ``--constants``) refitted (``published_calibrate``), optionally
  every row recorded in the results store; then the tables (``published_scoring``, ``published_report``)
  and the rows that could not be scored;
* ``run_calibrate`` (``loom-explorer calibrate``): every row checked first (an unusable one stops the fit
  unless skipped), the fit from the values before the file's own calibration, the new hardware file, and
  the errors before and after (and cross-validated);
* ``measure_errors``: the held-out figures of ``model_error.csv`` (``matmul``): ``gemm_flops_checking.csv``,
  the published matmul timings no fit and no model development used, per card.
"""

from __future__ import annotations

import json
from pathlib import Path

from loom_explorer.accuracy.calibrate import (
    CalibrationError,
    calibrated_yaml,
    calibration_notes,
    start_values,
    written_value,
)
from loom_explorer.accuracy.csv_input import refusal
from loom_explorer.accuracy.progress import Progress
from loom_explorer.accuracy.published import AccuracyRun, CalibrateRun, Console, MeasuredErrors, PublishedKernel
from loom_explorer.accuracy.published_table import CARDS
from loom_explorer.data import published_path
from loom_explorer.export.files import write_new
from loom_explorer.families.contraction.published import (
    ERROR_FAMILY,
    KERNEL,
    Report,
    load_cases,
    predict_cases,
    predict_rows,
    report_measurements,
    unscored,
)
from loom_explorer.families.contraction.published_calibrate import CONSTANTS, calibrate, cross_validate
from loom_explorer.families.contraction.published_report import accuracy_table_lines, errors_by_kind_lines
from loom_explorer.families.contraction.published_scoring import ErrorsByKind, accuracy_json, accuracy_tables
from loom_explorer.hardware import load_hardware

CALIBRATION_DATA = "gemm_flops_calibration.csv"
CONFIGS_DATA = "gemm_manual_configs.csv"
CHECKING_DATA = "gemm_flops_checking.csv"


def run_accuracy(run: AccuracyRun, console: Console) -> None:
    """``accuracy --kernel gemm`` (module docstring)."""
    cross_validated: dict[str, ErrorsByKind] = {}
    with Progress() as progress:
        cases, unusable = load_cases(run.data, run.configs, run.skip_bad_rows)
        predicted = predict_cases(cases, dict(run.hardware), progress)
        report = Report(predicted.rows, unusable + predicted.skipped)
        for card in sorted({c.card for c in cases}) if run.cross_validate else ():
            name = run.hardware_files[card]
            start = start_values(run.hardware.get(card) or load_hardware(name), name, CONSTANTS)
            # by default the constants the file says were fitted: the cross-validation of how it was made
            refit = run.constants or tuple(calibration_notes(name, CONSTANTS))
            cross_validated[card] = cross_validate(start, cases, progress=progress, constants=refit).errors
    if run.record:
        from loom_explorer.store import open_store

        with open_store(run.store) as store:
            store.record_many(report_measurements(report))
        console.say(f"recorded {len(report.rows)} measurements in {store.path}")
    tables = accuracy_tables(report, cross_validated)
    if run.json:
        console.out(json.dumps(accuracy_json(tables), indent=2))
    else:
        for line in accuracy_table_lines(tables):
            console.out(line)
    not_scored = unscored(report)
    if not_scored:
        console.say_rows(f"could not score {len(not_scored)} rows:", not_scored)


def run_calibrate(run: CalibrateRun, console: Console) -> None:
    """``calibrate --kernel gemm`` (module docstring)."""
    hw = load_hardware(run.hw)
    # every row is checked before the fit: an unusable one stops it unless --skip-bad-rows leaves it out
    cases, unusable = load_cases(run.data, run.configs, skip_bad_rows=run.skip_bad_rows)
    if unusable and not run.skip_bad_rows:
        raise CalibrationError(refusal(unusable))
    if unusable:
        console.say_rows(f"skipped {len(unusable)} unusable rows (--skip-bad-rows):", unusable)
    with Progress() as progress:
        start = start_values(hw, run.hw, CONSTANTS)
        fit = calibrate(hw, cases, progress=progress, start=start, constants=run.constants)
        cross_validated = (
            cross_validate(start, cases, progress=progress, constants=run.constants) if run.cross_validate else None
        )
    result = fit.calibration
    write_new(run.output, calibrated_yaml(run.hw, result, Path(run.data).name), force=run.force)
    console.out(f"calibrated {hw.name} on {result.rows} rows of {run.data}; wrote {run.output}")
    if start != hw:
        console.out(f"  (the fit starts from the values {run.hw} notes as those before its own calibration)")
    moved = [path for path in result.values if written_value(result, path) != result.given[path]]
    for path in result.values:
        console.out(f"  {path:<36} {result.shipped[path]:>10g} -> {written_value(result, path):g}")
    if not moved:
        console.out("  no constant moved: the file's values fit these rows best (the file written keeps every value)")
    lines = [
        *errors_by_kind_lines("given constants, in sample", fit.before),
        *errors_by_kind_lines("fitted constants, in sample", fit.after),
    ]
    if cross_validated:
        lines += errors_by_kind_lines(
            f"fitted, cross-validated ({cross_validated.folds} shapes, each left out once)", cross_validated.errors
        )
    for line in lines:
        console.out(line)


def measure_errors(cross_validate: bool) -> list[MeasuredErrors]:
    """The held-out figure of each card (module docstring; nothing is fitted, so ``cross_validate`` changes
    nothing)."""
    report = predict_rows(published_path(CHECKING_DATA), published_path(CONFIGS_DATA))
    out = []
    for card, hardware in CARDS.items():
        errors = tuple(r.error_pct for r in report.rows if r.card == card)
        if errors:
            out.append(MeasuredErrors(ERROR_FAMILY, hardware, "held out", errors, CHECKING_DATA))
    return out


PUBLISHED = PublishedKernel(
    kernel=KERNEL,
    title="GEMM",
    ops="matmul",
    constants=CONSTANTS,
    kernel_help=f"{KERNEL} (default)",
    calibrate_help=f"{KERNEL} (default: the matmul constants)",
    data_help=f"in the format of loom_explorer/data/published/{CALIBRATION_DATA} (required for {KERNEL})",
    accuracy=run_accuracy,
    calibrate=run_calibrate,
    measure_errors=measure_errors,
    options=frozenset({"--configs", "--record", "--constants", "--store"}),
    example_data=CALIBRATION_DATA,
    default=True,
)
