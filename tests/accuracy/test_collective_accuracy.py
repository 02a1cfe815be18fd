"""The collective model judged leave one topology out, and the collective rows of a multi-device capture
predicted by ``ingest`` (``accuracy/collective_*.py``, ``capture_collective.py``)."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence

import pytest

from loom_explorer.accuracy import collective_accuracy as ca
from loom_explorer.accuracy.capture import RowSkip
from loom_explorer.accuracy.capture_collective import collective_kind, infer_mesh
from loom_explorer.accuracy.collective_calibration import UNCALIBRATED, CollectiveConstants, fit_constants
from loom_explorer.accuracy.collective_ingest import predict_collectives
from loom_explorer.accuracy.collective_reading import ring_links
from loom_explorer.accuracy.collective_rows import CollectiveRow, published_rows
from loom_explorer.accuracy.ingest import read_ops_perf
from loom_explorer.cli import main
from loom_explorer.data import PUBLISHED_DIR, capture_path
from loom_explorer.hardware.mesh_load import load_mesh
from loom_explorer.model.collective import CollectiveError, CollectiveKind, FabricTopology

DEEPSEEK = "bh_8xp150_deepseek_v3_d_p.csv.gz"


def test_op_codes_plain_and_fused() -> None:
    assert collective_kind("allgatherasyncdeviceoperation") is CollectiveKind.all_gather
    assert collective_kind("reducescatterminimalasyncdeviceoperation") is CollectiveKind.reduce_scatter
    assert collective_kind("allreduceasync") is CollectiveKind.all_reduce
    with pytest.raises(RowSkip, match="fused"):
        collective_kind("allgathermatmulasyncdeviceoperation")


def test_ring_placement_on_meshes() -> None:
    p150x8, t3000 = load_mesh("p150x8"), load_mesh("t3000")
    assert ring_links(p150x8, 4, 1, FabricTopology.linear) == p150x8.columns.links
    assert ring_links(t3000, 8, None, FabricTopology.ring) == min(t3000.rows.links, t3000.columns.links)
    with pytest.raises(CollectiveError, match="has 2 chips on that axis"):
        ring_links(p150x8, 4, 0, FabricTopology.linear)


def test_published_rows_read_every_row_and_fill_blanks_from_a_row_of_the_same_shapes() -> None:
    rows, skipped = published_rows()
    cells = _csv_rows()
    assert len(rows) + len(skipped) == len(cells)
    measured = [r for r in rows if not r.upper_bound]
    bounds = [r for r in rows if r.upper_bound]
    # a row with a time is a measurement; one with only a high end (a perf target) an upper bound
    assert len(measured) == sum(bool(c["time_us"]) for c in cells) - len(skipped)
    assert len(bounds) == sum(not c["time_us"] and bool(c["time_us_high"]) for c in cells)
    qkv = next(r for r in rows if r.case == "glx_meas_rs_qkv_8k")
    assert "dtype bfloat8_b from glx_rs_8k_seq_sh_1280w" in qkv.inferred
    # 8192 x 320 bfloat8_b: 256 x 10 tiles of 1088 B
    assert qkv.op.slice_bytes == 256 * 10 * 1088 and qkv.op.page_bytes == 1088


def _csv_rows() -> list[dict[str, str]]:
    with (PUBLISHED_DIR / "collective_times.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def _rows() -> tuple[CollectiveRow, ...]:
    return ca.all_rows().rows


def test_leave_one_topology_out_never_trains_on_the_held_out_topology(monkeypatch: pytest.MonkeyPatch) -> None:
    trained_on: list[set[str]] = []

    def spy(rows: Sequence[CollectiveRow]) -> CollectiveConstants:
        trained_on.append({r.topology for r in rows})
        return fit_constants(rows)

    monkeypatch.setattr(ca, "fit_constants", spy)
    held = ca.leave_one_topology_out(_rows())
    assert [h.topology for h in held] == sorted({r.topology for r in _rows()})
    assert len(held) >= 3
    for h, train in zip(held, trained_on, strict=True):
        assert h.topology not in train and train
        assert {r.topology for r in h.rows} == {h.topology}


def test_upper_bounds_are_counted_never_errors() -> None:
    a = ca.collective_accuracy()
    galaxy = next(h for h in a.held_out if h.topology == "galaxy")
    bounds = [(r, p) for r, p in zip(galaxy.rows, galaxy.predicted_us, strict=True) if r.upper_bound]
    galaxy_targets = [c for c in _csv_rows() if c["mesh"] == "galaxy" and not c["time_us"]]
    assert galaxy.calibrated.bounds == len(bounds) == len(galaxy_targets) > 0
    assert galaxy.calibrated.bounds_held == sum(p <= r.time_us for r, p in bounds)
    assert len(galaxy.calibrated.errors) == sum(not r.upper_bound for r in galaxy.rows)


def test_fit_recovers_constants_it_was_made_with() -> None:
    """Rows whose times are the calibrated model's at eta 0.7, c 20,000 cycles give back those constants."""
    made = CollectiveConstants(0.7, 20_000.0)
    rows = [
        CollectiveRow(r.case, r.topology, r.mesh, r.op, made.predict_us(r.op, r.mesh), False, r.source)
        for r in _rows()
        if not r.upper_bound
    ]
    fitted = fit_constants(rows)
    assert fitted.link_efficiency == pytest.approx(0.7, rel=1e-3)
    assert fitted.extra_fixed_cycles == pytest.approx(20_000, rel=1e-2)


