"""A matmul called without a program config whose in0 is L1-sharded: the config ttnn derives from the shard
spec (``families/contraction/shard_config.py``), read from rows built as real captures print them.

Every row here is row 88 of ``bh_p100_dlv3.csv.gz`` (``ingest``'s numbering: the header is row 1), a
shipped DeepLabV3 capture on a Blackhole p100: a ``Matmul`` of in0 ``[1, 1, 8192, 128]`` height-sharded on
86 cores, in1 ``[1, 1, 128, 512]`` in DRAM, the output height-sharded (``output_mem_config`` with
``shape={96; 512}`` on ``{[(x=0;y=0) - (x=10;y=6)]; [(x=0;y=7) - (x=8;y=7)]}``), with its
``program_config`` cell emptied (``std::nullopt``, as a call without one prints) and, per test, its memory
and shard cells changed as named.
"""

from __future__ import annotations

import csv
import gzip
import re
from pathlib import Path

import pytest

from loom_explorer.accuracy.ingest import read_ops_perf, report_measurements
from loom_explorer.families.contraction.shard_config import read_shard_spec, subblock
from loom_explorer.families.contraction.ttnn_config import TtnnMatmulConfig
from loom_explorer.problem import Placement

CAPTURE = Path(__file__).parents[3] / "loom_explorer" / "data" / "published" / "captures" / "bh_p100_dlv3.csv.gz"
SOURCE_ROW = 88  # the row the rows here are built from (the header is row 1)
HEIGHT_SPEC = "shard_spec=ShardSpec(grid={[(x=0;y=0) - (x=10;y=6)]; [(x=0;y=7) - (x=8;y=7)]};shape={96; 512}"


