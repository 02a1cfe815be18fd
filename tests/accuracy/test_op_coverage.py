"""The coverage report by op code (``accuracy/op_coverage.py``): every op code of a capture with its share of
the device time, predicted or skipped with one reason, and the error on what is predicted."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json

import pytest

from loom_explorer import cli
from loom_explorer.accuracy.ingest import choose_hardware, read_ops_perf, report_measurements
from loom_explorer.accuracy.op_coverage import one_reason, op_code_coverage, op_code_lines, op_code_markdown
from loom_explorer.data import capture_path

DEEPSEEK = "bh_8xp150_deepseek_v3_d_p.csv.gz"


def test_every_op_code_of_a_capture_with_its_time_and_what_became_of_it() -> None:
    path = capture_path(DEEPSEEK)
    with gzip.open(path, "rt", newline="") as f:
        rows = list(csv.DictReader(f))
    ns: dict[str, float] = {}
    for r in rows:
        ns[r["OP CODE"]] = ns.get(r["OP CODE"], 0.0) + float(r["DEVICE KERNEL DURATION [ns]"])
    report = read_ops_perf(path)
    hw, grid, _ = choose_hardware(report)
    measurements = report_measurements(report, hw, None, grid)
    table = op_code_coverage(report, measurements)
    assert {c.op_code: c.device_ns for c in table} == pytest.approx(dict(ns))
    assert [c.device_ns for c in table] == sorted((c.device_ns for c in table), reverse=True)
    assert sum(c.share for c in table) == pytest.approx(1.0)
    by_code = {c.op_code: c for c in table}
    mm = by_code["MatmulDeviceOperation"]
    assert (mm.status, mm.rows, mm.kernels, mm.reason) == ("predicted", 48, ("gemm",), "")
    measured = sum(m.measured_ns or 0 for m in measurements if m.kernel == "gemm")
    predicted = sum(m.predicted_ns or 0 for m in measurements if m.kernel == "gemm")
    assert mm.error == pytest.approx(predicted / measured - 1)
    ring = by_code["RingJointSDPADeviceOperation"]
    assert (ring.status, ring.rows, ring.kernels) == ("predicted", 8, ("flash_attention",))
    assert ring.error is not None
    lines = op_code_lines(table)
    assert len(lines) == len(table) + 1 and "RingJointSDPADeviceOperation" in lines[1]
    assert op_code_markdown(table)[2].startswith("| `RingJointSDPADeviceOperation` | 8 | ")


def test_one_reason_is_the_commonest_with_its_count() -> None:
    assert one_reason([]) == ""
    assert one_reason(["a"]) == "a"
    assert one_reason(["a", "a"]) == "a (2 rows)"
    assert one_reason(["b", "a", "a", "c"]) == "a (2 of 4 rows; 2 other reasons)"
    assert one_reason(["b", "a", "a"]) == "a (2 of 3 rows; 1 other reason)"


def test_ingest_prints_and_lists_the_op_codes() -> None:
    path = str(capture_path("bh_p100_dlv3.csv.gz"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["ingest", path, "--dry-run", "--json"]) == 0
    doc = json.loads(out.getvalue())
    codes = {c["op_code"]: c for c in doc["op_codes"]}
    assert codes["Matmul"]["status"] == "predicted" and codes["Conv2dDeviceOperation"]["status"] == "predicted"
    assert codes["Pool2D"]["status"] == "skipped" and codes["HaloDeviceOperation"]["status"] == "partly"
    assert all(c["status"] in ("predicted", "partly", "skipped") for c in codes.values())
    assert all(c["reason"] for c in codes.values() if c["status"] != "predicted")
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert cli.main(["ingest", path, "--dry-run"]) == 0
    assert "coverage by op code (most device time first):" in text.getvalue()