def test_deepseek_capture_collectives_are_predicted_per_device() -> None:
    report = read_ops_perf(capture_path(DEEPSEEK))
    assert len(report.collectives) == 32
    assert not any("allgather" in s.op_code.lower() or "reducescatter" in s.op_code.lower() for s in report.skipped)
    done = predict_collectives(report, constants=UNCALIBRATED)
    assert done.choice is not None and done.choice.mesh is not None and done.choice.mesh.name == "p150x8"
    assert len(done.predicted) == 32 and not done.skipped
    assert {c.device_id for c, _ in done.predicted} == set(range(8))
    # the error figure is the module's own: the same rows scored by the accuracy table's first-principles model
    rows, _ = ca.report_rows(report, done.choice)
    expected = [abs(UNCALIBRATED.predict_us(r.op, r.mesh) / r.time_us - 1) for r in rows]
    got = [abs((m.predicted_ns or 0) / (m.measured_ns or 1) - 1) for _, m in done.predicted]
    assert got == pytest.approx(expected)
    p150 = next(h for h in ca.collective_accuracy().held_out if h.topology == "p150x8")
    in_fold = [r for r in p150.rows if r.source.startswith(DEEPSEEK)]  # the fold also holds published rows
    assert [r.case for r in in_fold] == [r.case for r in rows]
    first = dict(zip((r.case for r in p150.rows if not r.upper_bound), p150.first_principles.errors, strict=True))
    assert [first[r.case] for r in rows] == pytest.approx(expected)


def test_a_mesh_that_cannot_be_told_skips_with_the_reason() -> None:
    report = read_ops_perf(capture_path(DEEPSEEK))
    readings = [c.reading for c in report.collectives]
    assert infer_mesh(["blackhole"], range(5), readings).mesh is None
    assert "give --mesh" in infer_mesh(["blackhole"], range(5), readings).reason
    assert "no single DEVICE ARCH" in infer_mesh(["blackhole", "wormhole_b0"], range(8), readings).reason
    done = predict_collectives(report, mesh="t3000", constants=UNCALIBRATED)  # a Wormhole 2x4: rings fit
    assert done.choice is not None and done.choice.mesh is not None and done.choice.mesh.name == "t3000"


def test_cli_accuracy_collectives(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["accuracy", "--collectives"]) == 0
    out = capsys.readouterr().out
    a = ca.collective_accuracy()
    for h in a.held_out:
        line = next(x for x in out.splitlines() if x.startswith(h.topology))
        assert f"{100 * (h.first_principles.median or 0):.1f}%" in line
    assert f"calibrated met on {a.met} of {len(a.held_out)}" in out
    assert "CCL bandwidth benchmark on t3000: two runs time 247 common cells" in out


def test_the_error_by_op_groups_every_measured_held_out_row(capsys: pytest.CaptureFixture[str]) -> None:
    """Each group is one topology, kind, line or ring and chip count; together they hold every measured row;
    a group's largest-slice error is its row of the largest slice; the CLI's JSON carries them."""
    a = ca.collective_accuracy()
    groups = ca.by_op(a)
    measured = [r for h in a.held_out for r in h.rows if not r.upper_bound]
    assert sum(len(g.signed) for g in groups) == len(measured)
    assert len({(g.topology, g.kind, g.fabric, g.ring_size) for g in groups}) == len(groups)
    key = ("t3000", "all_gather", "linear", 8)
    line8 = next(g for g in groups if (g.topology, g.kind, g.fabric, g.ring_size) == key)
    rows = [r for r in measured if (r.topology, r.op.kind.value, r.op.topology.value, r.op.ring_size) == key]
    biggest = max(rows, key=lambda r: r.op.slice_bytes)
    assert line8.largest == UNCALIBRATED.predict_us(biggest.op, biggest.mesh) / biggest.time_us - 1
    assert min(line8.signed) <= line8.median_signed <= max(line8.signed)
    assert main(["accuracy", "--collectives", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["by_op"]) == len(groups)
    assert {"median_abs_error", "largest_slice_signed_error"} <= set(doc["by_op"][0])


def test_cli_accuracy_collectives_refuses_the_flags_of_other_modes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["accuracy", "--collectives", "--hw", "wormhole_n150", "--skip-bad-rows"]) == 2
    assert "takes no --hw, --skip-bad-rows" in capsys.readouterr().err


def test_cli_ingest_prints_the_collective_rows(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    assert main(["ingest", str(capture_path(DEEPSEEK)), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "32 collective rows ingested" in out and "collectives on p150x8" in out
    assert sum(1 for x in out.splitlines() if "reduce_scatter linear 4 axis 1 x2 links" in x) == 16
