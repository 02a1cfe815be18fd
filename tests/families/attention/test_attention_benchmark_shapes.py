"""Loom's FlashAttention benchmark shapes solve to proven optimality (a sample; benchmarks/solve_speed.py
--kernel flash_attention runs all 44)."""

from __future__ import annotations

import pytest

from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.validate import referee

CASES = [
    ("wormhole_n150", "B=4,H=1,Sq=4096,Skv=4096,D=128", False),
    ("wormhole_n150", "B=16,H=1,Sq=1024,Skv=1024,D=64", True),
    ("blackhole_p150a", "B=1,H=1,Sq=15360,Skv=15360,D=64", False),
    ("blackhole_p150a", "B=2,H=1,Sq=7680,Skv=7680,D=128", True),
    ("wormhole_n150", "B=1,H=32,Hkv=8,Sq=2048,Skv=2048,D=128", False),
]


@pytest.mark.slow
@pytest.mark.parametrize("hw_name, shape, causal", CASES)
def test_every_candidate_proven(hw_name: str, shape: str, causal: bool) -> None:
    hw = load_hardware(hw_name)
    session = Session(hw, make_problem(load_program("flash_attention"), shape, options={"causal"} if causal else set()))
    results = session.solve({}, SolveOptions(time_limit_seconds=60))
    assert results and results[0].status == "optimal"
    for r in results:
        assert r.status in ("optimal", "infeasible"), (r.candidate_name, r.status)
        if r.status == "infeasible":  # proven, and said why
            assert r.conflict is not None and r.conflict.message
            continue
        schedule = session.schedule(r.candidate_name)
        assert r.solution is not None
        verdict = referee(schedule, r.solution.values())
        assert verdict.legal, verdict.violations
        assert verdict.solution is not None and verdict.solution.latency_cycles == r.solution.latency_cycles
        assert r.best_bound_cycles == r.solution.latency_cycles
        assert r.solution.latency_cycles >= schedule.ideal_cycles
    latencies = [r.solution.latency_cycles for r in results if r.solution]
    assert latencies == sorted(latencies)
    if causal:  # load balancing wins when the query dim is spread over several cores
        assert results[0].candidate_name.endswith("|balanced")
