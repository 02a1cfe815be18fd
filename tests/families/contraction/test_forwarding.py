"""minimal_matmul's inputs passed core to core (``families/contraction/forwarding.py``): a block reaches the
last core of a line after one hop per core before it, ``hop = ceil(B / w_unicast) + o_hs``, and a line
passes one block per ``max(read, hop) + hop``; and the work split of a ``MinimalMatmulOp`` row
(``accuracy.py``: ``_minimal_split``)."""

from __future__ import annotations

import math
from dataclasses import replace

from loom_explorer.families.contraction.accuracy import _minimal_split, _MinimalBlocks
from loom_explorer.families.contraction.forwarding import FORWARDED
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.validate import referee

# the Blackhole CLIP row M=19, K=768, N=768 on 8x8 as minimal_matmul splits it: one tile of M and 3 of N
# per core, 3 K blocks of 8 tiles
VALUES = {
    "grid_x": 8,
    "grid_y": 8,
    "per_core_M": 1,
    "per_core_N": 3,
    "per_core_K": 24,
    "in0_block_w": 8,
    "out_block_h": 1,
    "out_block_w": 3,
    "out_subblock_h": 1,
    "out_subblock_w": 1,
    "in0_buffer_depth": 2,
    "in1_buffer_depth": 2,
}
K_STEPS = 3
NAME = "M@y,N@x|in0=mcast_x,in1=mcast_y"


def breakdown(forwarded: bool) -> dict[str, int]:
    hw = load_hardware("blackhole_p150a")
    problem = make_problem(load_program("gemm"), "M=256,K=768,N=768")
    candidate = next(c for c in enumerate_candidates(problem) if c.name == NAME)
    if forwarded:
        candidate = replace(candidate, tags=(FORWARDED,))
    verdict = referee(build_schedule(hw, problem, candidate), VALUES)
    assert verdict.legal, verdict.violations
    assert verdict.solution is not None
    return {"total": verdict.solution.latency_cycles, **dict(verdict.solution.breakdown)}


def test_a_forwarded_block_crosses_one_hop_per_core_and_a_line_passes_one_per_read_and_hop() -> None:
    hw = load_hardware("blackhole_p150a")
    noc, dram = hw.noc, hw.dram
    in0_bytes, in1_bytes = 1 * 8 * 2048, 8 * 3 * 2048  # bf16 blocks: in0 1x8 tiles, in1 8x3

    def read(nbytes: int) -> int:
        return math.ceil(nbytes / dram.core_read_bytes_per_cycle) + dram.read_latency_cycles

    def hop(nbytes: int) -> int:
        return math.ceil(nbytes / noc.unicast_bytes_per_cycle) + noc.multicast_handshake_cycles

    got = breakdown(forwarded=True)
    # fill: the last of the 8 cores of a line holds its first block after the read and 7 hops
    assert got["fill"] == max(read(in0_bytes) + 7 * hop(in0_bytes), read(in1_bytes) + 7 * hop(in1_bytes))
    # each K step: in1's line passes a block per read + hop (the injector reads, then passes it on), which
    # outlasts compute here (3 tiles x 8 at 64 cycles, HiFi4) and in0's line
    step = max(read(in1_bytes), hop(in1_bytes)) + hop(in1_bytes)
    assert (got["compute"] + got["data_movement"]) == K_STEPS * step
    # the multicast of the same schedule: one transfer to every core, so a shorter fill
    assert breakdown(forwarded=False)["fill"] < got["fill"]


def test_the_split_pads_each_axis_to_its_cores_and_evens_out_the_blocks() -> None:
    # M=19 (1 tile), K=1280 (40), N=5120 (160) on 8x8, blocks 2x8x8: M <= N, so M over the 8 rows (1 tile
    # each) and N over the 8 columns (20 tiles each: ceil(20/8) = 3 blocks of ceil(20/3) = 7, padded to 21)
    split = _minimal_split(_MinimalBlocks(2, 8, 8, 2, 2, (8, 8)), 1, 40, 160)
    assert not split.transposed
    assert (split.per_core_m, split.block_h, split.per_core_n, split.block_w) == (1, 1, 21, 7)
    assert (split.m_tiles, split.n_tiles, split.k_tiles) == (8, 168, 40)
    # M > N transposes the grid: M over the 4 columns (5 tiles each, M_block 4: 2 blocks of 3, padded to 6),
    # N over the 2 rows (3 each, one block); K padded to whole K blocks (3 -> 4)
    wide = _minimal_split(_MinimalBlocks(4, 4, 4, 2, 2, (4, 2)), 20, 3, 6)
    assert wide.transposed and (wide.m_cores, wide.n_cores) == (4, 2)
    assert (wide.per_core_m, wide.block_h, wide.per_core_n, wide.block_w, wide.k_tiles) == (6, 3, 3, 3, 4)
