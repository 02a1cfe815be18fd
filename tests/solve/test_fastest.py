"""The fastest candidates only (SolveOptions.fastest): a branch and bound over candidates that must find
exactly what solving every candidate finds, and prove every candidate it leaves out slower."""

from __future__ import annotations

import pytest
from loom_helpers import assert_result_sound

from loom_explorer import cli
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions


def _case(kernel: str, shape: str, options: set[str], *marks: pytest.MarkDecorator):
    return pytest.param(kernel, shape, options, id=shape, marks=marks)


CASES = [  # (kernel, shape, options): ragged, K-heavy (split-K wins), square, and attention on the 4x4 chip
    _case("gemm", "M=160,K=128,N=96", set()),
    # with the slow tests: the quick tier compares the ragged and the attention shapes (2-3 s each), and solves
    # the square shape's fastest under pins below
    _case("gemm", "M=64,K=2048,N=64", set(), pytest.mark.slow),
    _case("gemm", "M=512,K=256,N=512", set(), pytest.mark.slow),
    _case("flash_attention", "B=1,H=2,Sq=256,Skv=256,D=64", {"causal"}),
]


def _latency(r) -> int:
    assert r.solution is not None
    return r.solution.latency_cycles


def check_against_full(full: list, fast: list, n: int) -> None:
    """``fast`` (fastest=n) against ``full`` (every candidate solved) of the same session problem."""
    assert sorted(r.candidate_name for r in fast) == sorted(r.candidate_name for r in full)
    optimum = {r.candidate_name: r.solution.latency_cycles for r in full if r.solution is not None}
    top = sorted(optimum.values())[:n]
    solved = [r for r in fast if r.solution is not None]
    # the n fastest latencies are found, each proven optimal for its candidate
    assert sorted(_latency(r) for r in solved)[:n] == top
    for r in solved:
        assert r.status == "optimal" and _latency(r) == optimum[r.candidate_name]
    # every other candidate is proven no faster than the n-th fastest, and its real optimum agrees
    dominated = [r for r in fast if r.status == "dominated"]
    for r in dominated:
        assert r.solution is None and r.best_bound_cycles is not None
        assert r.best_bound_cycles >= top[-1]
        if r.candidate_name in optimum:
            assert optimum[r.candidate_name] >= r.best_bound_cycles
    assert len(solved) + len(dominated) + sum(r.status in ("infeasible", "conflict") for r in fast) == len(fast)
    # ranked: solved best first, then the dominated
    assert fast[: len(solved)] == sorted(solved, key=_latency)


@pytest.fixture(scope="module")
def full_solve(tiny_hw):
    """``full_solve(kernel, shape, options)``: every candidate of that problem solved on the 4x4 chip, once for
    the module (both ``n`` of a case compare against the same full solve; the tests only read it)."""
    solved: dict[tuple[str, str, frozenset[str]], list] = {}

    def run(kernel: str, shape: str, options: set[str]) -> list:
        key = (kernel, shape, frozenset(options))
        if key not in solved:
            problem = make_problem(load_program(kernel), shape, options=options)
            solved[key] = Session(tiny_hw, problem).solve({}, SolveOptions())
        return solved[key]

    return run


@pytest.mark.parametrize("kernel, shape, options", CASES)
@pytest.mark.parametrize("n", [1, 2])
def test_fastest_equals_the_full_solve(tiny_hw, full_solve, kernel, shape, options, n) -> None:
    problem = make_problem(load_program(kernel), shape, options=options)
    full = full_solve(kernel, shape, options)
    session = Session(tiny_hw, problem)
    fast = session.solve({}, SolveOptions(fastest=n))
    check_against_full(full, fast, n)
    assert sum(r.status == "dominated" for r in fast) > 0  # the bound does prune on these shapes
    for r in fast:
        assert_result_sound(session.schedule(r.candidate_name), r)


def test_fastest_under_pins_and_without_starting_points(tiny_hw) -> None:
    problem = make_problem(load_program("gemm"), "M=512,K=256,N=512")
    pins = {"in0_block_w": 2, "out_subblock_w": 1}
    full = Session(tiny_hw, problem).solve(pins, SolveOptions())
    for start in (True, False):
        session = Session(tiny_hw, problem, start_from_known=start)
        session.solve({}, SolveOptions(fastest=1))  # earlier solutions must not leak past the new pins
        fast = session.solve(pins, SolveOptions(fastest=1, parallel_models=2))
        check_against_full(full, fast, 1)
        assert all(dict(r.pins) == pins for r in fast)


@pytest.mark.parametrize("kernel, shape, options", [CASES[0], CASES[-1]])
def test_candidates_tried_first_change_the_order_not_the_answer(tiny_hw, full_solve, kernel, shape, options) -> None:
    """``first`` (the winner of a similar problem, as the mesh planner passes it) is solved first: the best,
    named first, is the only candidate solved to its optimum; every other is dominated, as without it."""
    problem = make_problem(load_program(kernel), shape, options=options)
    full = full_solve(kernel, shape, options)
    best = min((r for r in full if r.solution is not None), key=_latency).candidate_name
    for first in ((), (best,), tuple(r.candidate_name for r in reversed(full))):
        fast = Session(tiny_hw, problem).solve({}, SolveOptions(fastest=1), first=first)
        check_against_full(full, fast, 1)
        if first == (best,):
            assert [r.candidate_name for r in fast if r.status == "optimal"] == [best]


def test_fastest_must_be_positive(tiny_hw) -> None:
    session = Session(tiny_hw, make_problem(load_program("gemm"), "M=64,K=64,N=64"))
    with pytest.raises(ValueError, match="fastest"):
        session.solve({}, SolveOptions(fastest=0))


def test_cli_fastest_table_shows_the_bound(tiny_hw_path, capsys) -> None:
    code = cli.main(["solve", "gemm", "--hw", str(tiny_hw_path), "--shape", "M=512,K=256,N=512", "--fastest", "1"])
    assert code == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "|in0=" in line]
    assert sum("optimal" in line for line in rows) >= 1
    dominated = [line for line in rows if "dominated" in line]
    assert dominated and all(">=" in line for line in dominated)
    assert rows.index(dominated[0]) > 0 and "best:" in out


@pytest.mark.parametrize("seconds", [0.002, 0.01, 0.03])
def test_fastest_under_a_tight_time_limit_reports_every_candidate(tiny_hw, seconds) -> None:
    """Screens and solves that run out of time still leave one result per candidate, never a crash."""
    problem = make_problem(load_program("gemm"), "M=512,K=256,N=512")
    session = Session(tiny_hw, problem, start_from_known=False)
    fast = session.solve({}, SolveOptions(fastest=1, time_limit_seconds=seconds))
    assert sorted(r.candidate_name for r in fast) == sorted(s.candidate.name for s in session.schedules)
    assert {r.status for r in fast} <= {"optimal", "feasible", "dominated", "timeout"}
    for r in fast:
        assert_result_sound(session.schedule(r.candidate_name), r)
