"""A matmul called without a program config, in0 L1-sharded and a ``user_core_coord``: the config ttnn's
``create_matmul_program_config`` derives (``families/contraction/shard_config.py``: ``user_grid_config``),
in0's shard spec read from the op before it (``ProfilerRow.prior_output``).

The rows are real rows of the shipped SegFormer capture ``ops_perf_results_2025_02_16_18_11_10.csv.gz``
(``ingest``'s numbering: the header is row 1), an older report that prints no shard spec on the matmul's
own row:

* rows 1036-1037: a ``ReshardDeviceOperation`` making ``[1, 1, 1024, 640]`` block-sharded in shards of
  ``{128; 128}`` on ``(x=0;y=0) - (x=4;y=7)``, then the ``Matmul`` of it by ``[1, 1, 640, 160]`` (DRAM) with
  ``user_core_coord`` ``(x=5;y=8)``;
* rows 789-790: an ``InterleavedToShardedDeviceOperation`` making ``[1, 1, 16384, 32]`` height-sharded, then
  the ``Matmul`` of it by ``[1, 1, 32, 32]`` with ``user_core_coord`` ``(x=8;y=8)``.
"""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pytest

from loom_explorer.accuracy.ingest import read_ops_perf, report_measurements
from loom_explorer.families.contraction.shard_config import subblock_sizes
from loom_explorer.families.contraction.ttnn_config import TtnnMatmulConfig

CAPTURE = (
    Path(__file__).parents[3]
    / "loom_explorer"
    / "data"
    / "published"
    / "captures"
    / "ops_perf_results_2025_02_16_18_11_10.csv.gz"
)


def _rows(*numbers: int) -> tuple[list[str], dict[int, list[str]]]:
    wanted = set(numbers)
    with gzip.open(CAPTURE, "rt", newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        found = {i: cells for i, cells in enumerate(reader, start=2) if i in wanted}
    assert set(found) == wanted, f"{CAPTURE.name} lacks rows {wanted - set(found)}"
    return header, found


def _capture(tmp_path: Path, numbers: tuple[int, ...], edit: dict[tuple[int, str], str] | None = None) -> Path:
    """The real rows ``numbers`` in order, each ``(row, column): value`` of ``edit`` set."""
    header, found = _rows(*numbers)
    path = tmp_path / "ops_perf_results.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        for n in numbers:
            cells = list(found[n])
            for (row, column), value in (edit or {}).items():
                if row == n:
                    cells[header.index(column)] = value
            writer.writerow(cells)
    return path


def test_block_sharded_in0_takes_the_2d_config_from_the_shard_the_op_before_printed(tmp_path: Path) -> None:
    report = read_ops_perf(_capture(tmp_path, (1036, 1037)))
    [op] = [o for o in report.ops if o.kernel == "gemm"]
    cfg = op.config
    assert isinstance(cfg, TtnnMatmulConfig)
    # in0 [1024, 640] in 128x128 shards: h = w = 4 tiles; Kt = 20, Nt = 5, the user's 5x8 grid:
    # per_core_M = h = 4, per_core_N = Nt * w // Kt = 1, in0_block_w = gcd(4, 20) = 4;
    # get_subblock_sizes(4, 1): the first (w, h) pair dividing is (1, 4): h = 4, w = 1 (= per_core_N, kept)
    assert cfg.program_config == "MatmulMultiCoreReuseMultiCastProgramConfig"
    assert cfg.compute_with_storage_grid_size == (5, 8)
    assert (cfg.per_core_M, cfg.per_core_N, cfg.in0_block_w) == (4, 1, 4)
    assert (cfg.out_subblock_h, cfg.out_subblock_w) == (4, 1)
    [m] = [m for m in report_measurements(report, "wormhole_n150") if m.kernel == "gemm"]
    assert m.predicted_ns is not None and m.predicted_ns > 0


def test_without_the_op_that_made_in0_a_block_sharded_row_is_refused_with_the_reason(tmp_path: Path) -> None:
    alone = read_ops_perf(_capture(tmp_path, (1037,)))
    assert not alone.ops
    [skip] = alone.skipped
    assert "neither this row nor the op before it prints" in skip.reason
    # the op before on another device, or making a tensor of another shape, is not in0's maker
    for edit in ({(1036, "DEVICE ID"): "1"}, {(1036, "OUTPUT_0_Y"): "512"}):
        report = read_ops_perf(_capture(tmp_path, (1036, 1037), edit))
        assert not [o for o in report.ops if o.kernel == "gemm"]
        assert any("neither this row nor the op before it prints" in s.reason for s in report.skipped)


def test_height_sharded_in0_takes_the_1d_systolic_config_on_the_user_grid(tmp_path: Path) -> None:
    report = read_ops_perf(_capture(tmp_path, (790,)))  # no shard spec needed: the maker row left out
    [op] = report.ops
    cfg = op.config
    assert isinstance(cfg, TtnnMatmulConfig)
    # Mt = 512, Kt = Nt = 1 on 64 cores: tall, per_core_M = 8, per_core_N = 1, in0_block_w = 1;
    # get_subblock_sizes(8, 1): the first (w, h) pair dividing is (1, 8)
    assert cfg.program_config == "MatmulMultiCoreReuseMultiCast1DProgramConfig" and cfg.mcast_in0 is False
    assert cfg.compute_with_storage_grid_size == (8, 8)
    assert (cfg.per_core_M, cfg.per_core_N, cfg.in0_block_w) == (8, 1, 1)
    assert (cfg.out_subblock_h, cfg.out_subblock_w) == (8, 1)


@pytest.mark.parametrize(
    ("block", "fp32_acc", "expected"),
    [((8, 4), False, (2, 4)), ((8, 4), True, (2, 2)), ((4, 1), False, (4, 1)), ((5, 7), False, (1, 7))],
)
def test_get_subblock_sizes_reads_the_pairs_as_width_then_height(
    block: tuple[int, int], fp32_acc: bool, expected: tuple[int, int]
) -> None:
    assert subblock_sizes(*block, fp32_acc) == expected


def test_without_a_user_grid_in0s_own_shard_gives_the_output_shard_the_report_leaves_out(tmp_path: Path) -> None:
    # rows 811-812: [1, 1, 16384, 256] height-sharded in {256; 256} shards on 8x8, then its Matmul by
    # [1, 1, 256, 32] with no user_core_coord: get_matmul_program_config on in0's grid, per_core_M = 8,
    # per_core_N = Nt = 1, in0_block_w = Kt = 8; the output (sharded alike) one tile high, per_core_N wide
    report = read_ops_perf(_capture(tmp_path, (811, 812)))
    [op] = [o for o in report.ops if o.kernel == "gemm"]
    cfg = op.config
    assert isinstance(cfg, TtnnMatmulConfig)
    assert cfg.program_config == "MatmulMultiCoreReuseMultiCast1DProgramConfig" and cfg.mcast_in0 is False
    assert cfg.compute_with_storage_grid_size == (8, 8)
    assert (cfg.per_core_M, cfg.per_core_N, cfg.in0_block_w) == (8, 1, 8)
    assert (cfg.out_subblock_h, cfg.out_subblock_w) == (1, 1)
    alone = read_ops_perf(_capture(tmp_path, (812,)))
    assert not alone.ops and "not sharded alike" in alone.skipped[0].reason
