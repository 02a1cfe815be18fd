"""Tiled copies into, out of and within L1 shards: a sharded move's shard crosses the NoC within each core's L1
(``local_copy.py``); a copy into L1 shards has no fill, one out of them no last write in its drain
(``stages.py``): each checked by hand."""

from __future__ import annotations

import math

from loom_explorer.families.data_movement.ttnn import evaluate_sharded
from loom_explorer.families.data_movement.ttnn_config import ShardedSplit
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program


def _terms(kernel: str, shape: str, sharded: tuple[str, ...]) -> dict[str, int]:
    hw = load_hardware("blackhole_p150a")
    split = ShardedSplit(op="MoveDeviceOperation", cores=20, sharded=sharded)
    problem = make_problem(load_program(kernel), shape, placements=split.placements())
    evaluated = evaluate_sharded(hw, problem, split)
    assert evaluated.result.solution is not None
    return {"total": evaluated.result.solution.latency_cycles, **dict(evaluated.result.solution.breakdown)}


def test_a_sharded_tiled_move_costs_its_shard_over_the_noc() -> None:
    """[2304, 1792] bfloat16 tiles over 20 cores: 72 tile rows, ceil(72 / 20) = 4 a core, 56 tiles each, the
    whole shard: 4 * 56 * 2048 bytes at 60 B/cycle (the hardware file's one-to-one NoC rate) in
    ``data_movement``, then one transaction's round trip (373 cycles) in ``write_back``, after the launch."""
    hw = load_hardware("blackhole_p150a")
    terms = _terms("copy", "H=2304,W=1792", ("x", "y"))
    local = math.ceil(4 * 56 * 2048 / hw.noc.unicast_bytes_per_cycle)
    assert terms["data_movement"] == local and terms["write_back"] == hw.noc.transaction_latency_cycles
    assert terms["total"] == hw.compute.kernel_launch_cycles + local + hw.noc.transaction_latency_cycles


def test_only_a_copy_within_l1_pays_the_local_copy() -> None:
    """With the output in DRAM the step is the DRAM write, not a local copy; a row-major sharded move pays its
    own shard's bytes: ceil(2304 / 20) = 116 rows of 1792 * 2 bytes a core, at 60 B/cycle."""
    hw = load_hardware("blackhole_p150a")
    to_dram = _terms("copy", "H=2304,W=1792", ("x",))
    assert to_dram["data_movement"] != math.ceil(4 * 56 * 2048 / hw.noc.unicast_bytes_per_cycle)
    rows = _terms("copy_rows", "H=2304,W=1792", ("x", "y"))
    assert rows["data_movement"] == math.ceil(116 * 1792 * 2 / hw.noc.unicast_bytes_per_cycle)
    assert rows["write_back"] == hw.noc.transaction_latency_cycles


def test_a_copy_into_l1_shards_is_its_reads_alone() -> None:
    """interleaved_to_sharded: the output in L1, no compute: the reads are the only stage, so no fill; the
    total is the launch and the steps."""
    hw = load_hardware("blackhole_p150a")
    terms = _terms("copy", "H=2304,W=1792", ("y",))
    assert terms["fill"] == 0 and terms["write_back"] == 0
    assert terms["total"] == hw.compute.kernel_launch_cycles + terms["data_movement"]


def test_a_copy_out_of_l1_shards_drains_only_its_write_latency() -> None:
    """sharded_to_interleaved: every source in L1, no compute: the writes are the only stage, so the drain is the
    DRAM write latency alone (the last block's write is one of the steps)."""
    hw = load_hardware("blackhole_p150a")
    terms = _terms("copy", "H=2304,W=1792", ("x",))
    assert terms["fill"] == 0
    assert terms["write_back"] == hw.dram.write_latency_cycles
