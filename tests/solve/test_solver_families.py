"""Each constraint family through the solver: pins that leave a schedule, and pins that break exactly that
family, reported as a Conflict that names the family and carries the numbers.

Same problem as the referee-level tests (gemm 512^3 on a 4x4 chip, candidate
``M@y,N@x|in0=mcast_x,in1=mcast_y``), solved with ``Session(hw, problem).solve(pins)``.
"""

from __future__ import annotations

import re

import pytest
from loom_helpers import assert_result_sound

from loom_explorer.solve.pins import PinError

CAND = "M@y,N@x|in0=mcast_x,in1=mcast_y"
SHAPE = "M=512,K=512,N=512"

FEASIBLE = {
    "grid": {"grid_x": 4, "grid_y": 4},
    "coverage": {"grid_y": 2, "per_core_M": 8},
    "divisibility": {"out_block_h": 4, "per_core_M": 8},
    "dst_capacity": {"out_subblock_h": 2, "out_subblock_w": 4},
    "l1_capacity": {"in0_block_w": 16, "out_block_h": 8, "out_block_w": 8},  # fits single-buffered
    "multicast": {"grid_x": 2},
}

L1_NEEDED = (3 * 8 * 16 * 2 + 8 * 8) * 2048  # in0 + in1 triple-buffered 8x16 / 16x8 blocks + 8x8 out block
# pins -> numbers the conflict message must carry
CONFLICTS = {
    "coverage": ({"grid_y": 3, "per_core_M": 8}, {16}),  # two rows of 8 already cover M = 16 tiles
    "divisibility": ({"out_block_h": 3, "per_core_M": 8}, {3, 8}),
    "dst_capacity": ({"out_subblock_h": 4, "out_subblock_w": 4}, {16, 8}),
    "l1_capacity": (
        {"in0_block_w": 16, "out_block_h": 8, "out_block_w": 8, "in0_buffer_depth": 3, "in1_buffer_depth": 3},
        {L1_NEEDED, 1_395_424},
    ),
    "multicast": ({"grid_x": 1}, {1, 2}),
}


def numbers(text: str) -> set[int]:
    return {int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)}


@pytest.fixture(scope="module")
def solve(tiny_hw, solve_cached):
    def run(pins):
        session, results = solve_cached(tiny_hw, "gemm", SHAPE, pins=pins, candidates=[CAND])
        assert len(results) == 1
        return session.schedule(CAND), results[0]

    return run


@pytest.mark.parametrize("family", sorted(FEASIBLE))
def test_feasible_pins(solve, family):
    pins = FEASIBLE[family]
    schedule, result = solve(pins)
    assert result.status == "optimal", result.conflict
    assert_result_sound(schedule, result)
    values = result.solution.values()
    assert all(values[k] == v for k, v in pins.items())


@pytest.mark.parametrize("family", sorted(CONFLICTS))
def test_conflicting_pins_name_exactly_the_family(solve, family):
    pins, expected_numbers = CONFLICTS[family]
    schedule, result = solve(pins)
    assert_result_sound(schedule, result)
    assert result.status == "conflict"
    conflict = result.conflict
    assert conflict.families == (family,), conflict
    by_name = {c.name: c.family for c in schedule.constraints}
    assert conflict.constraints and all(by_name[c] == family for c in conflict.constraints)
    # the pins in the conflict are pins we gave, and the conflict needs at least one of them
    assert conflict.pins and set(conflict.pins) <= set(pins.items())
    assert expected_numbers <= numbers(conflict.message), conflict.message
    for c in conflict.constraints:
        assert c in conflict.message


def test_l1_conflict_needs_every_pin(solve):
    """A minimal conflict: with any one of the five pins dropped a schedule fits."""
    pins, _ = CONFLICTS["l1_capacity"]
    _, result = solve(pins)
    assert dict(result.conflict.pins) == pins
    for name in pins:
        schedule, relaxed = solve({k: v for k, v in pins.items() if k != name})
        assert relaxed.status == "optimal", name
        assert_result_sound(schedule, relaxed)


def test_grid_cannot_be_violated_through_the_solver(tiny_hw, solve_cached):
    """grid_x/grid_y domains are 1..columns/rows, so a pin past the grid is rejected as outside its
    domain before any solve (the grid family can only be broken at the referee level)."""
    with pytest.raises(PinError, match="grid_x"):
        solve_cached(tiny_hw, "gemm", SHAPE, pins={"grid_x": 5}, candidates=[CAND])


def test_candidate_infeasible_without_pins_on_a_single_core(one_core_hw, solve_cached):
    """On a 1x1 chip every multicast and split-K candidate is infeasible with no pin: status
    'infeasible', a conflict without pins naming the multicast family."""
    session, results = solve_cached(one_core_hw, "gemm", "M=64,K=64,N=64")
    by_name = {r.candidate_name: r for r in results}
    for r in results:
        assert_result_sound(session.schedule(r.candidate_name), r)
        cand = session.schedule(r.candidate_name).candidate
        needs_partner = cand.gather_axis is not None or any(c.axis for _, c in cand.comms)
        if needs_partner:
            assert r.status == "infeasible", r.candidate_name
            assert r.conflict is not None and r.conflict.pins == ()
            assert "multicast" in r.conflict.families
        else:
            assert r.status == "optimal", r.candidate_name
    assert by_name["M@y,N@x|in0=mcast_x,in1=dram"].conflict.families == ("multicast",)
    # feasible candidates rank first
    statuses = [r.status for r in results]
    assert statuses == sorted(statuses, key=lambda s: s != "optimal")
