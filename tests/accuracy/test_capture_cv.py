"""Cross-validation of the capture calibration and its baselines: the folds, the scores, the baselines' fits,
the shipped file and the ``accuracy --by`` command."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from synthetic_rows import row, synthetic

from loom_explorer.accuracy.baselines import SMOOTH_MAX_POWER, fit_learned, fit_roofline
from loom_explorer.accuracy.calibration_rows import _sizes
from loom_explorer.accuracy.capture_cv import check_scores, fold_of, held_out, score, scores_by
from loom_explorer.accuracy.ingest import IngestedOp
from loom_explorer.accuracy.term_calibration import CALIBRATION_FILE, gated_fit
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import DataFormat, Fidelity


def test_a_held_out_row_is_predicted_by_a_fit_without_its_capture() -> None:
    """Each row's ``model`` prediction is the gated fit of the other captures' rows, recomputed here."""
    rows = synthetic(40, seed=1, capture="a") + synthetic(40, seed=2, capture="b") + synthetic(40, seed=3, capture="c")
    predicted = held_out(rows, "capture", methods=("model", "uncalibrated"))
    for capture in "abc":
        fit = gated_fit([r for r in rows if r.capture != capture])
        for i, r in enumerate(rows):
            if r.capture == capture:
                assert predicted["model"][i] == pytest.approx(fit.predict_ns(r))
                assert predicted["uncalibrated"][i] == r.uncalibrated_ns


def test_shape_folds_keep_every_row_of_a_shape_together() -> None:
    rows = synthetic(200)
    key = fold_of("shape")
    by_shape: dict[str, set[str]] = {}
    for r in rows:
        by_shape.setdefault(r.shape_key, set()).add(key(r))
    assert all(len(folds) == 1 for folds in by_shape.values())
    assert len({key(r) for r in rows}) > 5  # dealt over the folds


def test_unknown_folds_and_groupings_are_refused() -> None:
    with pytest.raises(ValueError, match="folds 'row'"):
        fold_of("row")
    with pytest.raises(ValueError, match="--by 'op'"):
        scores_by([], {}, "op")


def test_score_by_hand() -> None:
    s = score([(110.0, 100.0), (50.0, 100.0), (300.0, 200.0)])  # errors +10%, -50%, +50%
    assert s.rows == 3
    assert s.median_abs_err == pytest.approx(0.5)
    assert s.total_err == pytest.approx(460 / 400 - 1)
    assert s.p90_abs_err == pytest.approx(0.5)


def test_scores_by_group_and_all() -> None:
    rows = [row({"compute": 100}, 100.0, capture="a"), row({"compute": 100}, 200.0, capture="b")]
    scores = scores_by(rows, {"uncalibrated": [100.0, 100.0]}, "capture")
    assert [g.group for g in scores] == ["a", "b", "all"]
    assert scores[1].of("uncalibrated").total_err == pytest.approx(-0.5)
    assert scores[2].of("uncalibrated").rows == 2


def test_check_scores_fit_only_the_fit_captures() -> None:
    fit_rows = synthetic(60, seed=1, capture="a") + synthetic(60, seed=3, capture="b")
    # the check capture measured 3x the true times: a fit that saw it would move toward it
    check = [replace(r, role="check", measured_ns=3 * r.measured_ns, capture="z") for r in synthetic(60, seed=2)]
    [z, everything] = check_scores(fit_rows + check, "capture")
    assert z.group == "z" and everything.group == "all"
    assert z.of("model").median_abs_err == pytest.approx(2 / 3, abs=0.02)  # predicted at the true times


def test_roofline_recovers_a_roofline() -> None:
    beta, w, b, p = 2000.0, 30.0, 0.02, SMOOTH_MAX_POWER
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(200):
        work, moved, cores = float(rng.integers(1, 100_000)), float(rng.integers(2048, 50_000_000)), 64
        cycles = beta + ((w * work / cores) ** p + (b * moved) ** p) ** (1 / p)
        r = row({"compute": 1}, cycles / 1.0)
        rows.append(replace(r, work_tiles=work, tensor_bytes=moved, cores=cores))
    predict = fit_roofline(rows)
    errors = [abs(predict(r) / r.measured_ns - 1) for r in rows]
    assert max(errors) < 0.01


def test_learned_recovers_a_power_law() -> None:
    rng = np.random.default_rng(1)
    rows = []
    for _ in range(200):
        work, moved = float(rng.integers(1, 100_000)), float(rng.integers(2048, 50_000_000))
        r = row({"compute": 1}, 50 * math.log1p(work) ** 2 * math.log1p(moved) ** 0.5)
        rows.append(replace(r, work_tiles=work, tensor_bytes=moved))
    predict = fit_learned(rows)
    errors = [abs(predict(r) / r.measured_ns - 1) for r in rows]
    assert np.median(errors) < 0.05


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loom_explorer.cli", "accuracy", *args], capture_output=True, text=True, timeout=600
    )


def test_by_refuses_the_published_flags() -> None:
    done = _cli("--by", "family", "--data", "x.csv", "--record")
    assert done.returncode != 0
    assert "--by judges the capture calibration" in done.stderr and "--data, --record" in done.stderr


def test_folds_and_factors_need_by() -> None:
    for flags in (("--folds", "shape"), ("--factors", "kernel")):
        done = _cli(*flags)
        assert done.returncode != 0 and "--folds and --factors go with --by" in done.stderr
    done = _cli("--by", "family", "--factors", "kernel,core")
    assert done.returncode != 0 and "--factors 'kernel,core': core is not one of kernel, arch" in done.stderr


@pytest.mark.slow
def test_accuracy_by_chip_on_the_shipped_captures(capsys: pytest.CaptureFixture[str]) -> None:
    """The real captures, leave one architecture out: every method scored on every predicted row. The command
    runs in this process (``main``), so its capture rows are the ones the tests below read
    (``calibration_rows.capture_rows`` is cached per process)."""
    from loom_explorer.cli import main

    assert main(["accuracy", "--by", "chip", "--folds", "chip", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    held = doc["held_out"]
    assert set(held) == {"wormhole", "blackhole", "all"}
    assert set(held["all"]) == {"model", "uncalibrated", "roofline", "learned"}
    assert held["all"]["model"]["rows"] == held["wormhole"]["model"]["rows"] + held["blackhole"]["model"]["rows"]
    assert held["all"]["uncalibrated"]["measured_ns"] == pytest.approx(held["all"]["model"]["measured_ns"])
    assert set(doc["checking"]) >= {"all"}


@pytest.mark.slow
def test_the_shipped_calibration_is_the_fit_of_the_fit_captures() -> None:
    """``data/capture_calibration.csv`` is what ``python -m loom_explorer.accuracy.calibration_rows`` makes (its
    ``__main__`` writes ``shipped_fit().to_csv()``), computed in this process: the capture rows are cached
    per process, so the tests of this file read them once."""
    from loom_explorer.accuracy.calibration_rows import shipped_fit

    fitted = shipped_fit().to_csv()
    assert fitted == CALIBRATION_FILE.read_text(), "regenerate: python -m loom_explorer.accuracy.calibration_rows"


@pytest.mark.slow
def test_docs_state_the_held_out_errors() -> None:
    """docs/accuracy.md carries the leave-one-capture-out table and the checking table of today's model and
    calibration (``python -m loom_explorer.accuracy.capture_report`` prints them)."""
    from pathlib import Path

    from loom_explorer.accuracy.calibration_rows import all_capture_rows
    from loom_explorer.accuracy.capture_report import report_lines

    text = (Path(__file__).resolve().parents[2] / "docs" / "accuracy.md").read_text()
    for line in report_lines(all_capture_rows(), "family", "capture"):
        assert line in text, line


def test_a_baselines_work_counts_only_the_dimensions_a_tensor_indexes() -> None:
    """A tiled reshape's counts (``G`` input tile reads, ``S`` segments) index no tensor: its work is the
    output's H x W elements in tiles, as a copy's."""
    hw = load_hardware("wormhole_n150")
    op = IngestedOp(
        row=1,
        op_code="ReshapeDeviceOperation",
        kernel="reshape",
        shape={},
        dtype=DataFormat.bfloat16,
        formats={},
        fidelity=Fidelity.hifi4,
        config=None,
        options=frozenset(),
        q_chunk_size=None,
        k_chunk_size=None,
        device_kernel_ns=1000.0,
        core_count=None,
        model_shape={"H": 640, "W": 64, "G": 800, "S": 1600},
    )
    work_tiles, tensor_bytes = _sizes(op, hw)
    assert work_tiles == 640 * 64 / 1024
    assert tensor_bytes == 2 * 640 * 64 * hw.tile_bytes[DataFormat.bfloat16] / 1024
