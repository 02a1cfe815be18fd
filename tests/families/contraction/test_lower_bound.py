"""The solver's redundant lower bound must hold for every legal schedule, not only for optima."""

from __future__ import annotations

import pytest

from loom_explorer.brute import brute_force
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.expr import compile_python, evaluate
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program


@pytest.mark.parametrize(
    "shape, options",
    [
        ("M=160,K=64,N=96", {}),
        ("M=96,K=128,N=64", {"enabled": {"bias"}, "activation": "gelu"}),
    ],
)
def test_lower_bound_holds_on_every_legal_schedule(shape: str, options: dict) -> None:
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("gemm"), shape, **options)
    legal = 0
    for candidate in enumerate_candidates(problem):
        schedule = build_schedule(hw, problem, candidate)
        bound = compile_python(schedule.latency_lower_bound)
        violations: list[tuple[dict[str, int], int, int]] = []

        def check(values: dict[str, int], latency: int) -> None:  # called within this iteration only
            nonlocal legal
            legal += 1
            lb = bound(values)  # noqa: B023
            if lb > latency or latency < schedule.ideal_cycles:  # noqa: B023
                violations.append((dict(values), latency, lb))  # noqa: B023

        result = brute_force(schedule, time_limit_seconds=60, on_legal=check)
        assert result.complete
        assert not violations, f"{candidate.name}: bound above latency at {violations[:3]}"
        # the compiled check agrees with the reference interpreter on the optimum
        if result.best_values is not None:
            assert bound(result.best_values) == evaluate(schedule.latency_lower_bound, result.best_values)
    assert legal > 1000
