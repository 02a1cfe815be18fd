"""``accuracy --kernel flash_attention`` and ``calibrate --kernel flash_attention``: the model against published
SDPA op times (``accuracy/sdpa_data.py``, ``accuracy/sdpa_calibrate.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from loom_explorer.accuracy.sdpa_data import (
    MODELLED,
    ErrorSummary,
    SdpaMeasured,
    SdpaRow,
    read_sdpa_measurements,
    score_sdpa,
    scores_json,
    summarise_errors,
)
from loom_explorer.cli.common import InputError, pct, say_rows
from loom_explorer.errors import EXIT_OK
from loom_explorer.hardware.schema import HardwareSpec


def _summary_line(name: str, s: ErrorSummary) -> str:
    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 2)

    bias = "-" if s.median_err_pct is None else f"{s.median_err_pct:+.1f}%"
    illegal = f"  illegal {s.illegal}" if s.illegal else ""
    return (
        f"  {name:<34} n={s.n:<3} median |err| {pct(r(s.median_abs_err_pct))}  worst "
        f"{pct(r(s.worst_abs_err_pct))}  median signed {bias}{illegal}"
    )


def _row_line(row: SdpaRow, cv: float | None) -> str:
    m = row.measured
    shape = ",".join(f"{k}={v}" for k, v in m.shape)
    cfg = m.config
    pred = f"{row.predicted_ns / 1e3:>10.1f}" if row.predicted_ns else f"{'-':>10}"
    err = f"{row.error_pct:+7.1f}%" if row.error_pct is not None else f"{'-':>8}"
    cv_text = f"{cv:+7.1f}%" if cv is not None else f"{'-':>8}"
    mask = "causal" if "causal" in m.options else "full"
    return (
        f"{m.line:>4} {m.kernel:<9} {shape:<36} {mask:<6} q{cfg.q_chunk_size}/k{cfg.k_chunk_size} "
        f"{cfg.compute_with_storage_grid_size[0]}x{cfg.compute_with_storage_grid_size[1]} "
        f"{m.time_ns / 1e3:>10.1f} {pred} {err} {cv_text}"
    )


def sdpa_report(
    rows: list[SdpaRow], cross_validated: list[SdpaRow] | None, folds: int, data: str, as_json: bool
) -> None:
    """The table (or JSON): every row, then the error of the modelled rows per kernel and per regime, in
    sample and (with ``cross_validated``) leaving each problem out."""
    scores = score_sdpa(rows, cross_validated)
    cv_by_line, in_sample, held_out = scores.held_out_by_line, scores.in_sample, scores.held_out
    if as_json:
        print(json.dumps(scores_json(rows, scores, folds, data), indent=2))
        return
    print(
        f"{'line':>4} {'kernel':<9} {'shape':<36} {'mask':<6} chunks  grid {'measured us':>10} "
        f"{'predicted':>10} {'error':>8} {'held out':>8}"
    )
    for r in rows:
        print(_row_line(r, cv_by_line.get(r.measured.line)))
    print("\nin sample (the hardware file's constants):")
    for name, s in in_sample.items():
        print(_summary_line(name, s))
    if cross_validated:
        print(f"\ncross-validated ({folds} problems, each left out of the fit once):")
        for name, s in held_out.items():
            print(_summary_line(name, s))
    else:
        print("\n(the cross-validated error refits the attention constants once per problem: --cross-validate)")
    not_modelled = [r for r in rows if r.measured.kernel not in MODELLED]
    if not_modelled:
        kinds = sorted({r.measured.kernel for r in not_modelled})
        print(f"\nnot modelled, not scored: {len(not_modelled)} rows of the {', '.join(kinds)} kernels")


def load_sdpa_rows(data: str, skip_bad_rows: bool) -> list[SdpaMeasured]:
    """The file's rows; an unusable row stops unless ``skip_bad_rows`` (then it is listed)."""
    from loom_explorer.accuracy.csv_input import refusal

    measured, issues = read_sdpa_measurements(data)
    if issues and not skip_bad_rows:
        raise InputError(refusal(issues))
    if issues:
        say_rows(f"skipped {len(issues)} unusable rows (--skip-bad-rows):", issues)
    return measured


def run_sdpa_accuracy(
    data: str, hardware: dict[str, HardwareSpec], skip_bad_rows: bool, cross_validate: bool, as_json: bool
) -> int:
    from loom_explorer.accuracy.progress import Progress
    from loom_explorer.accuracy.sdpa_calibrate import cross_validate_cards
    from loom_explorer.accuracy.sdpa_data import predict_sdpa

    measured = load_sdpa_rows(data, skip_bad_rows)
    rows = predict_sdpa(measured, hardware)
    cross_validated: list[SdpaRow] = []
    folds = 0
    with Progress() as progress:
        if cross_validate:
            folds, cross_validated = cross_validate_cards(measured, hardware, progress)
    sdpa_report(rows, cross_validated if cross_validate else None, folds, Path(data).name, as_json)
    return EXIT_OK


def run_sdpa_calibrate(
    hw_name: str, data: str, output: str, force: bool, skip_bad_rows: bool, cross_validate: bool
) -> int:
    from loom_explorer.accuracy.calibrate import (
        Calibration,
        calibrated_yaml,
        shipped_constants,
        start_values,
        with_constants,
        written_value,
    )
    from loom_explorer.accuracy.sdpa_calibrate import SDPA_CONSTANTS, cross_validate_sdpa, fit_sdpa, modelled_rows
    from loom_explorer.accuracy.sdpa_data import predict_sdpa
    from loom_explorer.export.files import write_new
    from loom_explorer.hardware import load_hardware

    hw = load_hardware(hw_name)
    measured = load_sdpa_rows(data, skip_bad_rows)
    start = start_values(hw, hw_name, SDPA_CONSTANTS)
    fitted = fit_sdpa(start, measured)
    mine = modelled_rows(hw, measured)
    calibration = Calibration(
        hardware=with_constants(start, fitted),
        values=fitted,
        shipped=shipped_constants(start, SDPA_CONSTANTS),
        given=shipped_constants(hw, SDPA_CONSTANTS),
        rows=len(mine),
    )
    write_new(output, calibrated_yaml(hw_name, calibration, Path(data).name), force=force)
    print(f"calibrated {hw.name}'s attention constants on {len(mine)} rows of {data}; wrote {output}")
    for path in fitted:
        print(f"  {path:<40} {calibration.shipped[path]:>8g} -> {written_value(calibration, path):g}")
    before = predict_sdpa(mine, {mine[0].card: hw}) if mine else []
    after = predict_sdpa(mine, {mine[0].card: calibration.hardware}) if mine else []
    print(_summary_line("given constants, in sample", summarise_errors([r.error_pct for r in before])))
    print(_summary_line("fitted constants, in sample", summarise_errors([r.error_pct for r in after])))
    if cross_validate:
        folds, held_out = cross_validate_sdpa(start, measured)
        print(
            _summary_line(
                f"fitted, cross-validated ({folds} problems)", summarise_errors([r.error_pct for r in held_out])
            )
        )
    return EXIT_OK
