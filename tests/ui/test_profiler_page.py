"""The explorer's profiler-report section, driven without a browser: a shipped capture's ops tabulated biggest
predicted gain first, an op opened in the explorer with its measured time marked on the Measure chart,
uploads read from their bytes only, and a bad upload refused in one line."""

from __future__ import annotations

import csv
import gzip
import io
import math
from collections.abc import Iterator

import pytest
from panel.models.tabulator import CellClickEvent

from loom_explorer.accuracy.improve import Improvement
from loom_explorer.accuracy.ingest import IngestError
from loom_explorer.data import CAPTURE_CHIPS, CAPTURES, capture_path
from loom_explorer.store import open_store
from loom_explorer.ui.explorer import Explorer
from loom_explorer.ui.profiler import (
    COVERAGE_COLUMNS,
    OPS_COLUMNS,
    CannotOpen,
    ReportSource,
    analyse,
    coverage_frame,
    open_op,
    ops_frame,
    problem_key,
)
from loom_explorer.ui.profiler_page import PageProgress, ProfilerPage, one_line, progress_text
from loom_explorer.ui.runner import Superseded
from loom_explorer.ui.state import activation_names

CLIP = "wh_clip_encoder_2.csv.gz"


@pytest.fixture()
def store(tmp_path, monkeypatch) -> Iterator[str]:
    """A results store of this test's own (the explorer reads and writes ``$LOOM_EXPLORER_STORE``)."""
    path = tmp_path / "results.sqlite"
    monkeypatch.setenv("LOOM_EXPLORER_STORE", str(path))
    yield str(path)


@pytest.fixture()
def page(store: str) -> Iterator[ProfilerPage]:
    """The profiler section of an explorer that has solved nothing yet."""
    explorer = Explorer(shape={"M": 256, "K": 256, "N": 256}, solve=False)
    yield explorer.profiler
    explorer.close()


def _no_nan(frame) -> bool:
    return not any(isinstance(v, float) and math.isnan(v) for v in frame.to_numpy().ravel())


def _click_row(page: ProfilerPage, row: int) -> None:
    """A click on a cell of row ``row`` of the ops table, as the browser sends it."""
    page.table._process_event(CellClickEvent(model=None, column="op", row=row))


def _upload(page: ProfilerPage, name: str, data: bytes) -> None:
    """What the browser's file input does: the file's name and bytes (the watcher runs to its end here)."""
    page.w_upload.param.update(filename=name, value=data)


@pytest.mark.slow
def test_a_shipped_capture_s_ops_biggest_gain_first(page: ProfilerPage) -> None:
    page.w_capture.value = CLIP  # choosing it runs it (to its end: no event loop runs here)
    analysis = page.analysis
    assert analysis is not None and not page.error.visible and not page.spinner.value
    assert "biggest predicted gain first" in page.status.object
    assert "predicted on wormhole_n150, 8x8 grid" in page.summary.object and "error, gemm" in page.summary.object
    frame = page.table.value
    assert list(frame.columns) == OPS_COLUMNS and len(frame) == len(analysis.result.ops) >= 4
    assert list(frame["op"]) == [o.key for o in analysis.result.ops]
    assert frame.iloc[0]["op"].startswith("MinimalMatmulOp gemm M=19,K=1280,N=1280")
    gains = [g for g in frame["gain ms"] if g is not None]
    assert gains == sorted(gains, reverse=True) and gains[0] > 0
    assert _no_nan(frame) and all(str(t) == "object" for t in frame.dtypes)  # a missing figure is None: an empty cell
    assert not page.b_record.disabled


