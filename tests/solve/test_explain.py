"""Explanations agree with exhaustive search: a reported conflict is really infeasible, and a reported
schedule under random pins is the brute-force optimum under the same pins.

Seeded random pin pairs on gemm M=320,K=96,N=160 (ragged on every axis) over random candidates of a
4x4 chip; roughly half of them conflict.
"""

from __future__ import annotations

import random

from loom_helpers import assert_result_sound

from loom_explorer.brute import brute_force
from loom_explorer.solve.explain import explain_infeasibility


def test_random_pins_against_brute_force(tiny_hw, solve_cached):
    session, _ = solve_cached(tiny_hw, "gemm", "M=320,K=96,N=160")
    rng = random.Random(20240601)
    conflicts = solved = 0
    for _ in range(40):
        schedule = rng.choice(session.schedules)
        free = [p for p in schedule.params if not p.fixed]
        pins = {p.name: rng.choice(p.values) for p in rng.sample(free, 2)}
        result = session.solve(pins, candidates=[schedule.candidate.name])[0]
        assert_result_sound(schedule, result)
        brute = brute_force(schedule, pins=pins)
        assert brute.complete
        got = result.solution.latency_cycles if result.solution else None
        assert got == brute.best_latency_cycles, (schedule.candidate.name, pins)
        if result.solution is None:
            conflicts += 1
            conflict = result.conflict
            assert conflict is not None and result.status == "conflict", (schedule.candidate.name, pins)
            assert set(conflict.pins) <= set(pins.items()) and conflict.families
            assert set(conflict.families) <= set(schedule.families)
            # the pins named by the conflict are enough: no schedule exists with just them
            assert brute_force(schedule, pins=dict(conflict.pins)).best_latency_cycles is None
        else:
            solved += 1
    assert conflicts >= 5 and solved >= 5


def test_explain_returns_none_for_a_feasible_schedule(tiny_hw, solve_cached):
    session, _ = solve_cached(tiny_hw, "gemm", "M=320,K=96,N=160")
    assert explain_infeasibility(session.schedule("M@y,N@x|in0=dram,in1=dram"), {"grid_x": 2}) is None
