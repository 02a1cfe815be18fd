"""The data-movement rows of the shipped captures: each read as the kernel and shape of its layouts and extents,
predicted as ttnn's interleaved split of it, or skipped with one reason."""

from __future__ import annotations

from functools import cache

from loom_explorer.accuracy.ingest import IngestReport, read_ops_perf, report_measurements
from loom_explorer.data import capture_path


@cache
def _report(name: str) -> IngestReport:
    return read_ops_perf(capture_path(name))


def _op(name: str, row: int):
    return next(op for op in _report(name).ops if op.row == row)


def test_rows_read_as_their_kernels_and_shapes() -> None:
    reshape = _op("bh20_oft.csv.gz", 2)  # row-major 9856 x 6 into 1408 x 42, DRAM: no math fidelity stated
    assert (reshape.kernel, reshape.shape) == ("copy_rows", {"H": 9856, "W": 6})
    assert "output pages costed at the input's page size" in reshape.note
    tilize = next(op for op in _report("bh20_oft.csv.gz").ops if op.op_code == "TilizeWithValPaddingDeviceOperation")
    # [1, 384, 1280, 3] row-major into [1, 384, 1280, 32[3]] tiles
    assert (tilize.kernel, tilize.shape) == ("tilize", {"H": 384 * 1280, "Hx": 384 * 1280, "W": 32, "Wx": 3})
    untilize = next(op for op in _report("bh20_oft.csv.gz").ops if op.op_code == "UntilizeWithUnpaddingDeviceOperation")
    assert untilize.kernel == "untilize" and untilize.shape["H"] >= untilize.shape["Hy"]
    codes = {op.op_code: op.kernel for op in _report("wh_clip_encoder_2.csv.gz").ops}
    assert codes["TransposeDeviceOperation"] in ("copy", "transpose")
    assert codes["ReshapeDeviceOperation"] == "copy"


def test_sharded_rows_are_skipped_with_one_reason() -> None:
    skipped = [s for s in _report("bh20_oft.csv.gz").skipped if s.op_code == "MoveDeviceOperation"]
    assert skipped and {s.reason for s in skipped} == {
        "INPUT_0 is L1-sharded: the data-movement model costs ttnn's interleaved program factories, not its "
        "sharded ones"
    }


def test_every_data_movement_row_of_the_clip_capture_is_predicted() -> None:
    report = _report("bh_64_clip_encoder_1.csv.gz")
    measurements = report_measurements(report, "blackhole_p150a", None, (8, 8))
    kernels = {"tilize", "untilize", "transpose", "copy", "copy_rows"}
    moved = [m for op, m in zip(report.ops, measurements, strict=True) if op.kernel in kernels]
    assert moved and all(m.predicted_ns is not None and m.predicted_ns > 0 for m in moved)