@pytest.mark.slow
def test_clicking_an_op_opens_its_problem_and_marks_its_measured_time(page: ProfilerPage) -> None:
    page.w_capture.value = CLIP
    assert page.analysis is not None
    op = page.analysis.result.ops[0]
    _click_row(page, 0)  # the explorer solves the op's problem (to its end here)
    st = page.explorer.state
    assert (st.hw, st.kernel, st.shape, st.dtype, st.fidelity, st.causal) == (
        "wormhole_n150",
        "gemm",
        "M=19,N=1280,K=1280",
        "bfloat16",
        "hifi4",
        False,
    )
    assert st.results and st.results[0].solution is not None and not st.error
    assert op.problem is not None and problem_key(st.hardware.name, st.problem) == problem_key(
        "wormhole_n150", op.problem
    )
    measure = page.explorer.measure
    assert measure.marker_point.data["measured_us"] == [pytest.approx(op.measured_ns / 1e3)]
    assert measure.marker_point.data["predicted_us"] == [pytest.approx(op.ran_ns / 1e3)]  # type: ignore[operator]
    assert measure.figure.visible and op.key in measure.marked_line.object
    opened = page.opened.object
    assert "fp32 accumulation" in opened and "the bias operand" in opened  # what the explorer leaves out, named
    st.shape = "M=64,K=64,N=64"  # another problem: the mark goes, the op's problem keeps it
    assert measure.marker_point.data["measured_us"] == [] and measure.marked_line.object == ""


@pytest.mark.slow
def test_recording_the_measurements_puts_them_on_the_measure_chart(page: ProfilerPage, store: str) -> None:
    page.w_capture.value = CLIP
    _click_row(page, 0)
    assert page.explorer.measure.points.data["measured_us"] == []  # the store holds nothing yet
    page.b_record.clicks += 1
    with open_store(store) as s:
        rows = s.measurements("wormhole_n150", "gemm")
    assert rows and {m.source for m in rows} == {"report"}
    assert "recorded" in page.status.object and page.b_record.disabled  # once per report
    assert len(page.explorer.measure.points.data["measured_us"]) == sum(1 for m in rows if m.predicted_ns)


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("notes.csv", b"name,value\nx,1\n", "notes.csv: required columns OP CODE"),
        ("report.csv.gz", b"\x1f\x8b\x08\x00broken", "report.csv.gz: not a CSV file (a damaged gzip stream)"),
        ("picture.csv", bytes(range(256)), "picture.csv: not a CSV file"),
        ("empty.csv", b"", "empty.csv: empty file"),
    ],
)
def test_a_bad_upload_is_refused_in_one_line(page: ProfilerPage, name: str, data: bytes, says: str) -> None:
    _upload(page, name, data)
    assert page.error.visible and page.error.object.startswith(says)
    assert "\n" not in page.error.object and page.table.value is None and page.analysis is None
    assert not page.spinner.value


@pytest.mark.slow
def test_an_upload_is_read_from_its_bytes_and_its_name_only_labels_it(page: ProfilerPage) -> None:
    page.w_capture.value = "bh20_oft.csv.gz"
    _upload(page, "../../somewhere/ops_perf_results_x.csv.gz", capture_path(CLIP).read_bytes())
    assert page.w_capture.value == ""  # the upload is what the page shows
    assert page.analysis is not None and page.analysis.source.capture is None
    assert page.summary.object.startswith("<b>ops_perf_results_x.csv.gz: predicted on wormhole_n150")


def test_only_shipped_captures_are_offered_and_read() -> None:
    explorer = Explorer(solve=False)
    try:
        assert set(explorer.profiler.w_capture.options.values()) == {"", *CAPTURES}
    finally:
        explorer.close()
    with pytest.raises(IngestError, match="not a shipped capture"):
        ReportSource.shipped("/etc/passwd").read()


def test_a_report_that_names_no_chip_asks_for_the_hardware(page: ProfilerPage) -> None:
    text = gzip.decompress(capture_path(CLIP).read_bytes()).decode()
    rows = list(csv.reader(io.StringIO(text)))
    drop = {i for i, h in enumerate(rows[0]) if h in ("DEVICE ARCH", "AVAILABLE WORKER CORE COUNT")}
    out = io.StringIO()
    csv.writer(out).writerows([c for i, c in enumerate(r) if i not in drop] for r in rows)
    _upload(page, "nochip.csv", out.getvalue().encode())
    assert page.error.visible and "does not say which chip it ran on; choose it under 'Predict on'" in (
        page.error.object.replace("&#x27;", "'")
    )
    page.w_hw.value = "wormhole_n150"
    page.b_run.clicks += 1
    assert not page.error.visible and page.analysis is not None and page.analysis.hw_name == "wormhole_n150"


