"""The referee: check and evaluate a concrete schedule without CP-SAT.

``referee(schedule, values)`` checks every parameter's domain and every named constraint of the symbolic
schedule, by evaluating the same expression trees the solver compiled (``model/expr.py: evaluate``), and,
when the point is legal, evaluates its latency, breakdown, L1 and DRAM bytes.

``judge(schedule, values, latency_cycles, source)`` is what the solver calls on every schedule it returns
(``solve/solver.py``): CP-SAT's optimum or best schedule found, a starting schedule returned when the
search timed out or was interrupted, and every alternative (``top_k``). The schedule must be legal and its
latency must equal the one the solver reported, else :class:`RefereeError` says which constraint fails or
both latencies. That is a bug of the tool, not of the input, so it is not a ``LoomError``: the command
line reports it as an internal error (``errors.EXIT_INTERNAL``, the traceback under ``--debug``). Every
solver test also asserts this, and the brute-force enumerator is built on the same functions.

``restate(schedule, solution, pins)`` referees a schedule someone else claims, e.g. an answer read back from
the results store (``solve/memory.py``): it says why the claim is not the model's (an illegal point, a pin
not kept, a latency, breakdown, L1 or DRAM figure other than the model computes for its values), or None.
That is bad data, not a bug, so it is said, never raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from loom_explorer.model.expr import evaluate
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.result import Solution


@dataclass(frozen=True, slots=True)
class Verdict:
    legal: bool
    violations: tuple[str, ...]
    solution: Solution | None


class RefereeError(RuntimeError):
    """The solver returned a schedule the referee rejects, or costs differently: a bug of the tool.

    ``violations``: each failed domain or constraint check (``"l1_capacity: needs ... B of L1"``), empty when
    the schedule is legal; ``solver_latency_cycles`` what the solver reported, ``referee_latency_cycles``
    what the referee computes for the same values (None when illegal). ``solver_latency_cycles`` is None when
    CP-SAT proved that no schedule exists while ``values`` (the starting schedule) is one the referee accepts."""

    def __init__(
        self,
        candidate: str,
        source: str,
        values: Mapping[str, int],
        solver_latency_cycles: int | None,
        referee_latency_cycles: int | None,
        violations: tuple[str, ...] = (),
    ) -> None:
        self.candidate = candidate
        self.source = source
        self.values = dict(values)
        self.solver_latency_cycles = solver_latency_cycles
        self.referee_latency_cycles = referee_latency_cycles
        self.violations = violations
        point = ", ".join(f"{k}={v}" for k, v in self.values.items())
        if solver_latency_cycles is None:
            claim = f"CP-SAT proves that no schedule exists, but {source} is legal by the referee"
            what = f"at {referee_latency_cycles:,} cycles"
        elif violations:
            claim = f"{source} is a schedule of {solver_latency_cycles:,} cycles by the solver"
            what = f"but the referee finds it illegal: {'; '.join(violations)}"
        else:
            claim = f"{source} is a schedule of {solver_latency_cycles:,} cycles by the solver"
            what = f"but the referee computes {referee_latency_cycles:,} cycles for it"
        super().__init__(f"{candidate}: {claim}, {what} ({point}); this is a bug of loom-explorer, please report it")


def domain_violations(schedule: SymbolicSchedule, values: Mapping[str, int]) -> list[str]:
    out = []
    for p in schedule.params:
        if p.name not in values:
            out.append(f"{p.name}: no value given")
        elif values[p.name] not in p.values:
            out.append(f"{p.name}: {values[p.name]} is outside its domain {p.domain_text()}")
    unknown = sorted(set(values) - set(schedule.param_names))
    out += [f"{n}: not a parameter of this candidate" for n in unknown]
    return out


def evaluate_schedule(schedule: SymbolicSchedule, values: Mapping[str, int]) -> Solution:
    """Latency, breakdown, L1 and DRAM bytes of a concrete assignment (no legality check)."""
    breakdown = tuple((t.name, evaluate(t.expr, values)) for t in schedule.terms)
    return Solution(
        params=tuple((p.name, values[p.name]) for p in schedule.params),
        latency_cycles=evaluate(schedule.latency, values),
        breakdown=breakdown,
        l1_bytes=evaluate(schedule.l1_bytes, values),
        dram_read_bytes=evaluate(schedule.dram_read_bytes, values),
    )


def referee(schedule: SymbolicSchedule, values: Mapping[str, int]) -> Verdict:
    """Check every parameter's domain and every named constraint; evaluate the latency when legal."""
    values = dict(values)
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


def judge(schedule: SymbolicSchedule, values: Mapping[str, int], latency_cycles: int, source: str) -> Solution:
    """The referee's :class:`Solution` for a schedule the solver returns with ``latency_cycles``; raises
    :class:`RefereeError` when the referee finds it illegal or costs it differently. ``source`` says where
    the schedule came from, for the message (e.g. ``"CP-SAT's optimum"``)."""
    verdict = referee(schedule, values)
    name = schedule.candidate.name
    if verdict.solution is None:
        raise RefereeError(name, source, values, latency_cycles, None, verdict.violations)
    if verdict.solution.latency_cycles != latency_cycles:
        raise RefereeError(name, source, values, latency_cycles, verdict.solution.latency_cycles)
    return verdict.solution


def restate(schedule: SymbolicSchedule, claimed: Solution, pins: Mapping[str, int] | None = None) -> str | None:
    """Why ``claimed`` is not what the model says of its parameter values (module docstring), or None: every
    value must be in its domain, keep ``pins`` and meet every constraint, and the latency terms, L1 and DRAM
    bytes the model computes for those values must be the claimed ones, exactly, the latency their sum (the
    terms of a schedule sum to its latency, which ``referee`` asserts at every legal point)."""
    values = dict(claimed.params)
    if len(values) != len(claimed.params):
        return "a parameter is given twice"
    kept = [f"{n}={values.get(n)} where it is pinned to {v}" for n, v in (pins or {}).items() if values.get(n) != v]
    if kept:
        return "; ".join(kept)
    problems = domain_violations(schedule, values)
    if problems:
        return "illegal: " + "; ".join(problems)
    violations = [c.explain(values) for c in schedule.constraints if not c.holds(values)]
    if violations:
        return "illegal: " + "; ".join(violations)
    shared: dict[int, int] = {}  # the sub-trees the terms, L1 and DRAM bytes have in common, evaluated once
    terms = {t.name: evaluate(t.expr, values, shared) for t in schedule.terms}
    dram_bytes = evaluate(schedule.dram_read_bytes, values, shared)
    for what, said, computed in (
        ("latency", claimed.latency_cycles, sum(terms.values())),
        ("L1", claimed.l1_bytes, evaluate(schedule.l1_bytes, values, shared)),
        ("DRAM read bytes", claimed.dram_read_bytes, dram_bytes),
    ):
        if said != computed:
            return f"{what} {said:,} where the model computes {computed:,} for its values"
    if dict(claimed.breakdown) != terms:
        return "its latency terms are not the model's for its values"
    return None
