"""Huge shapes stay inside CP-SAT's integer range (interval bounds of the products would overflow int64)."""

from __future__ import annotations

import pytest

from loom_explorer.hardware import load_hardware
from loom_explorer.model.expr import bounds
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.validate import referee

# a 4-worker proof on the huge model, about 6 s of CPU: with the slow tests (the quick tier refuses and explains
# the shapes beyond the range: tests/model/test_huge_shapes.py)
pytestmark = pytest.mark.slow

NAME = "M@y,N@x|in0=mcast_x,in1=mcast_y"


def test_a_huge_gemm_compiles_and_solves() -> None:
    hw = load_hardware("wormhole_n150")
    session = Session(hw, make_problem(load_program("gemm"), "M=131072,K=65536,N=131072"))
    schedule = session.schedule(NAME)
    assert bounds(schedule.latency)[1] > 2**63  # plain interval bounds are past int64
    (result,) = session.solve({}, SolveOptions(time_limit_seconds=30), candidates=[NAME])
    assert result.status in ("optimal", "feasible") and result.solution is not None
    verdict = referee(schedule, result.solution.values())
    assert verdict.legal and verdict.solution is not None
    assert verdict.solution.latency_cycles == result.solution.latency_cycles
    assert result.solution.latency_cycles >= schedule.ideal_cycles
