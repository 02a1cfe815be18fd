"""The K-step read stall (``families/contraction/latency.py: read_stall_cycles``): each block a core or its sender reads
from DRAM delays its K step by ``ceil(B / dram.step_read_bytes_per_cycle)``; an L1-resident input does not,
and a hardware file without the rate has no stall."""

from __future__ import annotations

import math

import pydantic
import pytest

from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import Placement, make_problem
from loom_explorer.program import load_program
from loom_explorer.validate import referee

# the n150 2048^3 hand-tuned blocking: one 8x8-tile output block per core, 8 K steps of 8 tiles
TTNN_2048 = {
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
STEPS = 8
BLOCK_BYTES = 8 * 8 * 2048  # in0 (8x8 tiles) and in1 (8x8) blocks of bf16


def with_rate(hw: HardwareSpec, rate: float | None) -> HardwareSpec:
    return hw.model_copy(update={"dram": hw.dram.model_copy(update={"step_read_bytes_per_cycle": rate})})


def latency(hw: HardwareSpec, in0_in_l1: bool = False) -> dict[str, int]:
    placements = {"in0": Placement.l1_block} if in0_in_l1 else {}
    problem = make_problem(load_program("gemm"), "M=2048,K=2048,N=2048", placements=placements)
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "M@y,N@x|in0=mcast_x,in1=mcast_y")
    verdict = referee(build_schedule(hw, problem, candidate), TTNN_2048)
    assert verdict.legal, verdict.violations
    assert verdict.solution is not None
    return {"total": verdict.solution.latency_cycles, **dict(verdict.solution.breakdown)}


def test_each_dram_read_block_stalls_its_k_step() -> None:
    hw = load_hardware("wormhole_n150")
    rate = hw.dram.step_read_bytes_per_cycle
    assert rate is not None  # the shipped Wormhole files give it
    without, shipped = latency(with_rate(hw, None)), latency(hw)
    # compute-bound: the stall of both inputs adds to every step (data movement), compute itself unchanged
    stall = 2 * math.ceil(BLOCK_BYTES / rate)
    assert shipped["compute"] == without["compute"]
    assert shipped["total"] - without["total"] == STEPS * stall
    # in0 held in L1 is not read from DRAM: only in1's block stalls
    sharded, sharded_without = latency(hw, in0_in_l1=True), latency(with_rate(hw, None), in0_in_l1=True)
    assert sharded["total"] - sharded_without["total"] == STEPS * math.ceil(BLOCK_BYTES / rate)
    # a slower stall rate costs more
    assert latency(with_rate(hw, rate / 2))["total"] > shipped["total"]


def test_blackhole_has_no_stall_and_a_non_positive_rate_is_refused() -> None:
    assert load_hardware("blackhole_p150a").dram.step_read_bytes_per_cycle is None
    data = load_hardware("wormhole_n150").model_dump()
    data["dram"]["step_read_bytes_per_cycle"] = 0
    with pytest.raises(pydantic.ValidationError, match="step_read_bytes_per_cycle"):
        HardwareSpec.model_validate(data)
