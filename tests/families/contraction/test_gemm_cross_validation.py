"""Leave-one-shape-out cross-validation: the roofline's (``accuracy``) and the fitted model's
(``calibrate --cross-validate``, ``accuracy --cross-validate``). The property that makes a figure
cross-validated: a shape's prediction does not depend on that shape's own measurements."""

from __future__ import annotations

import csv
import dataclasses
import re
from pathlib import Path

import pytest

from loom_explorer.accuracy.calibrate import with_constants
from loom_explorer.cli import main
from loom_explorer.data import published_path
from loom_explorer.families.contraction.published import Case, load_cases, predict_cases, predict_rows
from loom_explorer.families.contraction.published_calibrate import cross_validate, fit_gemm
from loom_explorer.families.contraction.published_scoring import fit_baseline, roofline_cross_validated
from loom_explorer.hardware import load_hardware

CALIBRATION, CONFIGS = published_path("gemm_flops_calibration.csv"), published_path("gemm_manual_configs.csv")


def test_the_roofline_left_out_shape_is_predicted_by_a_fit_on_the_other_shapes() -> None:
    rows = [r for r in predict_rows(CALIBRATION, CONFIGS).rows if r.card == "n150"]
    predicted = roofline_cross_validated(rows)
    shape = rows[0].shape
    others = fit_baseline([r for r in rows if r.shape != shape])
    for r, p in zip(rows, predicted, strict=True):
        if r.shape == shape:
            assert p == pytest.approx(others.predict(r))
    # the left-out shape's own times do not move its prediction; they do move the others'
    slower = [dataclasses.replace(r, measured_ns=r.measured_ns * 3) if r.shape == shape else r for r in rows]
    again = roofline_cross_validated(slower)
    mine = [i for i, r in enumerate(rows) if r.shape == shape]
    assert [again[i] for i in mine] == [predicted[i] for i in mine]
    assert any(again[i] != predicted[i] for i in range(len(rows)) if i not in mine)


def _small(tmp_path: Path, scale_shape: tuple[str, str, str] | None = None) -> Path:
    """Four shapes of the n150 bf16 HiFi2 manual rows (optionally one shape's times tripled)."""
    with CALIBRATION.open() as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames
        rows = [
            r
            for r in reader
            if r["card"] == "n150"
            and r["use_trace"] == "True"
            and r["dtype"] == "BFLOAT16"
            and r["math_fidelity"] == "HiFi2"
            and int(r["M"]) <= 1024
        ]
    for r in rows:
        if scale_shape and (r["M"], r["K"], r["N"]) == scale_shape:
            r["time_ns"] = str(3 * float(r["time_ns"]))
    path = tmp_path / ("scaled.csv" if scale_shape else "small.csv")
    with path.open("w", newline="") as f:
        assert fields is not None
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return path


# two constants keep the fits quick; the property does not depend on how many are fitted
FITTED = ("compute.tile_pack_cycles", "dram.step_read_bytes_per_cycle")


def _by_line(cases: list[Case], hw_fitted: dict[str, float]) -> dict[int, float | None]:
    hw = load_hardware("wormhole_n150")
    return {r.line: r.predicted_ns for r in predict_cases(cases, {"n150": with_constants(hw, hw_fitted)}).rows}


@pytest.mark.slow
def test_the_model_left_out_shape_is_predicted_by_constants_fitted_without_it(tmp_path: Path) -> None:
    hw = load_hardware("wormhole_n150")
    cases, _ = load_cases(_small(tmp_path), CONFIGS)
    shapes = sorted({c.shape for c in cases})
    assert len(shapes) >= 4
    cv = cross_validate(hw, cases, processes=2, constants=FITTED)
    assert cv.folds == len(shapes) and len(cv.rows) == len(cases)
    left_out = shapes[-1]
    fold = fit_gemm(hw, [c for c in cases if c.shape != left_out], "n150", constants=FITTED)
    expected = _by_line([c for c in cases if c.shape == left_out], fold)
    got = {r.line: r.predicted_ns for r in cv.rows if r.shape == left_out}
    assert got == expected
    # tripling the left-out shape's measured times changes the fit on every row, not its own prediction
    scaled_cases, _ = load_cases(_small(tmp_path, tuple(map(str, left_out))), CONFIGS)  # type: ignore[arg-type]
    everything = fit_gemm(hw, cases, "n150", constants=FITTED)
    assert fit_gemm(hw, scaled_cases, "n150", constants=FITTED) != everything
    again = cross_validate(hw, scaled_cases, processes=2, constants=FITTED)
    assert {r.line: r.predicted_ns for r in again.rows if r.shape == left_out} == got


@pytest.mark.slow
def test_calibrate_and_accuracy_print_the_cross_validated_error(tmp_path: Path, capsys) -> None:
    data = _small(tmp_path)
    out = tmp_path / "fitted.yaml"
    assert (
        main(
            [
                "calibrate",
                "--hw",
                "wormhole_n150",
                "--data",
                str(data),
                "--configs",
                str(CONFIGS),
                "-o",
                str(out),
                "--cross-validate",
                "--constants",
                ",".join(FITTED),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    cv = re.search(
        r"fitted, cross-validated \((\d+) shapes, each left out once\)\s+n=(\d+)\s+median \|err\| "
        r"([\d.]+)%",
        text,
    )
    assert cv and int(cv.group(1)) >= 4 and int(cv.group(2)) > 0, text
    assert main(["accuracy", "--data", str(data), "--configs", str(CONFIGS), "--cross-validate"]) == 0
    text = capsys.readouterr().out
    assert re.search(r"n150 model, cross-validated\s+n=\d+", text) and "roofline, cross-validated" in text
