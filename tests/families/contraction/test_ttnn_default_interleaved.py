"""ttnn's pick for a matmul called without a program config when an operand is L1-interleaved
(``create_simple_matmul_program_config`` with ``all_dram_interleaved`` false: ``ttnn_config.py``), and a
config whose blocks keep one core busy, costed on the single-core candidate (a real captured row)."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pytest

from loom_explorer.accuracy.ingest import read_ops_perf, report_measurements
from loom_explorer.families.contraction.ttnn_config import ttnn_default_config, ttnn_default_evaluated
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import Placement, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttnn.evaluate import ConfigError
from loom_explorer.targets.ttnn.op import ttnn_memory

CAPTURES = Path(__file__).parents[3] / "loom_explorer" / "data" / "published" / "captures"


def _gemm(shape: str, placements: dict[str, Placement]):
    return make_problem(load_program("gemm"), shape, placements=placements)


def test_an_l1_interleaved_operand_makes_ttnn_keep_its_trial_block() -> None:
    hw = load_hardware("wormhole_n150")
    dram = ttnn_default_config(hw, _gemm("M=1024,K=1024,N=1024", {}))
    l1 = ttnn_default_config(hw, _gemm("M=1024,K=1024,N=1024", {"in0": Placement.l1_interleaved}))
    # all in DRAM: the per-core share of the grid (32 tiles over 8 rows and columns)
    assert (dram.per_core_M, dram.per_core_N) == (4, 4)
    # not all in DRAM: the 16x16 trial block that fits L1, 2x2 blocks on the 8x8 grid, in0_block_w 2, the
    # output block the whole trial block, sub-blocks 1x2 (4x2 only for a 2-tile block)
    assert l1.program_config == "MatmulMultiCoreReuseMultiCastProgramConfig"
    assert (l1.per_core_M, l1.per_core_N, l1.in0_block_w) == (16, 16, 2)
    assert (l1.out_block_h, l1.out_block_w, l1.out_subblock_h, l1.out_subblock_w) == (16, 16, 1, 2)
    assert l1.compute_with_storage_grid_size == (8, 8)
    _, evaluated = ttnn_default_evaluated(hw, _gemm("M=1024,K=1024,N=1024", {"in0": Placement.l1_interleaved}))
    assert evaluated.result.solution is not None and evaluated.values["grid_x"] * evaluated.values["grid_y"] == 4


def test_more_trial_blocks_than_cores_is_a_config_the_model_does_not_map() -> None:
    hw = load_hardware("wormhole_n150")
    problem = _gemm("M=8192,K=1024,N=8192", {"out": Placement.l1_interleaved})
    with pytest.raises(ConfigError, match="MatmulMultiCoreProgramConfig"):
        ttnn_default_config(hw, problem)


def test_a_batched_attention_matmul_on_one_core_is_the_single_core_candidate(tmp_path: Path) -> None:
    # row 19 of the shipped Blackhole CLIP capture (ingest's numbering: the header is row 1): Q @ K^T of 12
    # heads, [1, 12, 19, 64] x [1, 12, 64, 19], no program config; ttnn's pick is the 1-D in1 multicast over
    # one tile of M: one core (CORE COUNT 1)
    with gzip.open(CAPTURES / "bh_64_clip_encoder_1.csv.gz", "rt", newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        row = next(cells for i, cells in enumerate(reader, start=2) if i == 19)
    assert dict(zip(header, row, strict=True))["CORE COUNT"] == "1"
    path = tmp_path / "ops_perf_results.csv"
    with path.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([header, row])
    report = read_ops_perf(path)
    [op] = report.ops
    assert op.shape == {"M": 19, "K": 64, "N": 19, "batch": 12} and op.batch_repeats == 12
    [m] = report_measurements(report, "blackhole_p150a")
    assert m.candidate == "single_core|in0=dram,in1=dram"
    assert m.predicted_ns is not None and m.predicted_ns > 0


def test_an_l1_interleaved_operand_is_exported_as_ttnn_s_l1_memory_config() -> None:
    hw = load_hardware("wormhole_n150")
    problem = _gemm("M=1024,K=2048,N=768", {"in0": Placement.l1_interleaved})
    candidate = "M@y,N@x|in0=mcast_x,in1=mcast_y"
    session = Session(hw, problem)
    [result] = [r for r in session.solve({}, SolveOptions(), candidates=[candidate]) if r.solution]
    assert result.solution is not None
    memory = ttnn_memory(session.schedule(candidate), result.solution.values())
    assert memory == {"in0": "L1", "in1": "DRAM", "out": "DRAM"}
