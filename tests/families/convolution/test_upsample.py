"""The nearest upsample rows of a CNN capture read and predicted as ``upsample_rows`` (``upsample.py``): each
input stick read once, written ``scale_h * scale_w`` times."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pytest

from loom_explorer.accuracy.capture import Columns, OpReading, ProfilerRow, RowSkip, attributes_of
from loom_explorer.accuracy.ingest import Predictor, read_ops_perf
from loom_explorer.families.convolution.accuracy import read_conv
from loom_explorer.families.data_movement.ttnn import evaluate_sharded
from loom_explorer.families.data_movement.ttnn_config import ShardedSplit
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program

DLV3 = Path(__file__).resolve().parents[3] / "loom_explorer" / "data" / "published" / "captures" / "bh_p100_dlv3.csv.gz"


def _upsample_rows() -> list[ProfilerRow]:
    with gzip.open(DLV3, "rt") as f:
        reader = csv.reader(f)
        columns = Columns(next(reader))
        return [ProfilerRow(columns, r) for r in reader if r and r[0] == "UpsampleOperation"]


def _read(row: ProfilerRow) -> OpReading:
    attributes = row.get("ATTRIBUTES")
    attrs, compute = attributes_of(attributes)
    return read_conv(row, attributes, attrs, compute)


def _edited(row: ProfilerRow, old: str, new: str) -> ProfilerRow:
    return ProfilerRow(row.columns, [c.replace(old, new) for c in row.cells])


def test_a_nearest_upsample_reads_its_input_sticks_once_and_writes_the_scaled_output() -> None:
    readings = [_read(r) for r in _upsample_rows()]
    # DeepLabV3: the ASPP pooling branch 1x1 -> 32x64 on one core, then two 2x upsamples over 110 cores
    assert [r.kernel for r in readings] == ["upsample_rows"] * 3
    assert [r.shape for r in readings] == [
        {"H": 2048, "Hx": 1, "W": 256},
        {"H": 8192, "Hx": 2048, "W": 256},
        {"H": 32768, "Hx": 8192, "W": 256},
    ]
    splits = [r.config for r in readings]
    assert all(isinstance(s, ShardedSplit) and s.sharded == () for s in splits)
    assert [(s.cores, s.block_rows) for s in splits if isinstance(s, ShardedSplit)] == [(1, 2048), (110, 4), (110, 4)]


def test_bilinear_sharded_and_tiled_upsamples_are_skipped_with_the_reason() -> None:
    row = _upsample_rows()[1]
    with pytest.raises(RowSkip, match="only nearest is modelled"):
        _read(_edited(row, "'mode': 'nearest'", "'mode': 'bilinear'"))
    with pytest.raises(RowSkip, match="only the interleaved factory is modelled"):
        _read(_edited(row, "DEV_1_DRAM_INTERLEAVED", "DEV_1_L1_HEIGHT_SHARDED"))
    with pytest.raises(RowSkip, match="only row-major sticks"):
        _read(_edited(row, "ROW_MAJOR", "TILE"))
    with pytest.raises(RowSkip, match="not the input's sticks times the scale 9"):
        _read(
            _edited(
                _edited(row, "'scale_factor_h': '2'", "'scale_factor_h': '3'"),
                "'scale_factor_w': '2'",
                "'scale_factor_w': '3'",
            )
        )


def test_every_upsample_row_is_predicted_and_one_read_per_k_writes_costs_less_than_a_read_a_write() -> None:
    ops = [op for op in read_ops_perf(DLV3).ops if op.op_code == "UpsampleOperation"]
    assert len(ops) == 3
    predictor = Predictor(load_hardware("blackhole_p100a"), str(DLV3), (11, 10))
    for op in ops:
        predicted = predictor(op)
        assert predicted.failure == "", predicted.failure
        assert predicted.evaluated is not None and predicted.evaluated.result.solution is not None
    hw = load_hardware("blackhole_p100a")
    problem = make_problem(load_program("upsample_rows"), "H=8192,Hx=2048,W=256")
    once = evaluate_sharded(hw, problem, ShardedSplit(op="UpsampleOperation", cores=110, sharded=(), block_rows=4))
    each = evaluate_sharded(hw, problem, ShardedSplit(op="UpsampleOperation", cores=110, sharded=()))
    assert once.result.solution is not None and each.result.solution is not None
    # one block a stick read with its latency per four written, against one per stick written
    assert once.result.solution.latency_cycles < each.result.solution.latency_cycles


def test_a_split_without_a_fixed_block_dumps_as_before() -> None:
    assert "block_rows" not in ShardedSplit(op="x", cores=2, sharded=()).model_dump(mode="json")
    assert ShardedSplit(op="x", cores=2, sharded=(), block_rows=4).model_dump(mode="json")["block_rows"] == 4
