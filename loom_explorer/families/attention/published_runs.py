"""The published SDPA op times as the accuracy tools run them: ``PUBLISHED``, the attention family's
:class:`~loom_explorer.accuracy.published.PublishedKernel` (``accuracy.py`` registers it), with its runs:

* ``run_accuracy`` (``accuracy --kernel flash_attention``): every row of the shipped file (or ``--data``)
  predicted with its own config (``published``), optionally each problem's error with the attention
  constants refitted without it (``published_calibrate``); then the table (``published_report``);
* ``run_calibrate`` (``calibrate --kernel flash_attention``): the attention constants fitted on the modelled
  rows of the chip's card, the new hardware file, and the errors before and after (and cross-validated);
* ``measure_errors``: the ``sdpa`` figures of ``model_error.csv``: the modelled rows of each card in sample
  (the shipped constants) and cross-validated.

An unusable row stops a run unless it is skipped (``--skip-bad-rows``), when the skipped rows are listed.
"""

from __future__ import annotations

from pathlib import Path

from loom_explorer.accuracy.calibrate import (
    Calibration,
    calibrated_yaml,
    shipped_constants,
    start_values,
    with_constants,
    written_value,
)
from loom_explorer.accuracy.csv_input import refusal
from loom_explorer.accuracy.progress import Progress
from loom_explorer.accuracy.published import AccuracyRun, CalibrateRun, Console, MeasuredErrors, PublishedKernel
from loom_explorer.accuracy.published_table import CARDS, DataError
from loom_explorer.accuracy.scoring import summarise_errors
from loom_explorer.export.files import write_new
from loom_explorer.families.attention.published import (
    ERROR_FAMILY,
    KERNEL,
    MODELLED,
    SDPA_DATA,
    SdpaMeasured,
    SdpaRow,
    predict_sdpa,
    read_sdpa_measurements,
    shipped_data,
)
from loom_explorer.families.attention.published_calibrate import (
    SDPA_CONSTANTS,
    cross_validate_cards,
    cross_validate_sdpa,
    fit_sdpa,
    modelled_rows,
)
from loom_explorer.families.attention.published_report import sdpa_report, summary_line
from loom_explorer.hardware import load_hardware


def load_sdpa_rows(data: str, skip_bad_rows: bool, console: Console) -> list[SdpaMeasured]:
    """The file's rows; an unusable row stops unless ``skip_bad_rows`` (then it is listed)."""
    measured, issues = read_sdpa_measurements(data)
    if issues and not skip_bad_rows:
        raise DataError(refusal(issues))
    if issues:
        console.say_rows(f"skipped {len(issues)} unusable rows (--skip-bad-rows):", issues)
    return measured


def run_accuracy(run: AccuracyRun, console: Console) -> None:
    """``accuracy --kernel flash_attention`` (module docstring)."""
    measured = load_sdpa_rows(run.data, run.skip_bad_rows, console)
    rows = predict_sdpa(measured, dict(run.hardware))
    cross_validated: list[SdpaRow] = []
    folds = 0
    with Progress() as progress:
        if run.cross_validate:
            folds, cross_validated = cross_validate_cards(measured, dict(run.hardware), progress)
    for line in sdpa_report(
        rows, cross_validated if run.cross_validate else None, folds, Path(run.data).name, run.json
    ):
        console.out(line)


def run_calibrate(run: CalibrateRun, console: Console) -> None:
    """``calibrate --kernel flash_attention`` (module docstring)."""
    hw = load_hardware(run.hw)
    measured = load_sdpa_rows(run.data, run.skip_bad_rows, console)
    start = start_values(hw, run.hw, run.constants)
    fitted = fit_sdpa(start, measured, run.constants)
    mine = modelled_rows(hw, measured)
    calibration = Calibration(
        hardware=with_constants(start, fitted),
        values=fitted,
        shipped=shipped_constants(start, run.constants),
        given=shipped_constants(hw, run.constants),
        rows=len(mine),
    )
    write_new(run.output, calibrated_yaml(run.hw, calibration, Path(run.data).name), force=run.force)
    console.out(f"calibrated {hw.name}'s attention constants on {len(mine)} rows of {run.data}; wrote {run.output}")
    for path in fitted:
        console.out(f"  {path:<40} {calibration.shipped[path]:>8g} -> {written_value(calibration, path):g}")
    before = predict_sdpa(mine, {mine[0].card: hw}) if mine else []
    after = predict_sdpa(mine, {mine[0].card: calibration.hardware}) if mine else []
    console.out(summary_line("given constants, in sample", summarise_errors([r.error_pct for r in before])))
    console.out(summary_line("fitted constants, in sample", summarise_errors([r.error_pct for r in after])))
    if run.cross_validate:
        folds, held_out = cross_validate_sdpa(start, measured, run.constants)
        console.out(
            summary_line(
                f"fitted, cross-validated ({folds} problems)", summarise_errors([r.error_pct for r in held_out])
            )
        )


def measure_errors(cross_validate: bool) -> list[MeasuredErrors]:
    """The figures of each card (module docstring); the cross-validation fits the attention constants once
    per problem (about a minute on 2 cores), ``cross_validate=False`` leaves it out."""
    sdpa, _ = read_sdpa_measurements(shipped_data())
    modelled = [m for m in sdpa if m.kernel in MODELLED]
    out = []
    for card, hardware in CARDS.items():
        mine = [m for m in modelled if m.card == card]
        if not mine:
            continue
        in_sample = tuple(r.error_pct for r in predict_sdpa(mine))
        out.append(MeasuredErrors(ERROR_FAMILY, hardware, "in sample", in_sample, SDPA_DATA))
        if cross_validate:
            hw = load_hardware(hardware)
            _, held_out = cross_validate_sdpa(hw, modelled_rows(hw, mine))
            out.append(
                MeasuredErrors(
                    ERROR_FAMILY, hardware, "cross-validated", tuple(r.error_pct for r in held_out), SDPA_DATA
                )
            )
    return out


PUBLISHED = PublishedKernel(
    kernel=KERNEL,
    title="SDPA",
    ops="SDPA",
    constants=SDPA_CONSTANTS,
    kernel_help=f"{KERNEL} (published SDPA op times)",
    calibrate_help=f"{KERNEL} (the attention constants, compute.sdpa_softmax_scale)",
    data_help=f"of {SDPA_DATA} for {KERNEL} (default: the shipped one)",
    accuracy=run_accuracy,
    calibrate=run_calibrate,
    measure_errors=measure_errors,
    shipped_data=SDPA_DATA,
)
