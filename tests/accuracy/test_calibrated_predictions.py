"""Where the capture calibration reaches the user: ``ingest``'s predicted times, ``improve``'s gain and its
floor at the family's error, and the figure that speaks for an op."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from loom_explorer.accuracy.family_error import FamilyError, error_for_op
from loom_explorer.accuracy.improve import Improvement
from loom_explorer.accuracy.ingest import read_ops_perf, report_measurements
from loom_explorer.accuracy.term_calibration import UNCALIBRATED, TermScales

V2 = Path(__file__).parent / "data" / "ops_perf_results_v2.csv"


def test_ingest_reports_the_calibrated_time_and_keeps_the_model_s_cycles() -> None:
    """Scales that double the contraction family's compute: a matmul's predicted time grows by its compute
    term exactly; its cycles and breakdown stay the model's."""
    report = read_ops_perf(V2)
    doubled = TermScales({("contraction", "family", "", "compute"): math.log(2.0)}, {"contraction": 1})
    raw = report_measurements(report, "wormhole_n150", calibration=UNCALIBRATED)
    scaled = report_measurements(report, "wormhole_n150", calibration=doubled)
    matmuls = [(a, b) for a, b in zip(raw, scaled, strict=True) if a.kernel == "gemm" and a.predicted_ns]
    assert matmuls
    for a, b in matmuls:
        assert a.predicted_ns is not None and b.predicted_ns is not None and a.predicted_cycles is not None
        assert b.predicted_cycles == a.predicted_cycles and b.breakdown == a.breakdown
        assert a.predicted_cycles == sum(a.breakdown.values())
        clock_ghz = a.predicted_cycles / a.predicted_ns
        assert b.predicted_ns == pytest.approx(a.predicted_ns + a.breakdown["compute"] / clock_ghz)
        assert "calibrated: the contraction family's scales" in b.note
        assert "calibrated" not in a.note


def _improvement(ran_ns: float, best_ns: float, error_pct: float | None, calls: int = 10) -> Improvement:
    return Improvement(
        key="k",
        op_code="Matmul",
        kernel="gemm",
        shape={},
        rows=tuple(range(calls)),
        measured_ns=ran_ns,
        ran_ns=ran_ns,
        ran_config=None,
        ran_candidate="c",
        best_ns=best_ns,
        error_pct=error_pct,
    )


def test_the_gain_floor_by_hand() -> None:
    """2x predicted at 20% error: floor 2 * 0.8 / 1.2 = 1.333x, so at least 1 - 1/1.333 = 25% of 10 calls of
    100 us saved: 250 us (the gain itself is 500 us)."""
    o = _improvement(100_000.0, 50_000.0, 20.0)
    assert o.gain_ns == pytest.approx(500_000.0)
    assert o.gain_floor_ns == pytest.approx(250_000.0)
    assert not o.within_error


def test_a_gain_within_the_error() -> None:
    o = _improvement(100_000.0, 90_000.0, 20.0)  # 1.11x: floor 0.74x
    assert o.gain_ns == pytest.approx(100_000.0) and o.gain_floor_ns == 0.0 and o.within_error


def test_a_family_never_measured_keeps_its_gain() -> None:
    o = _improvement(100_000.0, 50_000.0, None)
    assert o.gain_floor_ns == o.gain_ns


def _figure(family: str, hardware: str, median: float) -> FamilyError:
    return FamilyError(family, hardware, "cross-validated", 30, median, 5 * median, "d", "2026-01-01")


def test_an_op_takes_the_larger_of_its_two_figures() -> None:
    table = (_figure("matmul", "wormhole_n150", 4.0), _figure("contraction", "wormhole", 24.0))
    chosen = error_for_op("gemm", {"M": 1024, "K": 1024, "N": 1024}, "wormhole_n150", table)
    assert chosen is not None and chosen.family == "contraction"
    # an architecture's figure is the chip's own: preferred to another architecture's
    table = (_figure("elementwise", "blackhole", 50.0), _figure("elementwise", "wormhole", 10.0))
    chosen = error_for_op("binary", {"R": 1024, "C": 1024}, "wormhole_n150", table)
    assert chosen is not None and chosen.hardware == "wormhole"
    assert error_for_op("binary", {"R": 1024, "C": 1024}, "wormhole_n150", ()) is None


def test_ingest_uncalibrated_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """``ingest --uncalibrated`` predicts with the hardware files' costs: no row is said to be calibrated, and
    the rows of a family the shipped calibration scales are predicted otherwise without the flag (on the
    smallest shipped captures that have such rows: MNIST's softmax, DeepLabV3's convolutions)."""
    import json

    from loom_explorer import cli
    from loom_explorer.accuracy.term_calibration import shipped_scales
    from loom_explorer.data import capture_path

    said_anywhere = []
    for capture, hw in (("tt_forge_fe_mnist_linear.csv.gz", ["--hw", "wormhole_n150"]), ("bh_p100_dlv3.csv.gz", [])):
        docs = []
        for flags in ([], ["--uncalibrated"]):
            assert cli.main(["ingest", str(capture_path(capture)), "--dry-run", "--json", *hw, *flags]) == 0
            docs.append(json.loads(capsys.readouterr().out))
        calibrated, raw = ({p["row"]: p for p in d["predictions"]} for d in docs)
        assert not any("calibrated:" in p["note"] for p in raw.values())
        said = [r for r, p in calibrated.items() if "calibrated:" in p["note"] and p["predicted_ns"]]
        assert all(calibrated[r]["predicted_ns"] != raw[r]["predicted_ns"] for r in said)
        assert all(calibrated[r]["predicted_ns"] == raw[r]["predicted_ns"] for r in calibrated if r not in said)
        said_anywhere += said
    assert said_anywhere, (
        f"the shipped calibration scales some family of these reports ({sorted(shipped_scales().rows)})"
    )
