"""Which rows of a capture ``ingest`` analyses (``accuracy/capture_window.py``): signpost windows, trace replays
counted once or per replay, rows of one op on many devices merged, and the older CSV format without
``DEVICE ARCH`` (real captures: tt-perf-report's test data and the shipped ones)."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
from collections import defaultdict
from pathlib import Path

import pytest

from loom_explorer import cli
from loom_explorer.accuracy.capture_window import CaptureWindow, DeviceRow, merge_devices
from loom_explorer.accuracy.ingest import IngestError, choose_hardware, read_ops_perf
from loom_explorer.data import capture_path

DATA = Path(__file__).parent / "data"
INTEGRAL = DATA / "bh20_oft_integral_image_trace.csv"  # tt-perf-report's: older format, no DEVICE ARCH
V2 = DATA / "ops_perf_results_v2.csv"
SEGFORMER = "ops_perf_results_2025_02_16_18_11_10.csv.gz"  # older format, no DEVICE ARCH
DEEPSEEK = "bh_8xp150_deepseek_v3_d_p.csv.gz"  # 8 devices, the same 26 ops on each
DECODE = "bh_invalid_trace_decode_window.csv.gz"  # a traced decode step, 13 of 20 durations invalid


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _rows(path: Path) -> list[dict[str, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", newline="") as f:
        return list(csv.DictReader(f))


def _device_ns(rows: list[dict[str, str]]) -> float:
    total = 0.0
    for r in rows:
        if r["OP TYPE"] != "signpost":
            with contextlib.suppress(ValueError):
                total += float(r["DEVICE KERNEL DURATION [ns]"])
    return total


# ---- signposts ---------------------------------------------------------------------------------------


def test_a_signpost_window_keeps_the_rows_between_start_and_end() -> None:
    rows = _rows(INTEGRAL)  # integral_image_start, 7 ops, integral_image_end, three times
    whole = read_ops_perf(INTEGRAL)
    report = read_ops_perf(INTEGRAL, window=CaptureWindow("integral_image_start", "integral_image_end"))
    inside = rows[1:8]  # the file's lines 3..9: the first window's ops
    assert [r["OP TYPE"] for r in inside] == ["tt_dnn_device"] * 7
    assert sum(ns for _, ns in report.device_ns_by_op) == pytest.approx(_device_ns(inside))
    assert sum(ns for _, ns in whole.device_ns_by_op) == pytest.approx(_device_ns(rows))
    assert sum(n for _, n in report.device_rows_by_op) == 7
    left = {x.row for x in report.left_out}
    assert 2 in left and 10 in left and set(range(3, 10)).isdisjoint(left)  # the signposts bound it
    assert all(x.kind == "signpost window" for x in report.left_out) and len(report.left_out) == 27 - 7


def test_the_same_signpost_as_start_and_end_takes_its_next_occurrence() -> None:
    rows = _rows(INTEGRAL)
    report = read_ops_perf(INTEGRAL, window=CaptureWindow("integral_image_start", "integral_image_start"))
    # after the first start, up to the second: the first window's 7 ops and its end signpost (no device time)
    assert sum(ns for _, ns in report.device_ns_by_op) == pytest.approx(_device_ns(rows[1:9]))
    assert [s.reason for s in report.skipped if s.row == 10] == ["signpost (a marker, not an op)"]


def test_a_signpost_the_capture_does_not_have_is_refused_naming_the_ones_it_has() -> None:
    with pytest.raises(IngestError, match=r"no signpost 'PERF_DECODE' \(--start-signpost\); its signposts: "):
        read_ops_perf(INTEGRAL, window=CaptureWindow(start_signpost="PERF_DECODE"))
    code, _, err = run("ingest", str(INTEGRAL), "--dry-run", "--end-signpost", "nope")
    assert code == 2 and "no signpost 'nope' after the start (--end-signpost)" in err
    assert "integral_image_start, integral_image_end" in err


def test_ingest_says_how_many_rows_the_window_left_out() -> None:
    code, out, err = run(
        "ingest", str(V2), "--dry-run", "--start-signpost", "start", "--end-signpost", "stop", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["window"] == {
        "start_signpost": "start",
        "end_signpost": "stop",
        "trace_replays": "each",
        "merge_devices": False,
    }
    assert {x["row"] for x in doc["left_out"]} == {2, 16}  # the two signposts themselves
    code, out, _ = run("ingest", str(V2), "--dry-run", "--start-signpost", "start", "--end-signpost", "stop")
    assert code == 0 and "2 rows left out of the analysis (--start-signpost start --end-signpost stop):" in out


# ---- trace replays -----------------------------------------------------------------------------------


def _traced(tmp_path: Path, sessions: int) -> Path:
    """The v2 fixture's device rows replayed ``sessions`` times as trace 7 (its signposts kept outside)."""
    rows = list(csv.reader(V2.open(newline="")))
    header, body = rows[0], rows[1:]
    trace, replay = header.index("METAL TRACE ID"), header.index("METAL TRACE REPLAY SESSION ID")
    out = [header]
    for session in range(1, sessions + 1):
        for r in body:
            if r[1] != "signpost":
                cells = list(r)
                cells[trace], cells[replay] = "7", str(session)
                out.append(cells)
    path = tmp_path / "traced.csv"
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(out)
    return path


