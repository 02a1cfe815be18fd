"""The Blackhole multicast sender's flush (``families/contraction/latency.py: flushed_sender_cycles``): on
Blackhole ttnn's matmul sender waits for each block's multicast to leave before it reads the next block, so a
sender that reads from DRAM and multicasts to the whole grid (a 1-D config) takes ``read + mcast`` a K step,
``mcast`` at the multicast rate of the grid's cores (``multicast_rate``); on Wormhole, for a 2-D config's
line multicasts and for TT-Lang kernels the step is the overlapped one, unchanged."""

from __future__ import annotations

import math

import pytest

from loom_explorer.families.contraction.latency import flushed_sender_cycles, multicast_rate
from loom_explorer.families.contraction.quantities import build_quantities
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import KernelTarget, Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.validate import referee

# a prefill projection of 128 tokens with ttnn's 1-D in0-multicast config on 11x9 cores: in0 (4x2 tiles of
# bf16 a K step) read by one core and multicast to all 99, in1 (2x1 tiles) read by every core, 32 K steps
ONE_D = {
    "grid_x": 11,
    "grid_y": 9,
    "per_core_M": 4,
    "per_core_N": 1,
    "per_core_K": 64,
    "in0_block_w": 2,
    "out_block_h": 4,
    "out_block_w": 1,
    "out_subblock_h": 4,
    "out_subblock_w": 1,
    "in0_buffer_depth": 2,
    "in1_buffer_depth": 2,
}
ONE_D_CANDIDATE = "N@xy|in0=mcast_xy,in1=dram"
K_STEPS = 32
IN0_BLOCK_BYTES = 4 * 2 * 2048


def _problem(target: KernelTarget = KernelTarget.ttnn) -> Problem:
    return make_problem(load_program("gemm"), "M=128,K=2048,N=3072", target=target)


def _terms(hw_name: str, problem: Problem, candidate_name: str, params: dict[str, int]) -> dict[str, int]:
    hw = load_hardware(hw_name)
    candidate = next(c for c in enumerate_candidates(problem) if c.name == candidate_name)
    verdict = referee(build_schedule(hw, problem, candidate), params)
    assert verdict.legal, verdict.violations
    assert verdict.solution is not None
    return dict(verdict.solution.breakdown)


def test_the_multicast_rate_falls_linearly_between_the_published_grids() -> None:
    # the two published Blackhole rectangles, and held beyond them
    assert multicast_rate(25) == pytest.approx(39.68)
    assert multicast_rate(110) == pytest.approx(24.71)
    assert multicast_rate(4) == pytest.approx(39.68)
    assert multicast_rate(140) == pytest.approx(24.71)
    # halfway in receivers, halfway in rate
    assert multicast_rate(round((25 + 110) / 2)) == pytest.approx((39.68 + 24.71) / 2, abs=0.1)


def test_a_blackhole_sender_reads_then_multicasts_each_block() -> None:
    hw = load_hardware("blackhole_p150a")
    terms = _terms("blackhole_p150a", _problem(), ONE_D_CANDIDATE, ONE_D)
    # by hand, from the hardware file: the in0 sender's read, ceil(16384 / 34.9) plus the DRAM latency (a
    # double-buffered block waits the whole of it), then its multicast to the 99 cores at
    # 39.68 + (99 - 25) * (24.71 - 39.68) / 85 = 26.65 B/cycle (0.0375 cycles a byte), 18 hops, one handshake
    read = math.ceil(IN0_BLOCK_BYTES * 10 / 349) + hw.dram.read_latency_cycles
    cycles_per_10k_bytes = round(10_000 / (39.68 + (99 - 25) * (24.71 - 39.68) / 85))
    assert cycles_per_10k_bytes == 375
    mcast = (
        math.ceil(IN0_BLOCK_BYTES * cycles_per_10k_bytes / 10_000)
        + 18 * hw.noc.hop_latency_cycles
        + hw.noc.multicast_handshake_cycles
    )
    assert (read, mcast) == (949, 1143)
    # the sender binds every step (the compute of 4 output tiles over 2 inner tiles, the cores' own in1 reads
    # and the chip's DRAM reads are all shorter), so the K loop is 32 such steps
    assert terms["compute"] + terms["data_movement"] == K_STEPS * (read + mcast)


def test_wormhole_line_multicasts_and_ttlang_keep_the_overlapped_step() -> None:
    blackhole = _terms("blackhole_p150a", _problem(), ONE_D_CANDIDATE, ONE_D)
    # the same config with the flush left out (a TT-Lang kernel) overlaps the read with the multicast
    overlapped = _terms("blackhole_p150a", _problem(KernelTarget.ttlang), ONE_D_CANDIDATE, ONE_D)
    assert overlapped["data_movement"] < blackhole["data_movement"]
    assert overlapped["compute"] == blackhole["compute"]
    hw = load_hardware("blackhole_p150a")
    problem = _problem()
    for candidate in enumerate_candidates(problem):
        q = build_quantities(hw, problem, candidate)
        flushed = flushed_sender_cycles(q)
        # only a multicast to the whole grid is taken serial; a 2-D config's line multicasts are not
        whole_grid = [t for t in q.inputs if candidate.comm(t).value == "mcast_xy"]
        assert len(flushed) == len(whole_grid), candidate.name
    wormhole = load_hardware("wormhole_n150")
    for candidate in enumerate_candidates(problem):
        assert flushed_sender_cycles(build_quantities(wormhole, problem, candidate)) == []
