"""The data-movement rows of the shipped captures: each read as the kernel and shape of its layouts and extents,
predicted as ttnn's interleaved split of it, or skipped with one reason."""

from __future__ import annotations

from functools import cache

from loom_explorer.accuracy.ingest import IngestReport, read_ops_perf, report_measurements
from loom_explorer.data import capture_path
from loom_explorer.families.data_movement.ttnn import evaluate_sharded
from loom_explorer.families.data_movement.ttnn_config import ShardedSplit
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import Placement, make_problem
from loom_explorer.program import load_program


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
    assert codes["ReshapeDeviceOperation"] == "reshape"  # a tiled reshape: its map's gather (test_reshape.py)


def test_height_sharded_rows_read_as_their_sharded_split_and_the_others_skip_with_one_reason() -> None:
    report = _report("bh20_oft.csv.gz")
    to_sharded = next(op for op in report.ops if op.op_code == "InterleavedToShardedDeviceOperation")
    assert to_sharded.config is not None and to_sharded.config.placements() == {"y": Placement.l1_height}
    assert to_sharded.config.compute_with_storage_grid_size == (to_sharded.core_count, 1)
    reasons = {s.reason for s in report.skipped if s.op_code == "ReshardDeviceOperation"}
    assert reasons and all(
        "only height sharding is modelled" in r or "moves shards between cores" in r for r in reasons
    )


def test_a_sharded_split_costs_no_dram_for_its_l1_operand() -> None:
    """interleaved_to_sharded of a tiled tensor: the same copy with its output in L1 writes nothing to DRAM,
    so it is faster than the interleaved copy over the same cores."""
    hw = load_hardware("blackhole_p150a")
    program = load_program("copy")
    split = ShardedSplit(op="InterleavedToShardedDeviceOperation", cores=20, sharded=("y",))
    sharded = evaluate_sharded(hw, make_problem(program, "H=4096,W=256", placements=split.placements()), split)
    plain = evaluate_sharded(hw, make_problem(program, "H=4096,W=256"), split.model_copy(update={"sharded": ()}))
    assert sharded.result.solution is not None and plain.result.solution is not None
    terms = dict(sharded.result.solution.breakdown)
    assert sharded.result.candidate_name == "H@xy|x=dram" and dict(sharded.result.pins)["per_core_H"] == 7
    assert terms["write_back"] == 0  # nothing written to DRAM
    assert sharded.result.solution.latency_cycles < plain.result.solution.latency_cycles


def test_every_data_movement_row_of_the_clip_capture_is_predicted() -> None:
    report = _report("bh_64_clip_encoder_1.csv.gz")
    measurements = report_measurements(report, "blackhole_p150a", None, (8, 8))
    kernels = {"tilize", "untilize", "transpose", "copy", "copy_rows"}
    moved = [m for op, m in zip(report.ops, measurements, strict=True) if op.kernel in kernels]
    assert moved and all(m.predicted_ns is not None and m.predicted_ns > 0 for m in moved)


def test_rows_absent_from_the_captures_read_as_documented(tmp_path) -> None:
    """A pad and a repeat of tiles read as copies of their output; a (non-paged) KV-cache update is skipped with
    its reason (none of them is in a shipped capture)."""
    columns = ["OP CODE", "OP TYPE", "DEVICE KERNEL DURATION [ns]", "CORE COUNT"]
    for t in ("INPUT_0", "OUTPUT_0"):
        columns += [f"{t}_{a}_PAD[LOGICAL]" for a in "WZYX"] + [f"{t}_LAYOUT", f"{t}_DATATYPE", f"{t}_MEMORY"]

    def row(code: str, inp: str, out: str) -> str:
        cells = [code, "tt_dnn_device", "5000", "64"]
        for shape in (inp, out):
            cells += [f"{e}[{e}]" for e in shape.split("x")] + ["TILE", "BFLOAT16", "DEV_0_DRAM_INTERLEAVED"]
        return ",".join(cells)

    path = tmp_path / "ops.csv"
    path.write_text(
        "\n".join(
            [
                ",".join(columns),
                row("PadDeviceOperation", "1x1x64x96", "1x1x128x128"),
                row("RepeatDeviceOperation", "1x1x64x96", "1x4x64x96"),
                row("UpdateKVCacheOperation", "1x8x128x64", "1x8x128x64"),
            ]
        )
        + "\n"
    )
    report = read_ops_perf(path)
    shapes = {op.op_code: (op.kernel, op.shape) for op in report.ops}
    assert shapes["PadDeviceOperation"] == ("copy", {"H": 128, "W": 128})
    assert shapes["RepeatDeviceOperation"] == ("copy", {"H": 256, "W": 96})
    (skip,) = report.skipped
    assert skip.op_code == "UpdateKVCacheOperation" and "into the cache" in skip.reason


