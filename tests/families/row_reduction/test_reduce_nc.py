"""The ``reduce_nc`` kernel (ttnn.experimental.fast_reduce_nc): its family, ttnn's split, the profiler rows."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from loom_explorer.accuracy.ingest import Predictor, parse_ops_perf
from loom_explorer.accuracy.op_mapping import OpSkip
from loom_explorer.families.row_reduction.accuracy import read_row_reduction
from loom_explorer.families.row_reduction.ttnn import row_reduction_op
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program, program_family
from loom_explorer.targets.ttnn.defaults import evaluate_interleaved_default

CAPTURES = Path(__file__).resolve().parents[3] / "loom_explorer" / "data" / "published" / "captures"
CODE = "fastreducencdeviceoperation"


def test_reduce_nc_is_a_row_reduction_that_is_no_norm_or_softmax() -> None:
    program = load_program("reduce_nc")
    assert program_family(program).name == "row_reduction"
    assert row_reduction_op(program) is None  # no sharded norm/softmax export claims it


def test_the_reader_takes_the_output_tiles_and_the_reduced_extent() -> None:
    assert read_row_reduction(CODE, {"dim": "1"}, [(1, 4, 3200, 576)]).shape == {"T": 1800, "R": 4}
    assert read_row_reduction(CODE, {"dim": "0"}, [(8, 3, 33, 64)]).shape == {"T": 3 * 2 * 2, "R": 8}
    assert read_row_reduction(CODE, {"dim": "-3"}, [(2, 5, 32, 32)]).shape == {"T": 2, "R": 5}
    # dim 0 of a rank-3 [32, 17, 2880] tensor (reported as W = 1): Z summed, 1 * 1 * 90 output tiles
    rank3 = read_row_reduction(CODE, {"dim": "0"}, [(1, 32, 17, 2880)])
    assert rank3.shape == {"T": 90, "R": 32} and "rank-3" in rank3.note


@pytest.mark.parametrize(
    ("attrs", "reason"), [({"dim": "2"}, "outer dimensions"), ({"dim": "x"}, "whole number"), ({}, "whole number")]
)
def test_the_reader_refuses_other_dims_with_the_reason(attrs: dict[str, str], reason: str) -> None:
    with pytest.raises(OpSkip, match=reason):
        read_row_reduction(CODE, attrs, [(1, 4, 64, 64)])


def test_ttnn_s_default_deals_the_output_tiles_over_the_grid() -> None:
    """1800 output tiles on a 110-core Blackhole grid: split_work_to_cores gives 17 tiles to the busiest core."""
    hw = load_hardware("blackhole_p150a")
    default, evaluated = evaluate_interleaved_default(hw, make_problem(load_program("reduce_nc"), "T=1800,R=4"))
    assert default.op == "ttnn.experimental.fast_reduce_nc"
    assert (default.units, default.per_core) == (1800, -(-1800 // (hw.grid.columns * hw.grid.rows)))
    assert evaluated.result.solution is not None


def test_the_deepseek_rows_are_read_and_predicted() -> None:
    with gzip.open(CAPTURES / "bh_8xp150_deepseek_v3_d_p.csv.gz", "rt") as f:
        lines = f.read().splitlines()
    text = "\n".join([lines[0], *(line for line in lines[1:] if line.startswith("FastReduceNCDeviceOperation,"))])
    report = parse_ops_perf(Path("deepseek_fast_reduce_nc.csv"), text + "\n")
    assert len(report.ops) == 8 and not report.skipped
    assert {(op.kernel, tuple(op.shape.items())) for op in report.ops} == {("reduce_nc", (("T", 1800), ("R", 4)))}
    predicted = Predictor(load_hardware("blackhole_p150a"), "deepseek_fast_reduce_nc.csv", (11, 10))(report.ops[0])
    assert predicted.evaluated is not None and predicted.evaluated.result.solution is not None
