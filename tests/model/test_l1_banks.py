"""L1-interleaved operands (``model/l1_banks.py``): pages read and written over the NoC from the worker cores'
L1 banks, with no DRAM bytes, at the NoC's unicast rate and page latency, and a write-back of every core's
block at once bounded by the NoC's average link load; solved and refereed with the real model."""

from __future__ import annotations

import math

from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.expr import evaluate
from loom_explorer.model.l1_banks import link_share, mean_bank_hops, page_latency_cycles
from loom_explorer.problem import Placement, make_problem
from loom_explorer.program import load_program
from loom_explorer.targets.ttnn.defaults import evaluate_ttnn_default
from loom_explorer.validate import referee

# the n150 2048^3 hand-tuned blocking: one 8x8-tile output block per core, 8 K steps of 8 tiles
BLOCKING = {
    "grid_x": 8,
    "grid_y": 8,
    "per_core_M": 8,
    "per_core_N": 8,
    "per_core_K": 64,
    "in0_block_w": 8,
    "out_block_h": 8,
    "out_block_w": 8,
    "out_subblock_h": 4,
    "out_subblock_w": 2,
    "in0_buffer_depth": 2,
    "in1_buffer_depth": 2,
}
OUT_BLOCK_BYTES = 8 * 8 * 2048  # one core's 8x8-tile bf16 output block


def _solved(hw: HardwareSpec, placements: dict[str, Placement]) -> tuple[dict[str, int], int]:
    """(latency terms with the total, DRAM bytes read) of the blocking on the 2-D multicast candidate."""
    problem = make_problem(load_program("gemm"), "M=2048,K=2048,N=2048", placements=placements)
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "M@y,N@x|in0=mcast_x,in1=mcast_y")
    schedule = build_schedule(hw, problem, candidate)
    verdict = referee(schedule, BLOCKING)
    assert verdict.legal and verdict.solution is not None, verdict.violations
    terms = {"total": verdict.solution.latency_cycles, **dict(verdict.solution.breakdown)}
    return terms, evaluate(schedule.dram_read_bytes, BLOCKING)


def test_mean_hops_and_page_latency_follow_the_noc_figures() -> None:
    hw = load_hardware("wormhole_n150")
    # NoC0 on the 10x12 torus over worker columns 1-4, 6-9 and rows 1-5, 7-9: one-way hops, wrapping
    xs, ys = hw.grid.noc_x, hw.grid.noc_y
    dx = sum((b - a) % 10 for a in xs for b in xs) / 64
    dy = sum((b - a) % 12 for a in ys for b in ys) / 64
    assert math.isclose(mean_bank_hops(hw), dx + dy)
    hops_cycles = math.ceil(hw.noc.hop_latency_cycles * (dx + dy))
    assert page_latency_cycles(hw) == hw.noc.transaction_latency_cycles + hops_cycles
    assert math.isclose(link_share(hw), max(dx / (8 * 10), dy / (8 * 12)))


def test_an_l1_interleaved_input_reads_no_dram() -> None:
    hw = load_hardware("wormhole_n150")
    dram, dram_bytes = _solved(hw, {})
    one, one_bytes = _solved(hw, {"in0": Placement.l1_interleaved})
    both, both_bytes = _solved(hw, {"in0": Placement.l1_interleaved, "in1": Placement.l1_interleaved})
    # in0 and in1 move the same bytes (8x8-tile blocks): half of the DRAM reads go, then all
    assert one_bytes * 2 == dram_bytes and both_bytes == 0
    # Wormhole's per-step DRAM stall goes with the DRAM read, and the NoC reads are faster than DRAM's
    assert both["data_movement"] < one["data_movement"] < dram["data_movement"]
    assert both["total"] < one["total"] < dram["total"]
    assert one["compute"] == dram["compute"]


def test_an_l1_interleaved_output_is_written_to_the_banks() -> None:
    hw = load_hardware("wormhole_n150")
    dram, _ = _solved(hw, {})
    banks, _ = _solved(hw, {"out": Placement.l1_interleaved})
    # every core writes its block at once: the slower of one core's NoC write and the NoC's average link load
    per_core = math.ceil(OUT_BLOCK_BYTES / hw.noc.unicast_bytes_per_cycle)
    noc = math.ceil(64 * OUT_BLOCK_BYTES * link_share(hw) / hw.noc.link_bytes_per_cycle)
    assert noc > per_core  # the NoC's load binds for 64 writers
    assert abs(banks["write_back"] - (noc + page_latency_cycles(hw))) <= 1  # the rate is a rounded fraction
    assert banks["write_back"] < dram["write_back"]
    assert {k: v for k, v in banks.items() if k not in ("write_back", "total")} == {
        k: v for k, v in dram.items() if k not in ("write_back", "total")
    }


def test_sharded_in_l1_is_not_interleaved() -> None:
    assert Placement.l1_interleaved.interleaved and not Placement.l1_interleaved.in_l1
    assert Placement.dram.interleaved and not Placement.dram.in_l1
    assert all(p.in_l1 and not p.interleaved for p in Placement if p not in (Placement.dram, Placement.l1_interleaved))


def test_the_interleaved_default_of_an_element_wise_op_reads_its_l1_interleaved_input_from_the_banks() -> None:
    hw = load_hardware("blackhole_p150a")
    program = load_program("binary")

    def solved(placements: dict[str, Placement]) -> tuple[int, int]:
        problem = make_problem(program, "H=4096,W=4096", placements=placements)
        _, evaluated = evaluate_ttnn_default(hw, problem)
        solution = evaluated.result.solution
        assert solution is not None
        return solution.latency_cycles, evaluate(evaluated.schedule.dram_read_bytes, evaluated.values)

    dram, dram_bytes = solved({})
    banks, banks_bytes = solved({"a": Placement.l1_interleaved, "b": Placement.l1_interleaved})
    assert banks_bytes == 0 < dram_bytes and banks < dram
