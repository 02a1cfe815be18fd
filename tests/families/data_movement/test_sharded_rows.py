"""Row-major copies with an L1 shard on one side, costed as ttnn's sharded factories run them: a shard copied
within each core's L1 (``local_copy.py``: the sharded move) and the interleaved-to-sharded reader that waits
for every stick on Blackhole (``shard_reader.py``); each cost checked by hand from the formula."""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import pytest

from loom_explorer.accuracy.ingest import IngestReport, read_ops_perf
from loom_explorer.data import capture_path
from loom_explorer.families.data_movement.barriers import waits_each_page
from loom_explorer.families.data_movement.pages import page_bytes_per_cycle
from loom_explorer.families.data_movement.program import analyse_data_movement
from loom_explorer.families.data_movement.shard_reader import TO_SHARD
from loom_explorer.families.data_movement.ttnn import evaluate_sharded, ttnn_function
from loom_explorer.families.data_movement.ttnn_config import ShardedSplit
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import Arch
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.targets.ttnn.evaluate import ConfigError

BH, WH = "blackhole_p150a", "wormhole_n150"


@cache
def _oft() -> IngestReport:
    return read_ops_perf(capture_path("bh20_oft.csv.gz"))


def _terms(hw_name: str, shape: str, split: ShardedSplit, options: frozenset[str] = frozenset()) -> dict[str, int]:
    problem = make_problem(load_program("copy_rows"), shape, placements=split.placements(), options=options)
    evaluated = evaluate_sharded(load_hardware(hw_name), problem, split)
    solution = evaluated.result.solution
    assert solution is not None
    return {"total": solution.latency_cycles, **dict(solution.breakdown)}


@pytest.mark.parametrize("hw_name", [BH, WH])
def test_a_sharded_move_copies_each_core_s_shard_over_its_noc(hw_name: str) -> None:
    """ttnn.move of a height shard into another: 2,048 rows of 256 bfloat16 over 8 cores are 256 rows of 512 B,
    131,072 B a core, read from the core's own L1 at the NoC's one-to-one rate, then the last chunk's round
    trip: total = launch + ceil(131072 / r_noc) + L_noc, nothing else (no DRAM read or write)."""
    hw = load_hardware(hw_name)
    split = ShardedSplit(op="MoveDeviceOperation", cores=8, sharded=("x", "y"))
    terms = _terms(hw_name, "H=2048,W=256", split)
    copy = math.ceil(Fraction(131072) / Fraction(hw.noc.unicast_bytes_per_cycle))
    assert terms["data_movement"] == copy
    assert terms["write_back"] == hw.noc.transaction_latency_cycles
    assert terms["fill"] == 0 and terms["compute"] == 0
    assert terms["total"] == hw.compute.kernel_launch_cycles + copy + hw.noc.transaction_latency_cycles


def test_a_sharded_move_is_not_cut_into_a_cycle_per_row() -> None:
    """A share of a prime number of rows (14,669 here) is one row a block in the sharded split; the local copy is
    still the whole shard's bytes at the NoC rate (16-byte rows: ceil(14669 * 16 / 60) = 3,912 cycles on
    Blackhole), not a cycle rounded up per row."""
    split = ShardedSplit(op="MoveDeviceOperation", cores=20, sharded=("x", "y"))
    terms = _terms(BH, "H=293380,W=8", split)
    assert terms["data_movement"] == math.ceil(Fraction(14669 * 16, 60)) == 3912


def test_only_a_copy_with_both_sides_sharded_copies_locally() -> None:
    """An interleaved-to-sharded copy (output in L1, source in DRAM) reads DRAM and makes no local copy: its
    drain has no NoC round trip added."""
    split = ShardedSplit(op="InterleavedToShardedDeviceOperation", cores=8, sharded=("y",))
    terms = _terms(WH, "H=2048,W=256", split)
    assert terms["write_back"] == 0


