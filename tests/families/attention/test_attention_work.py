"""The tiles an attention schedule moves are the sum of every core's own work (``families/attention/work.py``,
``traffic/tiles.py: schedule_tile_traffic``), while the latency keeps the slowest core's: solved with the real
CP-SAT, checked against closed forms counted independently of the per-core sums."""

from __future__ import annotations

from loom_explorer.hardware import load_hardware
from loom_explorer.model.expr import evaluate
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.traffic.tiles import schedule_tile_traffic, tile_traffic
from loom_explorer.traffic.transfers import schedule_transfers


def _solved(hw_name: str, shape: str, pins: dict[str, int], want: str, causal: bool = False):
    hw = load_hardware(hw_name)
    problem = make_problem(
        load_program("flash_attention"), shape, target=KernelTarget.ttlang, options={"causal"} if causal else set()
    )
    session = Session(hw, problem)
    schedule = next(
        s
        for s in session.schedules
        if s.candidate.name.endswith(want)
        and (s.candidate.flattened or s.candidate.has_tag("kv_split"))
        and all("mcast" not in c.value for _, c in s.candidate.comms)
    )
    (result,) = session.solve(pins, SolveOptions(), candidates=[schedule.candidate.name])
    assert result.solution is not None, result.conflict or result.status
    return hw, schedule, result.solution.values()


def test_causal_pairs_of_unequal_work_are_counted_at_each_cores_own_steps() -> None:
    """Sq = Skv = 224 (7 tiles), chunks of one tile: 4 pairs per head (1+7, 2+6, 3+5 and the middle 4 alone),
    4 heads = 16 tasks one per core. Every head streams 1+2+...+7 = 28 key chunks of 1 x 2 tiles; the
    slowest core's 8 per core would count 16 x 8."""
    hw, schedule, v = _solved(
        "wormhole_n300",
        "B=1,H=4,Hkv=2,Sq=224,Skv=224,D=64",
        {"q_chunk_size": 32, "k_chunk_size": 32, "per_core_H*Sq": 1},
        "|balanced",
        causal=True,
    )
    exact = schedule_tile_traffic(hw, schedule, v)
    slowest = tile_traffic(hw, schedule.problem, schedule_transfers(hw, schedule, v))
    assert exact.dram_read_tiles["k"] == exact.dram_read_tiles["v"] == 4 * 28 * 2
    assert slowest.dram_read_tiles["k"] == 16 * 8 * 2
    assert exact.dram_read_tiles["q"] == exact.dram_written_tiles["o"] == 4 * 7 * 2  # every query chunk once
    assert evaluate(schedule.traffic[1].count, v) == 8  # the latency's steps: still the slowest core's


def test_plain_attention_counts_every_core_alike() -> None:
    """Without the mask every task streams all key chunks: the per-core sums equal the slowest core's."""
    hw, schedule, v = _solved(
        "wormhole_n150",
        "B=1,H=4,Sq=256,Skv=256,D=64",
        {"q_chunk_size": 64, "k_chunk_size": 64, "per_core_H*Sq": 2},
        "v=dram",
    )
    exact = schedule_tile_traffic(hw, schedule, v)
    assert exact == tile_traffic(hw, schedule.problem, schedule_transfers(hw, schedule, v))
    assert exact.dram_read_tiles["k"] == 16 * 4 * 2 * 2  # 16 chunks x 4 key chunks x 2 x 2 tiles


def test_uneven_runs_of_key_chunks_are_counted_at_each_cores_run() -> None:
    """5 key chunks of 4 tiles on 3 cores per group: runs 2, 2 and the first core's 1; each group's cache is
    read once, 5 x 4 x 2 tiles of k (the slowest core's run would count 3 x 2 chunks)."""
    hw, schedule, v = _solved(
        "wormhole_n150", "B=1,H=4,Hkv=1,Sq=1,Skv=640,D=64", {"kv_cores": 3, "k_chunk_size": 128}, "|kv_split"
    )
    exact = schedule_tile_traffic(hw, schedule, v)
    assert exact.dram_read_tiles["k"] == exact.dram_read_tiles["v"] == 5 * 4 * 2
    assert tile_traffic(hw, schedule.problem, schedule_transfers(hw, schedule, v)).dram_read_tiles["k"] == 6 * 4 * 2
    assert exact.pipe_received_tiles == {(0, 0): 2 * 1 * (2 + 2)}  # two partials of 1 x (D_t + 2) tiles