def test_a_smaller_capture_grid_and_an_unpredicted_op_are_said() -> None:
    analysis = analyse(ReportSource.shipped("bh_64_clip_encoder_1.csv.gz"))
    assert (analysis.hw_name, analysis.grid) == ("blackhole_p150a", (8, 8))
    op = next(o for o in analysis.result.ops if o.problem is not None)
    opened = open_op(op, analysis.hw_name, analysis.grid, activation_names())
    assert opened.inputs["hw"] == "blackhole_p150a"
    assert any("8x8 worker grid" in n and "cannot restrict the grid" in n for n in opened.notes), opened.notes
    unpredicted = Improvement(
        key="Matmul gemm M=1,K=1,N=1,batch=2",
        op_code="Matmul",
        kernel="gemm",
        shape={"M": 1, "K": 1, "N": 1, "batch": 2},
        rows=(2,),
        measured_ns=1000.0,
        ran_ns=None,
        ran_config=None,
        ran_candidate="",
        note="not predicted: batched matmul",
    )
    with pytest.raises(CannotOpen, match="not predicted: batched matmul"):
        open_op(unpredicted, "blackhole_p150a", None, activation_names())
    assert ops_frame(analysis.result).shape[0] == len(analysis.result.ops)


def test_progress_is_told_and_a_newer_request_stops_an_older_run() -> None:
    told: list[str] = []
    current = [True]
    progress = PageProgress(told.append, lambda: current[0])
    progress.phase("solving ops", 6)
    progress.update(2)
    assert told[-1] == "solving op 3 of 6 ..." == progress_text("solving ops", 2, 6)
    current[0] = False
    with pytest.raises(Superseded):
        progress.update(3)
    assert one_line(ValueError("first line\nsecond line")) == "first line ..."


def test_opening_a_problem_of_another_kernel_keeps_its_shape(store: str) -> None:
    explorer = Explorer(solve=False)
    try:
        assert explorer.open_problem(
            {"kernel": "flash_attention", "shape": "B=1,H=1,Sq=128,Skv=128,D=64", "causal": True}
        )
        assert explorer.state.shape == "B=1,H=1,Sq=128,Skv=128,D=64" and explorer.state.causal
        assert explorer.state.session is not None and explorer.state.problem.has_option("causal")
        assert not explorer.open_problem({"kernel": "flash_attention"})  # nothing changed: nothing solved
        with pytest.raises(ValueError, match="not explorer inputs: path"):
            explorer.open_problem({"path": "/etc/passwd"})
    finally:
        explorer.close()


@pytest.mark.slow
def test_the_coverage_by_op_code_is_tabulated_beside_the_ops(page: ProfilerPage) -> None:
    page.w_capture.value = "bh_p100_dlv3.csv.gz"
    assert page.analysis is not None and not page.error.visible
    frame = page.coverage.value
    assert list(frame.columns) == COVERAGE_COLUMNS and _no_nan(frame)
    rows = {r["op code"]: r for r in frame.to_dict("records")}
    assert rows["Matmul"]["predicted %"] == 100.0 and rows["Matmul"]["kernel / why not"] == "gemm"
    assert rows["Conv2dDeviceOperation"]["predicted %"] == 100.0
    assert rows["Conv2dDeviceOperation"]["kernel / why not"] == "conv2d"
    assert rows["Pool2D"]["predicted %"] == 0.0 and rows["Pool2D"]["error %"] is None
    assert rows["Pool2D"]["kernel / why not"]  # why it is not predicted
    assert sum(r["share %"] for r in rows.values()) == pytest.approx(100.0, abs=0.1 * len(rows))
    assert frame.equals(coverage_frame(page.analysis))
    assert page.coverage in page.coverage_place.objects


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CAPTURE_CHIPS))
def test_a_shipped_capture_that_names_no_chip_is_predicted_on_the_stated_one(name: str) -> None:
    analysis = analyse(ReportSource.shipped(name))
    assert (analysis.hw_name, analysis.grid) == CAPTURE_CHIPS[name]
    assert "stated for this shipped capture" in analysis.result.chip
    assert analyse(ReportSource.shipped(name), hw="blackhole_p150a").hw_name == "blackhole_p150a"
