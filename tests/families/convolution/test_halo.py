"""The halo rows of a CNN capture read and predicted as a copy of their halo'd sticks (``halo.py``)."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pytest

from loom_explorer.accuracy.capture import Columns, OpReading, ProfilerRow, RowSkip, attributes_of
from loom_explorer.accuracy.ingest import Predictor, read_ops_perf
from loom_explorer.families.convolution.accuracy import read_conv
from loom_explorer.families.data_movement.ttnn_config import ShardedSplit
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import Placement

DLV3 = Path(__file__).resolve().parents[3] / "loom_explorer" / "data" / "published" / "captures" / "bh_p100_dlv3.csv.gz"


def _halo_rows() -> list[ProfilerRow]:
    with gzip.open(DLV3, "rt") as f:
        reader = csv.reader(f)
        columns = Columns(next(reader))
        return [ProfilerRow(columns, r) for r in reader if r and r[0] == "HaloDeviceOperation"]


def _read(row: ProfilerRow) -> OpReading:
    attributes = row.get("ATTRIBUTES")
    attrs, compute = attributes_of(attributes)
    return read_conv(row, attributes, attrs, compute)


def test_a_row_major_halo_reads_as_a_copy_of_its_halo_d_sticks() -> None:
    reading = _read(_halo_rows()[0])
    # 110 cores x max_out_nsticks_per_core 7569 sticks of 8 channels (the 3-channel image padded to 8)
    assert reading.kernel == "copy_rows"
    assert reading.shape == {"H": 110 * 7569, "W": 8}
    split = reading.config
    assert isinstance(split, ShardedSplit)
    assert split.cores == 110
    assert split.placements() == {"x": Placement.l1_interleaved, "y": Placement.l1_height}


def test_a_block_sharded_halo_copies_its_channel_slices() -> None:
    rows = _halo_rows()
    block = next(r for r in rows if "BLOCK" in r.get("INPUT_0_MEMORY") and r.get("INPUT_0_LAYOUT") == "ROW_MAJOR")
    reading = _read(block)
    # 528 channels (512 padded) in 11 slices of 48 on 88 cores: each core copies its sticks' slice
    assert reading.shape == {"H": 11 * 8 * 288, "W": 48}
    assert "block-sharded: 11 slices of 48 channels" in reading.note


def test_width_sharded_and_tiled_output_halos_are_skipped_with_the_reason() -> None:
    width = next(r for r in _halo_rows() if "WIDTH" in r.get("INPUT_0_MEMORY"))
    with pytest.raises(RowSkip, match="only height- and block-sharded halos"):
        _read(width)
    row = _halo_rows()[0]
    tiled = ProfilerRow(row.columns, [c if c != "ROW_MAJOR" else "TILE" for c in row.cells])
    with pytest.raises(RowSkip, match="a halo writes row-major sticks"):
        _read(tiled)


def test_every_height_and_block_sharded_halo_is_predicted_by_its_bytes_per_core() -> None:
    ops = [op for op in read_ops_perf(DLV3).ops if op.op_code == "HaloDeviceOperation"]
    assert len(ops) == 48  # of 49: the width-sharded one is skipped
    predictor = Predictor(load_hardware("blackhole_p100a"), str(DLV3), (11, 10))
    by_width: dict[int, int] = {}
    for op in ops:
        predicted = predictor(op)
        assert predicted.failure == "", predicted.failure
        assert predicted.evaluated is not None and predicted.evaluated.result.solution is not None
        if op.shape["H"] == 43672:  # the 103-core halos of 424 sticks a core, 256 or 288 channels
            by_width[op.shape["W"]] = predicted.evaluated.result.solution.latency_cycles
    # the same sticks, wider: more bytes read over the NoC a core, a longer copy
    assert by_width[288] > by_width[256]