def test_trace_replays_count_once_or_each_as_asked(tmp_path: Path) -> None:
    once_file = read_ops_perf(V2)
    path = _traced(tmp_path, 3)
    each = read_ops_perf(path)
    once = read_ops_perf(path, window=CaptureWindow(trace_replays="once"))
    single = sum(ns for _, ns in once_file.device_ns_by_op)
    assert sum(ns for _, ns in each.device_ns_by_op) == pytest.approx(3 * single)
    assert sum(ns for _, ns in once.device_ns_by_op) == pytest.approx(single)
    assert len(each.ops) == 3 * len(once.ops) and len(once.ops) == len(once_file.ops)
    assert {x.kind for x in once.left_out} == {"trace replay"}
    assert "replay session 2 of trace 7" in once.left_out[0].reason
    code, out, err = run("ingest", str(path), "--dry-run", "--trace-replays", "once")
    assert code == 0, err
    assert "rows left out of the analysis (--trace-replays once):" in out


# ---- devices merged ----------------------------------------------------------------------------------


def test_devices_merge_to_the_slowest_and_collectives_to_the_mean() -> None:
    rows = [r for r in _rows(capture_path(DEEPSEEK)) if r["OP TYPE"] != "signpost"]
    by_device: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by_device[r["DEVICE ID"]].append(r)
    assert len(by_device) == 8 and {len(v) for v in by_device.values()} == {26}
    expected = 0.0
    for block in zip(*by_device.values(), strict=True):  # the i-th op of every device
        assert len({r["OP CODE"] for r in block}) == 1
        times = [float(r["DEVICE KERNEL DURATION [ns]"]) for r in block]
        collective = any(w in block[0]["OP CODE"] for w in ("AllGather", "ReduceScatter", "AllReduce"))
        expected += sum(times) / len(times) if collective else max(times)
    report = read_ops_perf(capture_path(DEEPSEEK), window=CaptureWindow(merge_devices=True))
    assert sum(ns for _, ns in report.device_ns_by_op) == pytest.approx(expected)
    assert sum(n for _, n in report.device_rows_by_op) == 26 and len(report.left_out) == 7 * 26
    assert choose_hardware(report)[0] == "blackhole_p150a"  # still told as 8 devices: never the p100a
    matmuls = [op for op in report.ops if op.op_code == "MatmulDeviceOperation"]
    slowest = max(float(r["DEVICE KERNEL DURATION [ns]"]) for r in rows if r["OP CODE"] == "MatmulDeviceOperation")
    assert max(op.device_kernel_ns for op in matmuls) == pytest.approx(slowest)


def test_a_device_missing_an_op_keeps_its_next_op_for_a_later_block() -> None:
    rows = [
        DeviceRow(2, "A", 0, 10.0),
        DeviceRow(3, "A", 1, 12.0),
        DeviceRow(4, "B", 0, 5.0),
        DeviceRow(5, "C", 1, 7.0),  # device 1 never ran B
        DeviceRow(6, "C", 0, 9.0),
    ]
    merged = merge_devices(rows)
    assert merged.kept_ns == {3: 12.0, 4: 5.0, 6: 9.0}
    assert [(x.row, "into row 3" in x.reason or "into row 6" in x.reason) for x in merged.left] == [
        (2, True),
        (5, True),
    ]


# ---- the older format --------------------------------------------------------------------------------