def test_a_paged_cache_update_is_the_copy_of_the_cache_tile_rows_it_rewrites() -> None:
    """The decode capture's paged update: cache [128, 8, 64, 128] in DRAM, input [1, 2, 32, 128] sharded over
    2 cores (one user each): each core reads and writes back one 32-row tile row for each of the 8 heads."""
    name = "bh_invalid_trace_decode_window.csv.gz"
    report = _report(name)
    updates = [op for op in report.ops if op.op_code == "PagedUpdateCacheDeviceOperation"]
    assert len(updates) == 2
    for op in updates:
        assert (op.kernel, op.shape) == ("copy", {"H": 2 * 8 * 32, "W": 128})
        assert op.config == ShardedSplit(op="PagedUpdateCacheDeviceOperation", cores=2, sharded=())
    measurements = report_measurements(report, "blackhole_p100a", None, (11, 10))
    by_row = {op.row: m for op, m in zip(report.ops, measurements, strict=True)}
    for op in updates:
        m = by_row[op.row]
        assert m.predicted_ns is not None and m.measured_ns is not None
        # 5.5 us predicted for 9.0 us measured: with the device-side launch (400 cycles) the op's own fixed
        # costs, not modelled, show
        assert abs(m.predicted_ns / m.measured_ns - 1) < 0.45


def test_a_block_sharded_row_is_costed_as_the_same_split_and_says_so() -> None:
    report = _report("bh_p100_dlv3.csv.gz")
    moves = {"tilize", "untilize", "transpose", "copy", "copy_rows"}
    block = [
        op
        for op in report.ops
        if op.kernel in moves and op.config is not None and Placement.l1_block in op.config.placements().values()
    ]
    assert block and all("l1_block_sharded: costed as the rows dealt over the same cores" in op.note for op in block)
    measurements = report_measurements(report, "blackhole_p100a", None, (11, 10))
    by_row = {op.row: m for op, m in zip(report.ops, measurements, strict=True)}
    assert all(by_row[op.row].predicted_ns for op in block)


def test_an_older_captures_op_codes_read_alike() -> None:
    """The older capture names the ops without "DeviceOperation" (``Tilize``, ``TilizeWithValPadding``,
    ``Untilize``, ``UntilizeWithUnpadding``, ``Transpose``): the same kernels read them."""
    report = _report("ops_perf_results_2025_09_18_11_39_20.csv.gz")
    kernels = {op.op_code.split("::")[-1]: op.kernel for op in report.ops}
    assert kernels["TilizeWithValPadding"] == "tilize" and kernels["UntilizeWithUnpadding"] == "untilize"
    assert kernels["Tilize"] == "tilize" and kernels["Untilize"] == "untilize"


def test_a_kv_cache_fill_is_the_copy_of_its_input_tile_rows_into_the_cache() -> None:
    """The DeepSeek capture's fills: input [1, 1, 3200, 576] (DRAM-interleaved) into a DRAM-sharded cache, its
    100 tile rows dealt over 100 cores."""
    report = _report("bh_8xp150_deepseek_v3_d_p.csv.gz")
    fills = [op for op in report.ops if op.op_code == "UpdateKVCacheOperation"]
    assert fills and not [s for s in report.skipped if s.op_code == "UpdateKVCacheOperation"]
    for op in fills:
        assert (op.kernel, op.shape) == ("copy", {"H": 3200, "W": 576})
        assert op.config == ShardedSplit(op="UpdateKVCacheOperation", cores=100, sharded=())
        assert "DRAM-sharded cache costed as DRAM-interleaved" in op.note
