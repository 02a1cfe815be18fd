"""The referee: check and evaluate a concrete schedule without CP-SAT.

Every solver test asserts that the referee accepts the solver's schedule and that its latency equals
the solver's objective exactly; the brute-force enumerator is built on the same functions.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.model.expr import evaluate
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.solve.result import Solution


@dataclass(frozen=True, slots=True)
class Verdict:
    legal: bool
    violations: tuple[str, ...]
    solution: Solution | None


def domain_violations(schedule: SymbolicSchedule, values: dict[str, int]) -> list[str]:
    out = []
    for p in schedule.params:
        if p.name not in values:
            out.append(f"{p.name}: no value given")
        elif values[p.name] not in p.values:
            out.append(f"{p.name}: {values[p.name]} is outside its domain {p.domain_text()}")
    unknown = sorted(set(values) - set(schedule.param_names))
    out += [f"{n}: not a parameter of this candidate" for n in unknown]
    return out


def evaluate_schedule(schedule: SymbolicSchedule, values: dict[str, int]) -> Solution:
    """Latency, breakdown, L1 and DRAM bytes of a concrete assignment (no legality check)."""
    breakdown = tuple((t.name, evaluate(t.expr, values)) for t in schedule.terms)
    return Solution(
        params=tuple((p.name, values[p.name]) for p in schedule.params),
        latency_cycles=evaluate(schedule.latency, values),
        breakdown=breakdown,
        l1_bytes=evaluate(schedule.l1_bytes, values),
        dram_read_bytes=evaluate(schedule.dram_read_bytes, values),
    )


def referee(schedule: SymbolicSchedule, values: dict[str, int]) -> Verdict:
    """Check every parameter's domain and every named constraint; evaluate the latency when legal."""
    problems = domain_violations(schedule, values)
    if problems:
        return Verdict(False, tuple(problems), None)
    violations = tuple(c.explain(values) for c in schedule.constraints if not c.holds(values))
    if violations:  # an illegal point may lie outside the model's tables (e.g. a grid bigger than the chip)
        return Verdict(False, violations, None)
    solution = evaluate_schedule(schedule, values)
    if sum(v for _, v in solution.breakdown) != solution.latency_cycles:
        raise AssertionError(
            f"{schedule.candidate.name}: breakdown {solution.breakdown} does not sum to {solution.latency_cycles}"
        )
    return Verdict(True, (), solution)
