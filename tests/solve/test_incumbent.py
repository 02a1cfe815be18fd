"""Starting a solve from a known legal schedule (solve/incumbent.py): never changes the optimum."""

from __future__ import annotations

from loom_explorer.brute import brute_force
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.incumbent import IncumbentFinder
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.validate import referee

SHAPE = "M=160,K=128,N=96"  # ragged on the 4x4 chip, small enough for brute force


def session(hw) -> Session:
    return Session(hw, make_problem(load_program("gemm"), SHAPE))


def test_finder_keeps_the_fastest_legal_point_and_applies_pins(tiny_hw) -> None:
    s = session(tiny_hw)
    results = {r.candidate_name: r for r in s.solve({}, SolveOptions())}
    schedule = s.schedules[0]
    finder = IncumbentFinder(schedule)
    best = dict(results[schedule.candidate.name].solution.params)
    # its own optimum is the best source; an illegal or foreign point is skipped
    foreign = {"grid_x": 99}
    illegal = {**best, "out_block_h": best["per_core_M"] + 1}  # does not divide per_core_M
    assert not referee(schedule, illegal).legal
    assert finder.best([foreign, illegal], {}) is None
    found = finder.best([foreign, illegal, best], {})
    assert found is not None and found.values == best
    assert found.latency_cycles == results[schedule.candidate.name].solution.latency_cycles
    # pins override the source; a pin that makes every source illegal leaves nothing
    other = next(v for v in schedule.param("out_subblock_w").values if v != best["out_subblock_w"])
    pinned = finder.best([best], {"out_subblock_w": other})
    verdict = referee(schedule, {**best, "out_subblock_w": other})
    if verdict.legal:
        assert pinned is not None and pinned.latency_cycles == verdict.solution.latency_cycles
    else:
        assert pinned is None
    assert finder.best([], {}) is None


def test_pinned_re_solves_equal_a_fresh_solve_and_brute_force(tiny_hw) -> None:
    warm = session(tiny_hw)
    cold = Session(tiny_hw, make_problem(load_program("gemm"), SHAPE), start_from_known=False)
    first = warm.solve({}, SolveOptions())
    best = first[0]
    schedule = warm.schedule(best.candidate_name)
    values = dict(best.solution.params)
    for name in ("in0_block_w", "out_subblock_h", "grid_x"):
        for value in schedule.param(name).values:
            if value == values[name]:
                continue
            pins = {name: value}
            known = warm.incumbent(schedule, pins)
            got = warm.solve(pins, SolveOptions(), candidates=[best.candidate_name])[0]
            want = cold.solve(pins, SolveOptions(), candidates=[best.candidate_name])[0]
            assert got.status == want.status
            if want.solution is None:
                assert known is None  # a legal starting point would contradict "no schedule"
                continue
            assert got.status == "optimal"
            assert got.solution.latency_cycles == want.solution.latency_cycles
            if known is not None:
                assert got.solution.latency_cycles <= known.latency_cycles
    # and the unpinned optimum of every candidate, solved after all that, is brute force's
    for r in warm.solve({}, SolveOptions()):
        b = brute_force(warm.schedule(r.candidate_name), time_limit_seconds=60)
        assert b.complete and (r.solution.latency_cycles if r.solution else None) == b.best_latency_cycles


def test_a_timed_out_solve_returns_the_known_schedule(tiny_hw) -> None:
    s = session(tiny_hw)
    best = s.solve({}, SolveOptions())[0]
    schedule = s.schedule(best.candidate_name)
    known = s.incumbent(schedule, {})
    assert known is not None and known.latency_cycles == best.solution.latency_cycles
    again = s.solve({}, SolveOptions(time_limit_seconds=1e-9), candidates=[best.candidate_name])[0]
    assert again.solution is not None and again.status in ("optimal", "feasible")
    assert again.solution.latency_cycles == best.solution.latency_cycles