def test_an_older_capture_without_device_arch_asks_for_the_hardware() -> None:
    path = str(capture_path(SEGFORMER))
    code, _, err = run("ingest", path, "--dry-run")
    assert code == 2
    assert "does not say which chip it ran on (no DEVICE ARCH column); give --hw" in err
    code, out, err = run("ingest", path, "--dry-run", "--hw", "wormhole_n150", "--json")
    assert code == 0, err
    doc = json.loads(out)
    by_code = {c["op_code"]: c for c in doc["op_codes"]}
    # the older op codes are read by the families that claim them
    assert by_code["LayerNorm"]["status"] == "predicted" and by_code["LayerNorm"]["kernels"] == ["layernorm"]
    assert by_code["Softmax"]["status"] == "predicted"
    assert by_code["BinaryDeviceOperation"]["predicted_rows"] > 0
    # the matmuls whose config ttnn derives from a shard spec the rows do not print are skipped, saying why
    assert by_code["Matmul"]["status"] == "partly" and by_code["Matmul"]["reason"]
    assert by_code["UnaryDeviceOperation"]["status"] == "predicted"
    assert by_code["OptimizedConvNew"]["status"] == "predicted"  # the older conv op, read by the convolution family
    assert {o["op_code"] for o in doc["ingested"]} >= {"LayerNorm", "Softmax", "BinaryDeviceOperation"}
    assert sum(c["device_ns"] for c in doc["op_codes"]) == pytest.approx(_device_ns(_rows(capture_path(SEGFORMER))))


# ---- invalid durations, numbers written as floats ------------------------------------------------------


def test_invalid_durations_are_left_out_as_tt_perf_report_leaves_them() -> None:
    path = capture_path(DECODE)
    rows = _rows(path)
    report = read_ops_perf(path, window=CaptureWindow("PERF_DECODE", "PERF_DECODE_END"))
    invalid = {x.row for x in report.left_out if x.kind == "invalid duration"}
    assert {x.row for x in report.left_out} - invalid == {2, 23}  # the two signposts
    expected = set()
    valid_ns = 0.0
    for line, r in enumerate(rows, start=2):
        if r["OP TYPE"] == "signpost":
            continue
        duration, gap = float(r["DEVICE KERNEL DURATION [ns]"]), float(r["OP TO OP LATENCY [ns]"])
        if gap < -1e6 and abs(gap) > max(duration / 2, 1e6):
            expected.add(line)
        else:
            valid_ns += duration
    assert invalid == expected and len(invalid) == 13
    # tt-perf-report 1.4.1's is_invalid_device_duration flags the same 13 rows and leaves 60,546 ns
    assert sum(ns for _, ns in report.device_ns_by_op) == pytest.approx(valid_ns) == 60_546
    assert choose_hardware(report)[0] == "blackhole_p100a"  # told from the rows, though none is ingested
    assert read_ops_perf(path).device_ns_by_op == report.device_ns_by_op  # the window is the whole step


def test_whole_numbers_written_as_floats_read_as_whole_numbers(tmp_path: Path) -> None:
    rows = list(csv.reader(V2.open(newline="")))
    header = rows[0]
    for column in ("DEVICE ID", "CORE COUNT", "AVAILABLE WORKER CORE COUNT"):
        i = header.index(column)
        for r in rows[1:]:
            if r[i]:
                r[i] += ".0"
    path = tmp_path / "floats.csv"
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    assert read_ops_perf(path).ops == read_ops_perf(V2).ops


def test_grid_gives_the_run_s_worker_grid_to_a_capture_that_does_not_tell_it() -> None:
    path = str(capture_path("ops_perf_results_2025_09_18_11_39_20.csv.gz"))  # no DEVICE ARCH, no worker count
    code, out, err = run("ingest", path, "--dry-run", "--hw", "blackhole_p150a", "--grid", "5x4", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["chip"].endswith("on the 5x4 worker grid given (--grid)")
    # an op whose config names no grid of its own runs on the given grid, never on the whole chip
    given = {p["hardware"] for p in doc["predictions"]}
    assert "blackhole_p150a@5x4" in given and "blackhole_p150a" not in given
    whole = json.loads(run("ingest", path, "--dry-run", "--hw", "blackhole_p150a", "--json")[1])
    assert "blackhole_p150a" in {p["hardware"] for p in whole["predictions"]}
    code, _, err = run("ingest", path, "--dry-run", "--hw", "blackhole_p150a", "--grid", "14x4")
    assert code == 2 and "--grid 14x4 does not fit blackhole_p150a's 13x10 grid" in err
