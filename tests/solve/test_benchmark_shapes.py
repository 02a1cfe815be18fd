"""Loom's GEMM benchmark shapes solve to proven optimality (a sample; benchmarks/solve_speed.py runs all 38)."""

from __future__ import annotations

import pytest

from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.validate import referee

SHAPES = ["M=2048,K=2048,N=2048", "M=16384,K=256,N=256", "M=640,K=1600,N=3200"]


@pytest.mark.slow
@pytest.mark.parametrize("hw_name", ["wormhole_n150", "blackhole_p150a"])
@pytest.mark.parametrize("shape", SHAPES)
def test_every_candidate_proven_optimal(hw_name: str, shape: str) -> None:
    hw = load_hardware(hw_name)
    session = Session(hw, make_problem(load_program("gemm"), shape))
    results = session.solve({}, SolveOptions(time_limit_seconds=60))
    assert len(results) == 20
    assert [r.status for r in results] == ["optimal"] * 20
    for r in results:
        schedule = session.schedule(r.candidate_name)
        assert r.solution is not None
        verdict = referee(schedule, r.solution.values())
        assert verdict.legal, verdict.violations
        assert verdict.solution is not None and verdict.solution.latency_cycles == r.solution.latency_cycles
        assert r.solution.latency_cycles >= schedule.ideal_cycles
        assert r.best_bound_cycles == r.solution.latency_cycles
    latencies = [r.solution.latency_cycles for r in results if r.solution]
    assert latencies == sorted(latencies)
