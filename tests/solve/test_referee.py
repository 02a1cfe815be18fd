"""The referee judges every schedule the solver returns (``validate.judge`` in ``Session.solve_one``).

Two kinds of test. The check itself: a schedule with a latency other than the referee's, or an illegal
one, raises :class:`RefereeError` naming both latencies, or the constraint. The paths: a session whose
engine and referee disagree by construction. A session compiles each candidate's CP-SAT model and its
starting-schedule finder once, on first use, and keeps them by candidate name; the referee reads the
session's schedules. After one solve, the tests give the session the same schedules with one more cycle
in their first latency term (and so in their latency): CP-SAT and the finder still cost every schedule
by the models they were compiled from, the referee by the new expressions, so every schedule the solver
returns, on any path, is one cycle off for the referee, and each path must raise.
"""

from __future__ import annotations

import dataclasses

import pytest
from loom_helpers import assert_solution_sound

from loom_explorer.errors import LoomError
from loom_explorer.model.expr import ExprLike
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.incumbent import Incumbent
from loom_explorer.solve.interrupt import StopToken
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.validate import RefereeError, judge, referee

SHAPE = "M=160,K=128,N=96"  # ragged on the 4x4 chip: 20 candidates, each solved in milliseconds


def more_cycles(schedule: SymbolicSchedule, extra: ExprLike = 1) -> SymbolicSchedule:
    """The same schedule costed ``extra`` cycles more: in its first latency term and so in its latency."""
    first, *rest = schedule.terms
    return dataclasses.replace(
        schedule, latency=schedule.latency + extra, terms=(dataclasses.replace(first, expr=first.expr + extra), *rest)
    )


def solved_session(hw, stop: StopToken | None = None) -> tuple[Session, dict[str, int]]:
    """A session after one full solve, and the latency of each candidate's optimum."""
    session = Session(hw, make_problem(load_program("gemm"), SHAPE), **({"stop": stop} if stop else {}))  # type: ignore[arg-type]
    results = session.solve({}, SolveOptions(explain=False))
    for r in results:
        assert r.solution is not None and r.status == "optimal", r.candidate_name
        assert_solution_sound(session.schedule(r.candidate_name), r.solution)
    return session, {r.candidate_name: r.solution.latency_cycles for r in results if r.solution}


def disagree(session: Session) -> None:
    """From now on the referee costs every schedule one cycle more than the session's engine does."""
    session.schedules = tuple(more_cycles(s) for s in session.schedules)


# ------------------------------------------------------------------ the check


def test_a_latency_other_than_the_referees_raises_with_both_values(tiny_hw) -> None:
    session, optima = solved_session(tiny_hw)
    name, latency = next(iter(optima.items()))
    schedule = session.schedule(name)
    values = dict(session.solve({}, SolveOptions(), candidates=[name])[0].solution.params)
    assert judge(schedule, values, latency, "CP-SAT's optimum") == referee(schedule, values).solution
    with pytest.raises(RefereeError) as caught:
        judge(schedule, values, latency + 7, "CP-SAT's optimum")
    err = caught.value
    assert (err.solver_latency_cycles, err.referee_latency_cycles) == (latency + 7, latency)
    assert err.candidate == name and err.violations == () and err.values == values
    message = str(err)
    assert f"{latency + 7:,} cycles by the solver" in message and f"computes {latency:,} cycles" in message
    assert name in message and "CP-SAT's optimum" in message
    assert not isinstance(err, LoomError)  # a bug of the tool: the command line's internal-error path


def test_an_illegal_schedule_raises_naming_the_failed_constraint(tiny_hw) -> None:
    session, optima = solved_session(tiny_hw)
    name = next(iter(optima))
    schedule = session.schedule(name)
    best = dict(session.solve({}, SolveOptions(), candidates=[name])[0].solution.params)
    illegal = None  # one parameter moved to another value of its domain that breaks a named constraint
    for p in schedule.params:
        for v in (p.values.min, p.values.max):
            point = {**best, p.name: v}
            verdict = referee(schedule, point)
            if not verdict.legal:
                illegal = point, verdict.violations
                break
        if illegal:
            break
    assert illegal is not None, "every one-parameter move of the optimum is legal: pick another problem"
    values, violations = illegal
    with pytest.raises(RefereeError) as caught:
        judge(schedule, values, optima[name], "the starting schedule")
    err = caught.value
    assert err.violations == violations and err.referee_latency_cycles is None
    assert err.solver_latency_cycles == optima[name]
    constraint = violations[0].split(":")[0]
    assert constraint in {c.name for c in schedule.constraints} | {p.name for p in schedule.params}
    assert constraint in str(err) and f"{optima[name]:,} cycles by the solver" in str(err)
    outside = {**best, schedule.params[0].name: schedule.params[0].values.max + 1}
    with pytest.raises(RefereeError, match="outside its domain"):
        judge(schedule, outside, optima[name], "CP-SAT's optimum")


