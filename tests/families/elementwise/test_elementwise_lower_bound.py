"""The element-wise family's redundant lower bound (compute floor, and the chip's DRAM-read floor) holds on
every legal schedule, and it lets CP-SAT prove a large DRAM-bound shape's candidates quickly."""

from __future__ import annotations

import pytest

from loom_explorer.brute import brute_force
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.expr import compile_python
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions


# every legal schedule walked (1-2 s a case): one chip in the quick tier, the other with the slow tests
@pytest.mark.parametrize("hw_name", ["wormhole_n150", pytest.param("blackhole_p150a", marks=pytest.mark.slow)])
@pytest.mark.parametrize(
    "kernel, shape, activation",
    [
        ("binary", "H=320,W=256", None),
        ("swiglu", "H=64,W=1024", None),
        ("unary", "H=1000,W=200", "relu"),
    ],
)
def test_lower_bound_holds_on_every_legal_schedule(
    hw_name: str, kernel: str, shape: str, activation: str | None
) -> None:
    hw = load_hardware(hw_name)
    problem = make_problem(load_program(kernel), shape, activation=activation)
    legal = 0
    for candidate in enumerate_candidates(problem):
        schedule = build_schedule(hw, problem, candidate)
        bound = compile_python(schedule.latency_lower_bound)
        violations: list[tuple[dict[str, int], int, int]] = []

        def check(values: dict[str, int], latency: int) -> None:  # called within this iteration only
            nonlocal legal
            legal += 1
            lb = bound(values)  # noqa: B023
            if lb > latency:
                violations.append((dict(values), latency, lb))  # noqa: B023

        result = brute_force(schedule, time_limit_seconds=30, on_legal=check)
        assert result.complete, candidate.name
        assert not violations, f"{candidate.name}: bound above latency at {violations[:3]}"
    assert legal > 100


def test_dram_bound_shape_is_proven_quickly() -> None:
    """binary 65536x65536 on the p150a: its flattened candidate ran to CP-SAT's 30 s limit unproven (status
    feasible) with the compute floor alone; with the DRAM-read floor every candidate is proven in seconds."""
    hw = load_hardware("blackhole_p150a")
    session = Session(hw, make_problem(load_program("binary"), "H=65536,W=65536"))
    results = session.solve(options=SolveOptions(time_limit_seconds=20, fastest=1))
    assert results[0].status == "optimal", results[0]
    assert all(r.status in ("optimal", "dominated") for r in results), [r.status for r in results]
