"""TTNN L1 shardings: which candidates a sharded tensor fits, and the size of its shard."""

from __future__ import annotations

from loom_explorer.brute import brute_force
from loom_explorer.cli import main
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import Comm, enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.expr import evaluate
from loom_explorer.problem import Placement, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session
from loom_explorer.validate import referee

GEMM = load_program("gemm")


def _candidates(**placements: Placement):
    return enumerate_candidates(make_problem(GEMM, "M=512,K=256,N=384", placements=placements))


def test_height_sharded_in0_needs_a_1d_layout_over_its_rows() -> None:
    cands = _candidates(in0=Placement.l1_height)
    assert cands
    assert all(c.axes == (("xy", "M"),) and c.comm("in0") is Comm.local for c in cands)


def test_width_sharded_in1_needs_a_1d_layout_over_its_columns() -> None:
    cands = _candidates(in1=Placement.l1_width)
    assert cands
    assert all(c.axes == (("xy", "N"),) and c.comm("in1") is Comm.local for c in cands)


def test_block_sharded_in0_is_local_with_k_on_columns_or_multicast_along_rows() -> None:
    cands = _candidates(in0=Placement.l1_block)
    assert cands
    for c in cands:
        assert c.dim_on("y") == "M"
        if c.dim_on("x") == "K":
            assert c.comm("in0") is Comm.local
        else:
            assert c.dim_on("x") == "N" and c.comm("in0") is Comm.mcast_x
    assert {c.dim_on("x") for c in cands} == {"K", "N"}


def test_block_sharded_output_needs_rows_on_y_and_columns_on_x() -> None:
    cands = _candidates(out=Placement.l1_block)
    assert cands and all(c.axes == (("y", "M"), ("x", "N")) for c in cands)


def test_block_sharded_in0_shard_holds_its_share_of_k() -> None:
    hw = load_hardware("wormhole_n150")
    problem = make_problem(GEMM, "M=512,K=256,N=384", placements={"in0": Placement.l1_block})
    cand = next(c for c in enumerate_candidates(problem) if c.dim_on("x") == "N" and c.comm("in1") is Comm.mcast_y)
    schedule = build_schedule(hw, problem, cand)
    shard = next(b for b in schedule.l1_buffers if b.name == "in0_shard")
    values = {"grid_x": 6, "grid_y": 8, "per_core_M": 2, "per_core_N": 2, "per_core_K": 8}
    # per_core_M * ceil(K_tiles / grid_x) tiles of 2048 B: 2 * ceil(8 / 6) = 4 tiles
    assert evaluate(shard.bytes_expr, values) == 4 * 2048


def test_sharded_schedules_agree_with_brute_force() -> None:
    hw = load_hardware("wormhole_n150")
    problem = make_problem(GEMM, "M=128,K=96,N=160", placements={"in0": Placement.l1_block, "out": Placement.l1_block})
    session = Session(hw, problem)
    results = session.solve()
    assert results and all(r.status == "optimal" for r in results)
    for r in results:
        schedule = session.schedule(r.candidate_name)
        assert r.solution is not None and referee(schedule, r.solution.values()).legal
        brute = brute_force(schedule, time_limit_seconds=60)
        assert brute.complete and brute.best_latency_cycles == r.solution.latency_cycles
        assert dict(r.solution.breakdown)["write_back"] == 0  # the output stays in L1


def test_no_candidate_for_a_sharding_the_model_cannot_map(capsys) -> None:
    code = main(["solve", "gemm", "--hw", "wormhole_n150", "--shape", "M=256,K=256,N=256", "--memory", "in0=l1_width"])
    assert code == 3
    assert "no mapping candidate fits" in capsys.readouterr().err