# ------------------------------------------------------------------ every path


def test_an_optimal_solve_is_refereed(tiny_hw) -> None:
    session, optima = solved_session(tiny_hw)
    disagree(session)
    for name, latency in optima.items():
        with pytest.raises(RefereeError) as caught:
            session.solve({}, SolveOptions(explain=False), candidates=[name])
        err = caught.value
        assert (err.solver_latency_cycles, err.referee_latency_cycles) == (latency, latency + 1)
        assert err.source == "CP-SAT's optimum"


def test_a_warm_start_after_a_pin_is_refereed(tiny_hw) -> None:
    session, optima = solved_session(tiny_hw)
    name = min(optima, key=optima.__getitem__)
    best = dict(session.solve({}, SolveOptions(), candidates=[name])[0].solution.params)
    pin_name = next(p.name for p in session.schedule(name).params if not p.fixed)
    pins = {pin_name: best[pin_name]}
    assert session.incumbent(session.schedule(name), pins) is not None  # the search starts from it
    disagree(session)
    with pytest.raises(RefereeError) as caught:
        session.solve(pins, SolveOptions(explain=False), candidates=[name])
    assert caught.value.referee_latency_cycles == caught.value.solver_latency_cycles + 1  # type: ignore[operator]
    assert caught.value.values[pin_name] == best[pin_name]


def test_a_timed_out_solve_is_refereed_whichever_schedule_it_returns(tiny_hw) -> None:
    """With a known schedule, a solve that runs out of time returns CP-SAT's best schedule found or, when the
    search found none, the starting schedule: both are refereed."""
    session, optima = solved_session(tiny_hw)
    honest = session.solve({}, SolveOptions(time_limit_seconds=1e-9, explain=False))
    assert {r.candidate_name for r in honest if r.solution is not None} == set(optima)
    for r in honest:
        assert_solution_sound(session.schedule(r.candidate_name), r.solution)  # type: ignore[arg-type]
    disagree(session)
    sources = set()
    for name in optima:
        with pytest.raises(RefereeError) as caught:
            session.solve({}, SolveOptions(time_limit_seconds=1e-9, explain=False), candidates=[name])
        assert caught.value.referee_latency_cycles == caught.value.solver_latency_cycles + 1  # type: ignore[operator]
        sources.add(caught.value.source)
    assert sources <= {
        "CP-SAT's optimum",
        "CP-SAT's best schedule found",
        "the starting schedule (the search found nothing better in time)",
    }


def test_a_starting_schedule_returned_without_a_search_is_refereed(tiny_hw) -> None:
    """After a stop request no search starts: a candidate given a starting schedule (as the fastest-only
    search gives its deferred candidates) returns it as it is, ``interrupted``."""
    token = StopToken()
    session, optima = solved_session(tiny_hw, stop=token)
    name = min(optima, key=optima.__getitem__)
    best = session.solve({}, SolveOptions(explain=False), candidates=[name])[0].solution
    assert best is not None
    start = Incumbent(best.values(), best.latency_cycles)
    token.stop()
    kept = session.solve_one(session.schedule(name), {}, SolveOptions(explain=False), start=start)
    assert kept.status == "interrupted" and kept.solution == best
    disagree(session)
    with pytest.raises(RefereeError) as caught:
        session.solve_one(session.schedule(name), {}, SolveOptions(explain=False), start=start)
    assert caught.value.source == "the starting schedule (interrupted before its search)"
    assert (caught.value.solver_latency_cycles, caught.value.referee_latency_cycles) == (optima[name], optima[name] + 1)


def test_alternatives_are_refereed(tiny_hw) -> None:
    """Alternatives come from a model ``top_k`` compiles afresh from the schedule the referee reads, so no
    disagreement can be set up from outside: each alternative is sound, and a session whose engine
    disagrees still fails on its optimum first."""
    session, optima = solved_session(tiny_hw)
    name = min(optima, key=optima.__getitem__)
    options = SolveOptions(top_k=3, explain=False)
    result = session.solve({}, options, candidates=[name])[0]
    assert result.solution is not None and len(result.alternatives) == 2
    for s in (result.solution, *result.alternatives):
        assert_solution_sound(session.schedule(name), s)
    disagree(session)
    with pytest.raises(RefereeError):
        session.solve({}, options, candidates=[name])
