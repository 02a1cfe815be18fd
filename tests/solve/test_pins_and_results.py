"""Pins (checked up front, then per candidate), ranking, alternatives and re-solves of a Session."""

from __future__ import annotations

import pytest
from loom_helpers import assert_result_sound

from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.pins import PinError, check_pins, parse_pins
from loom_explorer.solve.solver import Session, SolveOptions, rank

SHAPE = "M=128,K=256,N=128"  # K = 8 tiles


@pytest.fixture(scope="module")
def session(tiny_hw):
    return Session(tiny_hw, make_problem(load_program("gemm"), SHAPE))


# ------------------------------------------------------------------------------------------ pin errors


def test_unknown_pin_raises_naming_it(session):
    with pytest.raises(PinError, match="warp_count"):
        session.solve({"warp_count": 2})


@pytest.mark.parametrize(
    "pins, culprit",
    [
        ({"grid_x": 9}, "grid_x"),  # 4 columns
        ({"in0_buffer_depth": 4}, "in0_buffer_depth"),  # 1..3
        ({"out_subblock_h": 0}, "out_subblock_h"),
        ({"per_core_K": 9}, "per_core_K"),  # K has 8 tiles
    ],
)
def test_pin_outside_every_domain_raises_naming_it(session, pins, culprit):
    with pytest.raises(PinError) as info:
        session.solve(pins)
    assert culprit in str(info.value)
    assert str(next(iter(pins.values()))) in str(info.value)
    with pytest.raises(PinError, match=culprit):
        check_pins(pins, session.schedules)


@pytest.mark.parametrize("value", [True, False, 2.0, "2", None])
def test_a_pin_that_is_not_a_whole_number_is_refused_naming_it(session, value):
    """From the Python API a pin may be any object: ``True`` is not the block width 1, nor 2.0 the count 2."""
    with pytest.raises(
        PinError,
        match=rf"pin in0_block_w={value!r}: the value must be a whole number, not a "
        rf"{type(value).__name__}$",
    ):
        session.solve({"in0_block_w": value})


def test_parse_pins():
    assert parse_pins(["grid_x=4", " out_block_h=2"]) == {"grid_x": 4, "out_block_h": 2}
    for bad, culprit in (("grid_x", "grid_x"), ("=3", "=3"), ("grid_x=four", "grid_x"), ("grid_x=1.5", "grid_x")):
        with pytest.raises(PinError, match=culprit):
            parse_pins([bad])
    with pytest.raises(PinError, match="twice"):
        parse_pins(["grid_x=1", "grid_x=2"])


# ---------------------------------------------------------------------- pins fixed in some candidates


def test_pin_on_a_parameter_fixed_in_some_candidates(session):
    """per_core_K is a free parameter only where K is split over the grid; elsewhere it is fixed to all
    8 K tiles. Pinning it to 2 leaves those candidates in conflict (with a message), the others solve."""
    results = session.solve({"per_core_K": 2}, SolveOptions(time_limit_seconds=10))
    assert len(results) == 20
    for r in results:
        schedule = session.schedule(r.candidate_name)
        assert_result_sound(schedule, r)
        if schedule.param("per_core_K").fixed:
            assert r.status == "conflict", r.candidate_name
            assert r.conflict.families == ("domain",)
            assert r.conflict.pins == (("per_core_K", 2),)
            assert "per_core_K" in r.conflict.message and "8" in r.conflict.message
        else:
            assert schedule.candidate.gather_axis is not None
            assert r.status == "optimal", (r.candidate_name, r.conflict)
            assert r.solution.values()["per_core_K"] == 2
    split = [r for r in results if r.solution]
    assert len(split) == 8  # the 8 split-K candidates (4 layouts x their comm options)
    # feasible candidates come first, best first
    assert results[: len(split)] == split
    lat = [r.solution.latency_cycles for r in split]
    assert lat == sorted(lat)