def test_the_interleaved_to_sharded_reader_waits_for_every_stick_on_blackhole_only() -> None:
    """``aligned = aligned and !is_blackhole``: with ``to_shard`` the row-major source waits on Blackhole; on
    Wormhole (a height shard of whole rows: the aligned path) and without the option it streams."""
    problem = make_problem(load_program("copy_rows"), "H=64,W=6", options=frozenset({TO_SHARD}))
    st = analyse_data_movement(problem.program)
    assert waits_each_page(problem, st, "x", Arch.blackhole)
    assert not waits_each_page(problem, st, "x", Arch.wormhole)
    assert not waits_each_page(problem, st, "y", Arch.blackhole)
    plain = make_problem(load_program("copy_rows"), "H=64,W=6")
    assert not waits_each_page(plain, st, "x", Arch.blackhole)


def test_a_to_shard_copy_on_blackhole_costs_a_dram_round_trip_a_stick() -> None:
    """1,920 rows of 256 bfloat16 into a height shard over 20 cores: 96 sticks of 512 B a core (49,152 B, one
    block: the output is the core's L1 shard), each waited, so they move at the waited rate
    512 / (L_read + 512 / r(512)) bytes a cycle: data_movement = ceil(49152 / that rate), about 96 DRAM
    round trips; nothing is written back, and streamed the same copy is over three times faster."""
    hw = load_hardware(BH)
    split = ShardedSplit(op="InterleavedToShardedDeviceOperation", cores=20, sharded=("y",))
    waited = _terms(BH, "H=1920,W=256", split, frozenset({TO_SHARD}))
    streamed = _terms(BH, "H=1920,W=256", split)
    stick = hw.dram.read_latency_cycles + Fraction(512) / page_bytes_per_cycle(hw, 512, "read")
    rate = (Fraction(512) / stick).limit_denominator(1000)
    assert waited["data_movement"] == math.ceil(Fraction(49152) / rate)
    assert 95 * hw.dram.read_latency_cycles < waited["data_movement"] < 97 * (hw.dram.read_latency_cycles + 40)
    assert waited["write_back"] == 0
    assert waited["total"] > 3 * streamed["total"]


def test_a_to_shard_copy_is_not_exported_as_a_clone() -> None:
    problem = make_problem(load_program("copy_rows"), "H=64,W=6", options=frozenset({TO_SHARD}))
    with pytest.raises(ConfigError, match="interleaved_to_sharded"):
        ttnn_function(problem)


def test_only_row_major_interleaved_to_sharded_rows_read_with_to_shard() -> None:
    """OFT's row-major InterleavedToSharded rows carry ``to_shard``; its sharded moves and every other row do
    not (their readers are other kernels)."""
    report = _oft()
    to_shard = [op for op in report.ops if TO_SHARD in op.options]
    assert to_shard
    assert {(op.op_code, op.kernel) for op in to_shard} == {("InterleavedToShardedDeviceOperation", "copy_rows")}
    moves = [op for op in report.ops if op.op_code == "MoveDeviceOperation" and op.kernel == "copy_rows"]
    assert moves and not any(op.options for op in moves)


def test_a_block_sharded_interleaved_to_sharded_row_reads_each_core_s_sticks() -> None:
    """OFT's [480, 256] row-major tensor into a block shard of shape {96; 64} on 20 cores: each core's reader
    reads 96 sticks of 64 elements, so the row reads as 20 * 96 = 1,920 rows of 64 (not 480 rows of 256 dealt
    24 a core)."""
    (op,) = {
        (o.shape["H"], o.shape["W"]): o
        for o in _oft().ops
        if o.op_code == "InterleavedToShardedDeviceOperation"
        and o.config is not None
        and "l1_block" in str(o.config.placements())
    }.values()
    assert op.kernel == "copy_rows" and op.shape == {"H": 1920, "W": 64} and TO_SHARD in op.options
    assert "96 sticks of 64 elements" in op.note
