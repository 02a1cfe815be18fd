"""The slice kernels' per-stick index walk (``stick_walk.py``): its cycles per stick counted from the kernel
source, paid by the RISC-V that moves the DRAM side, and only on the rows whose kernels walk; each cost checked
by hand from the formula."""

from __future__ import annotations

from functools import cache

import pytest

from loom_explorer.accuracy.ingest import IngestReport, read_ops_perf
from loom_explorer.data import capture_path
from loom_explorer.families.data_movement.stick_walk import STICK_WALK, stick_walk_cycles
from loom_explorer.families.data_movement.ttnn import evaluate_sharded, ttnn_function
from loom_explorer.families.data_movement.ttnn_config import ShardedSplit
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.targets.ttnn.evaluate import ConfigError

BH, WH = "blackhole_p150a", "wormhole_n150"
WALK = frozenset({STICK_WALK})


@cache
def _oft() -> IngestReport:
    return read_ops_perf(capture_path("bh20_oft.csv.gz"))


def _terms(hw_name: str, shape: str, split: ShardedSplit, options: frozenset[str] = frozenset()) -> dict[str, int]:
    problem = make_problem(load_program("copy_rows"), shape, placements=split.placements(), options=options)
    solution = evaluate_sharded(load_hardware(hw_name), problem, split).result.solution
    assert solution is not None
    return {"total": solution.latency_cycles, **dict(solution.breakdown)}


def test_a_stick_s_walk_is_its_loads_stores_and_instructions() -> None:
    """w_stick = 9 * L_load + 3 * s_store + 16: Blackhole's L1 load 8 cycles and store 1 give 72 + 3 + 16 = 91;
    Wormhole's store every 5 cycles gives 72 + 15 + 16 = 103."""
    assert stick_walk_cycles(load_hardware(BH)) == 91
    assert stick_walk_cycles(load_hardware(WH)) == 103


@pytest.mark.parametrize(("hw_name", "per_stick"), [(BH, 91), (WH, 103)])
def test_the_slice_writer_walks_each_core_s_output_sticks(hw_name: str, per_stick: int) -> None:
    """A slice write of 2,048 rows of 256 bfloat16 from a height shard over 8 cores into DRAM: 256 sticks a core,
    one block of whole rows (the shard), so the writer's walk is exactly 256 * w_stick, added to its write step,
    which binds with or without it (nothing is read from DRAM): the steady state (``data_movement``) and the
    total grow by 256 * w_stick, the fill, compute and drain not at all."""
    split = ShardedSplit(op="SliceWriteDeviceOperation", cores=8, sharded=("x",))
    plain = _terms(hw_name, "H=2048,W=256", split)
    walked = _terms(hw_name, "H=2048,W=256", split, WALK)
    assert walked["data_movement"] - plain["data_movement"] == 256 * per_stick
    assert walked["total"] - plain["total"] == 256 * per_stick
    for term in ("launch", "fill", "compute", "write_back"):
        assert walked[term] == plain[term]


@pytest.mark.parametrize(("hw_name", "per_stick"), [(BH, 91), (WH, 103)])
def test_the_padded_slice_reader_walks_each_core_s_source_sticks(hw_name: str, per_stick: int) -> None:
    """A padded slice of 2,048 rows of 256 bfloat16 from DRAM into a height shard over 8 cores: one block of the
    core's 256 sticks, whose read is the fill (the first block's read, not walked: the walk is RISC-V work in the
    step, as the gather); the reader's step is that read plus 256 * w_stick, which then outlasts the NoC-link
    bound that set the step without the walk, so ``data_movement = fill + 256 * w_stick``."""
    split = ShardedSplit(op="PaddedSliceDeviceOperation", cores=8, sharded=("y",))
    plain = _terms(hw_name, "H=2048,W=256", split)
    walked = _terms(hw_name, "H=2048,W=256", split, WALK)
    assert walked["fill"] == plain["fill"]
    assert walked["data_movement"] == walked["fill"] + 256 * per_stick
    assert plain["data_movement"] < walked["data_movement"]


def test_a_copy_between_two_shards_walks_nothing() -> None:
    """With both sides in L1 there is no DRAM side to walk: the option changes nothing."""
    split = ShardedSplit(op="MoveDeviceOperation", cores=8, sharded=("x", "y"))
    assert _terms(BH, "H=2048,W=256", split, WALK) == _terms(BH, "H=2048,W=256", split)


def test_a_walked_copy_is_not_exported_as_a_clone() -> None:
    problem = make_problem(load_program("copy_rows"), "H=64,W=6", options=WALK)
    with pytest.raises(ConfigError, match="padded_slice"):
        ttnn_function(problem)


def test_only_row_major_padded_slice_and_slice_write_rows_walk() -> None:
    """OFT's row-major PaddedSlice and SliceWrite rows carry ``stick_walk``; no other row does."""
    walked = [op for op in _oft().ops if STICK_WALK in op.options]
    assert {(op.op_code, op.kernel) for op in walked} == {
        ("PaddedSliceDeviceOperation", "copy_rows"),
        ("SliceWriteDeviceOperation", "copy_rows"),
    }