def test_pins_are_honoured_and_cost_no_less_than_free(session):
    free = {r.candidate_name: r for r in session.solve({})}
    pinned = session.solve({"out_block_h": 1, "in0_block_w": 1})
    for r in pinned:
        schedule = session.schedule(r.candidate_name)
        assert_result_sound(schedule, r)
        if r.solution:
            assert r.solution.latency_cycles >= free[r.candidate_name].solution.latency_cycles


def test_resolve_is_deterministic_and_warm_start_does_not_change_the_optimum(session):
    a = session.solve({}, candidates=["M@y,N@x|in0=dram,in1=dram"])[0]
    session.solve({"grid_x": 2}, candidates=["M@y,N@x|in0=dram,in1=dram"])  # changes the warm start
    b = session.solve({}, candidates=["M@y,N@x|in0=dram,in1=dram"])[0]
    assert a.status == b.status == "optimal"
    assert a.solution.latency_cycles == b.solution.latency_cycles


def test_unknown_candidate_name(session):
    with pytest.raises(KeyError, match="no candidate named"):
        session.solve({}, candidates=["nope"])


# -------------------------------------------------------------------------------------- alternatives


def test_alternatives_are_distinct_and_no_better(session):
    names = ["M@y,N@x|in0=dram,in1=dram", "M@y,K@x|in0=dram,in1=mcast_y", "N@xy|in0=mcast_xy,in1=dram"]
    results = session.solve({}, SolveOptions(top_k=3), candidates=names)
    for r in results:
        schedule = session.schedule(r.candidate_name)
        assert_result_sound(schedule, r)
        assert r.status == "optimal"
        assert len(r.alternatives) == 2
        seen = [r.solution.params] + [a.params for a in r.alternatives]
        assert len(set(seen)) == 3, "alternatives repeat a schedule"
        lat = [r.solution.latency_cycles] + [a.latency_cycles for a in r.alternatives]
        assert lat == sorted(lat), "alternatives come best first and never beat the optimum"


def test_rank_orders_feasible_then_timeouts_conflicts_infeasible(session):
    results = session.solve({"per_core_K": 2})
    shuffled = list(reversed(results))
    assert rank(shuffled) == results


def test_time_limited_solve_reports_a_known_status(tiny_hw):
    session = Session(tiny_hw, make_problem(load_program("gemm"), "M=512,K=512,N=512"))
    results = session.solve(
        {},
        SolveOptions(time_limit_seconds=0.001, explain=False),
        candidates=["M@y,N@x|in0=dram,in1=dram", "M@y,K@x|in0=dram,in1=dram"],
    )
    for r in results:
        assert_result_sound(session.schedule(r.candidate_name), r)
        assert r.status in ("optimal", "feasible", "timeout")
        if r.status == "feasible":
            assert r.best_bound_cycles is not None and r.best_bound_cycles <= r.solution.latency_cycles


def test_a_pinned_solve_restores_the_compiled_models_domains(session):
    """Pins narrow domains of the compiled optimisation model for one solve only (solve/compiled.py)."""
    schedule = session.schedules[0]
    compiled = session.compiled(schedule)
    before = [list(v.domain) for v in compiled.model.proto.variables]
    free = compiled.solve({}, 30.0)
    value = next(v for v in schedule.param("in0_block_w").values if v != free.values["in0_block_w"])
    pinned = compiled.solve({"in0_block_w": value}, 30.0)
    assert pinned.values is not None and pinned.values["in0_block_w"] == value
    assert pinned.objective >= free.objective
    after = [list(v.domain) for v in compiled.model.proto.variables]
    cap = compiled._cap.index  # the latency cap is set by every solve
    assert [d for i, d in enumerate(after) if i != cap] == [d for i, d in enumerate(before) if i != cap]
    assert compiled.solve({}, 30.0).objective == free.objective
    with pytest.raises(ValueError, match="in0_block_w=99"):
        compiled.solve({"in0_block_w": 99}, 30.0)
