"""Flash-decoding (the ``kv_split`` candidates, ``Candidate.family`` flash_decoding): enumerated for decode,
solved against the prefill split, its traffic, buffers and ttnn's sdpa_decode rules."""

from __future__ import annotations

import pytest

from loom_explorer.families.flash_decoding.quantities import ttnn_decode_split
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import DataFormat
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.traffic.tiles import tile_traffic
from loom_explorer.traffic.transfers import schedule_transfers
from loom_explorer.validate import referee

DECODE_32K = "B=32,H=8,Hkv=1,Sq=1,Skv=32768,D=128"  # 8 query heads per key/value head, a 32k cache


def _problem(shape: str, target: KernelTarget = KernelTarget.ttnn, **kwargs):
    return make_problem(load_program("flash_attention"), shape, target=target, **kwargs)


def test_decode_problems_get_a_flash_decoding_candidate_and_prefill_and_causal_ones_do_not() -> None:
    names = [c.name for c in enumerate_candidates(_problem("B=2,H=8,Hkv=2,Sq=1,Skv=1024,D=64"))]
    assert names[-1] == "B*Hkv@xy|q=dram,k=dram,v=dram|kv_split"
    assert not any(c.has_tag("kv_split") for c in enumerate_candidates(_problem("B=1,H=8,Sq=2048,Skv=2048,D=64")))
    assert not any(
        c.has_tag("kv_split")
        for c in enumerate_candidates(_problem("B=1,H=8,Sq=64,Skv=64,D=64", KernelTarget.ttlang, options={"causal"}))
    )
    # several query rows: TT-Lang packs them (8 rows x 4 heads), ttnn's decode op takes one token only
    assert any(
        c.has_tag("kv_split")
        for c in enumerate_candidates(_problem("B=1,H=8,Hkv=2,Sq=8,Skv=512,D=64", KernelTarget.ttlang))
    )
    assert not any(c.has_tag("kv_split") for c in enumerate_candidates(_problem("B=1,H=8,Hkv=2,Sq=8,Skv=512,D=64")))


def test_the_32k_decode_step_solves_with_flash_decoding_near_the_chips_dram_rate() -> None:
    """B=32, 8:1 grouped heads, a 32k bfp8_b cache on wormhole_n150 (docs/attention.md): flash-decoding wins
    over the prefill split, and its KV-cache bandwidth is the chip's DRAM rate, not more."""
    hw = load_hardware("wormhole_n150")
    problem = _problem(DECODE_32K, formats={"k": DataFormat.bfloat8_b, "v": DataFormat.bfloat8_b})
    results = Session(hw, problem).solve({}, SolveOptions())
    best = min((r for r in results if r.solution), key=lambda r: r.solution.latency_cycles)
    assert best.candidate_name.endswith("|kv_split")
    others = [r.solution.latency_cycles for r in results if r.solution and r is not best]
    assert min(others) > 1.5 * best.solution.latency_cycles
    kv_bytes = 2 * 32 * 32768 * 128 * hw.tile_bytes[DataFormat.bfloat8_b] // 1024
    seconds = hw.cycles_to_us(best.solution.latency_cycles) * 1e-6
    bandwidth = kv_bytes / seconds
    assert (
        0.5 * hw.dram.chip_read_bytes_per_cycle * hw.clock_ghz * 1e9
        < bandwidth
        <= hw.dram.chip_read_bytes_per_cycle * hw.clock_ghz * 1e9
    )


def test_the_gather_and_combine_follow_the_target() -> None:
    """TT-Lang's first core combines the other cores' partials one by one; ttnn's sdpa_decode in a binary
    tree: with 8 cores per group, 7 partials against 3 rounds."""
    hw = load_hardware("wormhole_n150")
    pins = {"kv_cores": 8, "k_chunk_size": 64}
    terms = {}
    for target in (KernelTarget.ttlang, KernelTarget.ttnn):
        session = Session(hw, _problem("B=1,H=8,Hkv=1,Sq=1,Skv=4096,D=64", target))
        (r,) = session.solve(pins, SolveOptions(), candidates=["Hkv@xy|q=dram,k=dram,v=dram|kv_split"])
        assert r.solution is not None, r.conflict
        terms[target] = dict(r.solution.breakdown)
    assert terms[KernelTarget.ttlang]["combine"] == 7 * terms[KernelTarget.ttnn]["combine"] // 3


def test_flash_decoding_traffic_counts_each_groups_partials_once_per_other_core() -> None:
    hw = load_hardware("wormhole_n150")
    problem = _problem("B=2,H=4,Hkv=1,Sq=1,Skv=1000,D=64", KernelTarget.ttlang)
    session = Session(hw, problem)
    (schedule,) = [s for s in session.schedules if s.candidate.has_tag("kv_split")]
    values = {
        "grid_x": 4,
        "grid_y": 1,
        "per_core_B": 1,
        "kv_cores": 2,
        "q_chunk_size": 32,
        "k_chunk_size": 128,
        "qk_subblock_h": 1,
        "qk_subblock_w": 4,
        "out_subblock_h": 1,
        "out_subblock_w": 2,
        "q_buffer_depth": 1,
        "k_buffer_depth": 2,
        "v_buffer_depth": 2,
    }
    verdict = referee(schedule, values)
    assert verdict.legal, verdict.violations
    traffic = tile_traffic(hw, problem, schedule_transfers(hw, schedule, values))
    # 8 key chunks of 4 tiles x 2 tiles of D, split over 2 cores, for each of 2 groups; the padded last
    # chunk's 1 x 4 tile mask read by each group's first core; partials (2 + 2 tiles) into cores 0 and 2
    assert traffic.dram_read_tiles == {"q": 2 * 2 * 2, "k": 2 * 8 * 4 * 2, "v": 2 * 8 * 4 * 2, "key_mask": 2 * 4}
    assert traffic.dram_written_tiles == {"o": 2 * 2}
    assert traffic.pipe_received_tiles == {(0, 0): 4, (2, 0): 4}


@pytest.mark.parametrize(
    "batch,kv_heads,cores,most,n_k,want",
    [
        (32, 1, 64, 16, 64, (2, 1)),  # two cores per batch item
        (1, 8, 64, 16, 64, (8, 1)),  # 64 cores over 8 heads
        (1, 2, 64, 16, 4, (4, 1)),  # only 4 key chunks: the other cores idle
        (32, 8, 64, 16, 64, (1, 4)),  # 256 groups on 64 cores: 4 heads per core
        (4, 1, 64, 2, 64, (2, 1)),  # capped by max_cores_per_head_batch
    ],
)
def test_ttnn_decode_split_follows_the_program_factory(
    batch: int, kv_heads: int, cores: int, most: int, n_k: int, want: tuple[int, int]
) -> None:
    assert ttnn_decode_split(batch, kv_heads, cores, most, n_k) == want
