"""Real device-profiler captures (loom_explorer/data/published/captures, from tenstorrent/tt-perf-report):
the chip told from each, what is predicted of its device time and with what error, and ``improve`` on one
of them, its configs read back by ``predict``."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
from pathlib import Path

import pytest

from loom_explorer import cli
from loom_explorer.accuracy.captures_table import capture_row, document, family_markdown, family_of
from loom_explorer.accuracy.improve import improve_report
from loom_explorer.accuracy.improve_configs import ImproveFileError, read_config
from loom_explorer.accuracy.ingest import (
    IngestError,
    choose_hardware,
    read_ops_perf,
    read_ops_perf_bytes,
    report_measurements,
)
from loom_explorer.data import CAPTURE_CHIPS, CAPTURES, capture_path

ROOT = Path(__file__).resolve().parents[2]
CLIP = "wh_clip_encoder_2.csv.gz"

# (capture, hardware told, grid told): DEVICE ARCH, AVAILABLE WORKER CORE COUNT and the devices decide
TOLD = [
    ("wh_clip_encoder_2.csv.gz", "wormhole_n150", (8, 8)),
    ("bh_64_clip_encoder_1.csv.gz", "blackhole_p150a", (8, 8)),  # 64 workers: the configs' 8x8
    ("bh_8xp150_deepseek_v3_d_p.csv.gz", "blackhole_p150a", (11, 10)),  # 110 workers on 8 devices: not a p100a
    ("bh_p100_dlv3.csv.gz", "blackhole_p100a", (11, 10)),  # 110 workers, one device
    ("bh20_oft.csv.gz", "blackhole_p150a", (5, 4)),
    ("bh_invalid_trace_decode_window.csv.gz", "blackhole_p100a", (11, 10)),  # 110 workers, one device
]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name,hardware,grid", TOLD)
def test_the_chip_and_grid_are_told_from_the_capture(name: str, hardware: str, grid: tuple[int, int]) -> None:
    hw, told, why = choose_hardware(read_ops_perf(capture_path(name)))
    assert (hw, told) == (hardware, grid) and "told from the capture" in why


# captures that name the architecture but not the board, whose board published/README.md states
BOARD_STATED = {  # each a chip of a Blackhole p300c
    "ops_perf_results_2026_07_29_21_38_48.csv.gz": "blackhole",
    "ops_perf_results_fused_prefill_final_2026_07_22_17_56_07.csv.gz": "blackhole",
}


@pytest.mark.parametrize("name", sorted(CAPTURE_CHIPS))
def test_a_capture_that_names_no_chip_is_predicted_on_the_one_stated_for_it(name: str) -> None:
    assert {n for n, _, _ in TOLD} | set(CAPTURE_CHIPS) == set(CAPTURES)
    report = read_ops_perf(capture_path(name))
    if name in BOARD_STATED:  # the architecture and worker count are the capture's; the board is stated
        hw, grid = CAPTURE_CHIPS[name]
        assert {op.device_arch for op in report.ops} == {BOARD_STATED[name]} and hw.startswith(BOARD_STATED[name])
        assert choose_hardware(report)[1] == grid  # the grid is the capture's worker count, as told
    else:
        with pytest.raises(IngestError, match="no DEVICE ARCH column"):
            choose_hardware(report)
    row = capture_row(name)
    assert (row.hardware, row.grid, row.stated) == (*CAPTURE_CHIPS[name], True)
    assert "(stated: not in the capture)" in row.markdown()


@pytest.mark.slow
def test_every_real_capture_is_mostly_covered_where_it_can_be() -> None:
    rows = {name: capture_row(name).coverage for name in CAPTURES}
    # MinimalMatmulOp, auto-configured, L1-interleaved and batched matmuls are predicted; not the one-tile
    # attention scores (ttnn's default runs them on a core the model's candidates do not spread to)
    assert rows["wh_clip_encoder_2.csv.gz"].share_of_matmul_attention > 0.9
    assert rows["bh_64_clip_encoder_1.csv.gz"].share_of_matmul_attention > 0.9
    assert rows["bh_p100_dlv3.csv.gz"].share_of_matmul_attention == pytest.approx(1.0)
    assert rows["bh20_oft.csv.gz"].share_of_matmul_attention == pytest.approx(1.0)
    # DeepSeek's ring-joint attention is predicted per device (families/attention/ring.py), with its matmuls
    assert rows["bh_8xp150_deepseek_v3_d_p.csv.gz"].share_of_matmul_attention == pytest.approx(1.0)
    # the autoports' 1-D multicast, batched-expert and fp32-output matmuls and their SDPA; tt-forge's matmuls
    for name in (*BOARD_STATED, "tt_forge_fe_mnist_linear.csv.gz"):
        assert rows[name].share_of_matmul_attention == pytest.approx(1.0), name
    for c in rows.values():  # norms, softmax and element-wise ops count too
        assert c.share >= c.predicted_matmul_attention_ns / c.device_ns


# the transcribed autoport captures' signposted windows against their runs' own tt-perf-report summaries
# (published/README.md): (start signpost, op count, device kernel us per op code, of the summary)
PUBLISHED_WINDOWS = {
    "ops_perf_results_2026_07_29_21_38_48.csv.gz": ("PERF_PREFILL", 16, {"MatmulDeviceOperation": 350.30}),
    "ops_perf_results_fused_prefill_final_2026_07_22_17_56_07.csv.gz": (
        "FUSED_PREFILL",
        52,
        {"MatmulDeviceOperation": 6023.34, "BinaryNgDeviceOperation": 318.07, "SDPAOperation": 9.90},
    ),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED_WINDOWS))
def test_a_transcribed_capture_sums_to_its_runs_published_summary(name: str) -> None:
    start, count, sums = PUBLISHED_WINDOWS[name]
    ops = []
    with gzip.open(capture_path(name), "rt", newline="") as f:
        inside = False
        for row in csv.DictReader(f):
            if row["OP TYPE"] == "signpost":
                inside = row["OP CODE"] == start
            elif inside:
                ops.append((row["OP CODE"], float(row["DEVICE KERNEL DURATION [ns]"])))
    assert len(ops) == count
    for op_code, us in sums.items():
        assert sum(ns for code, ns in ops if code == op_code) / 1e3 == pytest.approx(us, abs=0.005)


def test_the_error_per_family_adds_up_the_kernels_of_every_capture() -> None:
    rows = [capture_row(name) for name in ("bh_64_clip_encoder_1.csv.gz", "bh_p100_dlv3.csv.gz")]
    lines = family_markdown(rows)[2:]
    counts = {line.split(" | ")[0].strip("| "): int(line.split(" | ")[2]) for line in lines}
    assert sum(counts.values()) == sum(r.coverage.predicted_rows for r in rows)
    # DeepLabV3's convolutions are the convolution family's, its matmuls the contraction's
    assert family_of("conv2d") == "convolution" and family_of("gemm") == "contraction"
    assert {"contraction", "convolution", "data_movement", "elementwise"} <= set(counts)
    assert all(line.count(" | ") == 6 for line in lines)


@pytest.mark.slow
def test_docs_state_the_coverage_of_every_capture() -> None:
    """docs/accuracy.md carries the tables ``python -m loom_explorer.accuracy.captures_table`` prints."""
    text = (ROOT / "docs" / "accuracy.md").read_text()
    for line in document():
        assert line in text, line


def test_a_report_uploaded_as_bytes_reads_as_the_file_does() -> None:
    path = capture_path("bh_p100_dlv3.csv.gz")
    from_file, from_bytes = read_ops_perf(path), read_ops_perf_bytes("../../etc/bh_p100_dlv3.csv.gz", path.read_bytes())
    assert from_bytes.ops == tuple(op for op in from_file.ops)
    assert from_bytes.file == Path("bh_p100_dlv3.csv.gz")  # the name labels it; no folder of it is kept
    with pytest.raises(IngestError, match="damaged gzip"):
        read_ops_perf_bytes("x.csv.gz", path.read_bytes()[:200])
    with pytest.raises(IngestError, match="not UTF-8"):
        read_ops_perf_bytes("x.csv", b"\xff\xfe\x00")


@pytest.mark.slow
def test_improve_writes_configs_that_predict_reads_back_at_the_same_latency(tmp_path: Path) -> None:
    capture = str(capture_path(CLIP))
    store = str(tmp_path / "store.sqlite")
    code, out, err = run("improve", capture, "-o", str(tmp_path / "configs.json"), "--store", store)
    assert code == 0, err
    assert "predicted on wormhole_n150, 8x8 grid (told from the capture" in out
    assert "totals over the 5 improvable ops" in out and "M=19,K=64,N=19,batch=20" in out
    doc = json.loads((tmp_path / "configs.json").read_text())
    assert doc["format"] == "loom-explorer improve configs" and doc["hardware"] == "wormhole_n150"
    # the same in Python: the module's constructor calls, read back without running them
    assert run("improve", capture, "-o", str(tmp_path / "configs.py"), "--store", store)[0] == 0
    gains = [op["gain_ns"] for op in doc["ops"].values()]
    assert gains == sorted(gains, reverse=True) and gains[0] > 0
    for key, op in doc["ops"].items():
        if op["batch_repeats"] > 1:  # predict costs one batch
            continue
        for path in ("configs.json", "configs.py"):
            code, out, err = run(
                "predict", *op["predict_args"], "--ttnn-config", str(tmp_path / path), "--op", key, "--json"
            )
            assert code == 0, err
            predicted = json.loads(out)
            assert predicted["calibrated_latency_us"] * 1e3 == pytest.approx(op["best_ns"], rel=1e-9), (key, path)
    # a file is never overwritten unasked
    code, _, err = run("improve", capture, "-o", str(tmp_path / "configs.json"), "--store", store)
    assert code == 2 and "exists" in err


@pytest.mark.slow
def test_improve_json_lists_every_op_with_the_config_it_ran(tmp_path: Path) -> None:
    code, out, err = run(
        "improve", str(capture_path("bh20_oft.csv.gz")), "--json", "--store", str(tmp_path / "s.sqlite")
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["hardware"] == "blackhole_p150a" and doc["grid"] == [5, 4]
    keep = [
        op
        for op in doc["ops"]
        if op["note"].startswith("keep the config it ran") or "; keep the config it ran" in op["note"]
    ]
    assert keep and all(op["best_config"] is None and op["gain_ns"] == 0 for op in keep)
    assert all(op["ran_config"] for op in doc["ops"])
    assert doc["totals"]["gain_ns"] == pytest.approx(sum(op["gain_ns"] or 0 for op in doc["ops"]))


def test_a_configs_module_is_read_never_run(tmp_path: Path) -> None:
    planted = tmp_path / "ran"
    module = tmp_path / "configs.py"
    module.write_text(f"import os\nCONFIGS = {{'op': __import__('os').system('touch {planted}')}}\n")
    with pytest.raises(ImproveFileError, match="not a ttnn"):
        read_config(module, "op")
    module.write_text(
        f"CONFIGS = {{'op': ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(in0_block_w=open('{planted}', 'w'))}}\n"
    )
    with pytest.raises(ImproveFileError, match="not a literal"):
        read_config(module, "op")
    assert not planted.exists()
    code, _, err = run(
        "predict",
        "gemm",
        "--hw",
        "wormhole_n150",
        "--shape",
        "M=64,K=64,N=64",
        "--ttnn-config",
        str(module),
        "--op",
        "other",
    )
    assert code == 2 and "not a literal" in err


def test_improve_of_a_capture_without_its_chip_asks_for_hw(tmp_path: Path) -> None:
    data = ROOT / "tests" / "accuracy" / "data" / "ops_perf_results_v1_reordered.csv"
    code, _, err = run("improve", str(data), "--store", str(tmp_path / "s.sqlite"))
    assert code == 2 and "give --hw" in err
    report = read_ops_perf(data)
    result = improve_report(report, "wormhole_n150", store=tmp_path / "s.sqlite")
    assert result.coverage.ingested_rows == len(report.ops)
    assert len(report_measurements(report, "wormhole_n150")) == len(report.ops)


def test_a_batched_matmul_is_one_batch_repeated_with_one_launch_and_fill() -> None:
    from dataclasses import replace

    from loom_explorer.accuracy.ingest import Predictor, repeated_cycles
    from loom_explorer.hardware import load_hardware

    report = read_ops_perf(capture_path(CLIP))
    [op, *_] = [op for op in report.ops if op.shape == {"M": 19, "K": 19, "N": 64, "batch": 20}]
    assert op.batch_repeats == 20 and op.model_shape == {"M": 19, "K": 19, "N": 64}
    [m, *_] = [m for o, m in zip(report.ops, report_measurements(report, "wormhole_n150"), strict=True) if o == op]
    one = Predictor(load_hardware("wormhole_n150"), "x")(replace(op, batch_repeats=1)).evaluated
    assert one is not None and one.result.solution is not None
    sol = one.result.solution
    terms = dict(sol.breakdown)
    assert (
        m.predicted_cycles
        == repeated_cycles(sol, 20)
        == terms["launch"] + terms["fill"] + 20 * (sol.latency_cycles - terms["launch"] - terms["fill"])
    )


def test_improve_of_a_report_without_an_op_the_model_reads_says_so(tmp_path: Path) -> None:
    report = tmp_path / "ops_perf_results_untilize.csv"
    report.write_text("OP CODE,DEVICE KERNEL DURATION [ns],INPUT_0_Y,INPUT_0_X\nUntilize,1000,32,32\n")
    code, _, err = run("improve", str(report), "--store", str(tmp_path / "s.sqlite"))
    assert code == 2 and "no op the model reads (1 rows skipped" in err