def _real_row() -> tuple[list[str], dict[str, str]]:
    with gzip.open(CAPTURE, "rt", newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        for i, cells in enumerate(reader, start=2):
            if i == SOURCE_ROW:
                return header, dict(zip(header, cells, strict=True))
    raise AssertionError(f"{CAPTURE.name} has no row {SOURCE_ROW}")


def _capture(tmp_path: Path, edit: dict[str, tuple[str, str]] | None = None) -> Path:
    """The real row without its program config, each ``column: (old, new)`` of ``edit`` replaced."""
    header, row = _real_row()
    row["ATTRIBUTES"] = re.sub(r"'program_config': '[^']*'", "'program_config': 'std::nullopt'", row["ATTRIBUTES"])
    for column, (old, new) in (edit or {}).items():
        assert old in row[column], (column, old)
        row[column] = row[column].replace(old, new)
    path = tmp_path / "ops_perf_results.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        writer.writerow([row[h] for h in header])
    return path


def test_the_real_row_is_what_the_tests_build_on() -> None:
    _, row = _real_row()
    assert row["OP CODE"] == "Matmul" and row["INPUT_0_MEMORY"] == "DEV_1_L1_HEIGHT_SHARDED"
    assert HEIGHT_SPEC in row["ATTRIBUTES"] and "per_core_M=3;per_core_N=16" in row["ATTRIBUTES"]


def test_height_sharded_in0_takes_the_1d_in1_multicast_config_ttnn_derives(tmp_path: Path) -> None:
    report = read_ops_perf(_capture(tmp_path))
    assert not report.skipped
    [op] = report.ops
    cfg = op.config
    assert isinstance(cfg, TtnnMatmulConfig) and "derives from in0's shard spec" in op.note
    # ttnn: the shard grid's bounding box, per_core_M = shard height (96 rows), all of N and of K per core
    assert cfg.program_config == "MatmulMultiCoreReuseMultiCast1DProgramConfig" and cfg.mcast_in0 is False
    assert cfg.compute_with_storage_grid_size == (11, 8)
    assert (cfg.per_core_M, cfg.per_core_N, cfg.in0_block_w) == (3, 16, 4)
    # the per-core block whole; a sharded output needs a sub-block one tile high and per_core_N wide:
    # no such sub-block of at most 8 tiles, so 1x1
    assert (cfg.out_block_h, cfg.out_block_w, cfg.out_subblock_h, cfg.out_subblock_w) == (3, 16, 1, 1)
    assert cfg.placements() == {"in0": Placement.l1_height, "out": Placement.l1_height}
    # the same blocks as the program config the real row ran with (per_core_M=3, per_core_N=16, grid 11x8)
    [m] = report_measurements(report, "blackhole_p100a")
    assert m.candidate == "M@xy|in0=local,in1=mcast_xy" and m.predicted_ns is not None and m.predicted_ns > 0


def test_block_sharded_in0_takes_the_2d_config(tmp_path: Path) -> None:
    edit = {
        "INPUT_0_MEMORY": ("HEIGHT_SHARDED", "BLOCK_SHARDED"),
        "OUTPUT_0_MEMORY": ("HEIGHT_SHARDED", "BLOCK_SHARDED"),
        # an 8x8 block grid: per_core_M = 256/8 = 32 tiles (1024 rows), per_core_N = 16/8 = 2 tiles (64 columns)
        "ATTRIBUTES": (
            "HEIGHT_SHARDED;buffer_type=BufferType::L1;" + HEIGHT_SPEC,
            "BLOCK_SHARDED;buffer_type=BufferType::L1;shard_spec=ShardSpec(grid={[(x=0;y=0) - (x=7;y=7)]};"
            "shape={1024; 64}",
        ),
    }
    [op] = read_ops_perf(_capture(tmp_path, edit)).ops
    cfg = op.config
    assert isinstance(cfg, TtnnMatmulConfig) and cfg.program_config == "MatmulMultiCoreReuseMultiCastProgramConfig"
    assert cfg.compute_with_storage_grid_size == (8, 8) and cfg.transpose_mcast is False
    # K = 4 tiles over 8 columns of cores: shards of one tile do not cover K exactly -> in0_block_w 1
    assert (cfg.per_core_M, cfg.per_core_N, cfg.in0_block_w) == (32, 2, 1)
    assert (cfg.out_subblock_h, cfg.out_subblock_w) == (1, 2)  # one tile high, per_core_N wide


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ({"OUTPUT_0_MEMORY": ("L1_HEIGHT_SHARDED", "DRAM_INTERLEAVED")}, "prints only for the output"),
        ({"ATTRIBUTES": ("'user_run_batched': 'false'", "'user_run_batched': 'true'")}, "user_run_batched"),
        ({"INPUT_1_MEMORY": ("DRAM_INTERLEAVED", "L1_HEIGHT_SHARDED")}, "need in1 interleaved"),
        ({"ATTRIBUTES": ("shape={96; 512}", "shape={96; 256}")}, "cannot be read from the output's"),
        (
            {"INPUT_0_MEMORY": ("L1_HEIGHT_SHARDED", "DRAM_INTERLEAVED")},
            "in0 interleaved: ttnn's pick for a sharded output",
        ),
    ],
)
def test_what_the_row_does_not_let_the_model_derive_is_skipped_with_the_reason(
    tmp_path: Path, edit: dict[str, tuple[str, str]], reason: str
) -> None:
    report = read_ops_perf(_capture(tmp_path, edit))
    assert not report.ops
    [skip] = report.skipped
    assert reason in skip.reason


def test_shard_spec_and_subblock_rules() -> None:
    _, row = _real_row()
    found = re.search(r"'output_mem_config': '([^']*)'", row["ATTRIBUTES"])
    assert found is not None
    spec = read_shard_spec(found.group(1))
    assert spec is not None
    assert (spec.layout, spec.grid, spec.cores, spec.shape, spec.col_major) == (
        "HEIGHT_SHARDED",
        (11, 8),
        86,
        (96, 512),
        False,
    )
    assert (
        read_shard_spec("MemoryConfig(memory_layout=TensorMemoryLayout::INTERLEAVED;buffer_type=BufferType::L1)")
        is None
    )
    assert subblock(4, 8, 8, False, False) == (4, 2) and subblock(4, 8, 8, False, True) == (2, 2)
    assert subblock(4, 4, 4, True, False) == (1, 4) and subblock(3, 16, 16, True, False) == (1, 1)
