"""accuracy and calibrate on the published matmul measurements in ``loom_explorer/data/published``
(``families/contraction/published.py``, ``published_scoring.py``, ``published_calibrate.py``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from loom_explorer.accuracy.published_table import DataError
from loom_explorer.cli import main
from loom_explorer.data import published_path
from loom_explorer.families.contraction.published import predict_rows
from loom_explorer.families.contraction.published_calibrate import CONSTANTS
from loom_explorer.families.contraction.published_scoring import accuracy_json, accuracy_tables
from loom_explorer.hardware import load_hardware

CALIBRATION, CONFIGS = published_path("gemm_flops_calibration.csv"), published_path("gemm_manual_configs.csv")


@pytest.fixture(scope="module")
def published() -> dict[str, object]:
    return accuracy_json(accuracy_tables(predict_rows(CALIBRATION, CONFIGS)))


def test_accuracy_on_the_published_data(published) -> None:
    rows = published["rows"]
    assert len(rows) == 199  # the use_trace=True rows
    assert all(r["predicted_ns"] is not None for r in rows)  # the model finds every measured config legal
    assert set(published["by_card"]) == {"n150", "p150"}
    assert published["summary"]["n"] == 199 and published["summary"]["spearman"] > 0.9
    assert len(published["speedups"]["pairs"]) > 50
    for card in ("n150", "p150"):
        c = published["versus_roofline"][card]
        n = published["by_card"][card]["n"]
        # every row scored by the model and by the roofline, in sample and left out by shape
        assert c["model"]["all"]["n"] == c["roofline"]["all"]["n"] == c["roofline_cross_validated"]["all"]["n"] == n
        assert set(c["model"]["by_kind"]) == {"manual", "out_of_box"}
        assert c["model_cross_validated"] is None  # only with --cross-validate
        # the roofline refitted without a shape predicts it worse than the one fitted on every row
        assert (
            c["roofline_cross_validated"]["all"]["median_abs_err_pct"]
            >= c["roofline"]["all"]["median_abs_err_pct"] - 1.0
        )
    row = rows[0]
    assert {"card", "M", "K", "N", "time_ns", "predicted_ns", "measured_ns", "error_pct"} <= set(row)


def test_accuracy_accepts_another_file_of_the_same_format(tmp_path) -> None:
    with CALIBRATION.open() as f:
        reader = csv.DictReader(f)
        rows = [r for r in reader if r["use_trace"] == "True" and r["config_kind"] == "out_of_box"][:5]
        fields = reader.fieldnames
    for r in rows:
        r["M"] = str(int(r["M"]) + 96)  # shapes it has not seen
    subset = tmp_path / "mine.csv"
    with subset.open("w", newline="") as f:
        assert fields is not None
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    doc = accuracy_json(accuracy_tables(predict_rows(subset, None)))
    printed = doc["rows"]
    assert isinstance(printed, list) and len(printed) == 5 and all(r["predicted_ns"] for r in printed)


def test_accuracy_names_missing_columns(tmp_path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("card,M,K\nn150,1,2\n")
    with pytest.raises(DataError, match="missing columns .*time_ns"):
        predict_rows(bad, None)
    with pytest.raises(DataError, match="no such file"):
        predict_rows(tmp_path / "none.csv", None)


@pytest.mark.slow
def test_calibrate_writes_a_new_yaml_and_improves_the_training_fit(tmp_path, capsys) -> None:
    out = tmp_path / "n150_calibrated.yaml"
    # the shipped file as it was before its calibration (its notes undone): the fit starts from its values
    import re

    from loom_explorer.accuracy.calibrate import CALIBRATED_NOTE, calibration_notes
    from loom_explorer.hardware.load import resolve_hardware_path

    text = CALIBRATED_NOTE.sub("", Path(resolve_hardware_path("wormhole_n150")).read_text())
    for path, was in calibration_notes("wormhole_n150", CONSTANTS).items():
        text = re.sub(rf"^(\s+{path.split('.')[-1]}:\s*)[\d.]+", rf"\g<1>{was:g}", text, flags=re.MULTILINE)
    start = tmp_path / "n150.yaml"
    start.write_text(text)
    # an integer, a per-fidelity entry and a rate, with the constant the shipped file fits (fewer: quicker)
    fitted_constants = (
        "compute.tile_pack_cycles,compute.matmul_tile_cycles.hifi2,dram.core_read_bytes_per_cycle,"
        "dram.step_read_bytes_per_cycle"
    )
    assert (
        main(
            [
                "calibrate",
                "--hw",
                str(start),
                "--data",
                str(CALIBRATION),
                "--configs",
                str(CONFIGS),
                "-o",
                str(out),
                "--constants",
                fitted_constants,
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "fitted constants, in sample" in text and "cross-validated" not in text
    fitted = load_hardware(str(out))
    shipped = load_hardware("wormhole_n150")
    assert fitted.grid == shipped.grid
    changed = [
        (path.split(".")[-1], was)
        for path, was, now in re.findall(r"^\s+([a-z_0-9.]+)\s+([\d.]+) -> ([\d.]+)$", text, re.MULTILINE)
        if float(was) != float(now)
    ]
    assert changed, text
    for key, was in changed:  # each changed constant says what it was; the others keep their source
        assert f"{key} calibrated (was {was})" in out.read_text()
    # a per-fidelity entry is written into its table (when it moved), never below the ideal value, and an
    # unchanged one keeps its source comment
    for fidelity in ("lofi", "hifi2", "hifi4"):
        moved = (
            fitted.compute.matmul_tile_cycles[fidelity]  # type: ignore[index]  # a Fidelity is its name
            != shipped.compute.matmul_tile_cycles[fidelity]  # type: ignore[index]
        )
        assert (f"{fidelity} calibrated (was" in out.read_text()) == moved
    assert all(fitted.compute.matmul_tile_cycles[f] >= c for f, c in shipped.compute.matmul_tile_cycles.items())
    # the shipped file is never written, and an existing output is not overwritten
    assert main(["calibrate", "--hw", "wormhole_n150", "--data", str(CALIBRATION), "-o", str(out)]) == 2
    assert (
        main(
            [
                "calibrate",
                "--hw",
                "wormhole_n150",
                "--data",
                str(CALIBRATION),
                "-o",
                str(resolve_hardware_path("wormhole_n150")),
            ]
        )
        == 2
    )
    assert "never writes a shipped" in capsys.readouterr().err

    medians = dict(re.findall(r"(\w+) constants, in sample\s+n=\d+\s+median \|err\| ([\d.]+)%", text))
    # coordinate descent only accepts a lower loss; on these rows the median follows
    assert float(medians["fitted"]) < float(medians["given"])


def test_accuracy_with_another_hardware_file_for_one_card(tmp_path, capsys, published) -> None:
    """``--hw p150=FILE`` predicts the p150 rows with FILE (here the shipped file with a cheaper tile pack)
    and leaves the n150 rows alone; a bad pin or a file of the other chip is refused, naming the pin."""
    from loom_explorer.hardware.load import resolve_hardware_path

    text = resolve_hardware_path("blackhole_p150a").read_text()
    pack = load_hardware("blackhole_p150a").compute.tile_pack_cycles
    assert pack > 4 and f"  tile_pack_cycles: {pack} " in text
    mine = tmp_path / "p150_mine.yaml"
    mine.write_text(text.replace(f"  tile_pack_cycles: {pack} ", "  tile_pack_cycles: 4 "))
    args = ["accuracy", "--data", str(CALIBRATION), "--configs", str(CONFIGS), "--json"]
    assert main([*args, "--hw", f"p150={mine}"]) == 0
    doc = json.loads(capsys.readouterr().out)
    before = {
        (r["card"], r["config_kind"], r["M"], r["K"], r["N"], r["dtype"], r["math_fidelity"]): r["predicted_ns"]
        for r in published["rows"]
    }
    after = {
        (r["card"], r["config_kind"], r["M"], r["K"], r["N"], r["dtype"], r["math_fidelity"]): r["predicted_ns"]
        for r in doc["rows"]
    }
    assert before.keys() == after.keys()
    hashes = {r["card"]: r["hardware_sha256"] for r in doc["rows"]}
    assert hashes["p150"] != {r["card"]: r["hardware_sha256"] for r in published["rows"]}["p150"]
    assert all(after[k] == v for k, v in before.items() if k[0] == "n150")
    p150 = [(after[k], v) for k, v in before.items() if k[0] == "p150"]
    assert all(a <= b for a, b in p150) and sum(a < b for a, b in p150) > len(p150) / 2
    for pin, message in (
        ("x150=wormhole_n150", "CARD one of n150, p150"),
        ("p150=wormhole_n150", "describes a wormhole_b0 chip"),
    ):
        assert main([*args, "--hw", pin]) != 0
        assert message in capsys.readouterr().err


def test_a_traced_wall_clock_time_is_the_device_latency_plus_the_op_to_op_gap(tmp_path) -> None:
    """The benchmark times wall clock over a trace of back-to-back ops, so each prediction adds the dispatcher's
    op-to-op gap (``compute.op_to_op_gap_cycles``) to the model's device latency, as a term of its own: with the
    gap set to 0 the same rows are predicted exactly that many cycles faster (on n150, 1 GHz: 1 cycle = 1 ns)."""
    with CALIBRATION.open() as f:
        reader = csv.DictReader(f)
        rows = [r for r in reader if r["use_trace"] == "True" and r["card"] == "n150"][:3]
        fields = reader.fieldnames
    subset = tmp_path / "three.csv"
    with subset.open("w", newline="") as f:
        assert fields is not None
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    n150 = load_hardware("wormhole_n150")
    gap = n150.compute.op_to_op_gap_cycles
    assert gap > 0 and n150.clock_ghz == 1.0
    no_gap = n150.model_copy(update={"compute": n150.compute.model_copy(update={"op_to_op_gap_cycles": 0})})
    with_gap = predict_rows(subset, CONFIGS, {"n150": n150}).rows
    without = predict_rows(subset, CONFIGS, {"n150": no_gap}).rows
    assert len(with_gap) == len(without) == 3
    for a, b in zip(with_gap, without, strict=True):
        assert a.breakdown["op_to_op_gap"] == gap and b.breakdown["op_to_op_gap"] == 0
        assert b.predicted_cycles is not None and b.predicted_ns is not None
        assert a.predicted_cycles == b.predicted_cycles + gap == sum(a.breakdown.values())
        assert a.predicted_ns == pytest.approx(b.predicted_ns + gap)
