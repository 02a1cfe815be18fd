"""Explain why a candidate has no schedule (under pins, or at all), in words and numbers.

A feasibility-only copy of the model enforces each named constraint under its own literal. All constraint
literals and pin literals are passed as assumptions; CP-SAT's ``sufficient_assumptions_for_infeasibility``
gives a core, which is shrunk by deletion to a minimal one (every member needed). The numbers come from
relaxing the core's constraints: among assignments that meet the pins and every other constraint (or only
the pins, when the others conflict with them too), the one that comes closest to meeting the first core
constraint is evaluated by the referee, e.g.
``l1_capacity: needs 1,622,016 B of L1 per core, 1,395,424 B usable``.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.solve.compiled import CompiledSchedule
from loom_explorer.solve.result import Conflict


def explain_infeasibility(schedule: SymbolicSchedule, pins: dict[str, int],
                          time_limit_seconds: float = 5.0) -> Conflict | None:
    """A minimal conflict of pins and constraints, or None when the schedule is in fact feasible."""
    feas = CompiledSchedule(schedule, per_constraint_literals=True)
    c_lits = feas.constraint_literals
    p_lits = {name: feas.pin_literal(name, v) for name, v in pins.items()}
    members = [("pin", n) for n in pins] + [("constraint", c.name) for c in schedule.constraints]

    def literal(m: tuple[str, str]) -> cp_model.IntVar:
        return p_lits[m[1]] if m[0] == "pin" else c_lits[m[1]]

    def infeasible(subset: list[tuple[str, str]]) -> bool:
        r = feas.solve({}, time_limit_seconds, extra_assumptions=[literal(m) for m in subset])
        return r.status == "INFEASIBLE"

    first = feas.solve({}, time_limit_seconds, extra_assumptions=[literal(m) for m in members])
    if first.status != "INFEASIBLE":
        return None
    index_of = {literal(m).index: m for m in members}
    core = [index_of[i] for i in first.core if i in index_of] or members
    # deletion filter: drop every member the conflict does not need
    i = 0
    while i < len(core):
        trial = core[:i] + core[i + 1:]
        if trial and infeasible(trial):
            core = trial
        else:
            i += 1
    core_pins = tuple((n, pins[n]) for kind, n in core if kind == "pin")
    core_cts = [n for kind, n in core if kind == "constraint"]
    by_name = {c.name: c for c in schedule.constraints}
    details = _numbers(schedule, feas, pins, core_cts, time_limit_seconds)
    families = tuple(dict.fromkeys(by_name[n].family for n in core_cts))
    pin_text = ", ".join(f"{n}={v}" for n, v in core_pins)
    lead = f"pins {pin_text} conflict" if core_pins else "no schedule exists"
    if details:
        message = f"{lead}: " + "; ".join(details)
    else:
        message = f"{lead} with " + (" and ".join(core_cts) if core_cts else "the parameter domains")
    return Conflict(pins=core_pins, constraints=tuple(core_cts), families=families, message=message)


def _numbers(schedule: SymbolicSchedule, feas: CompiledSchedule, pins: dict[str, int],
             core_cts: list[str], time_limit_seconds: float) -> list[str]:
    """Evaluate the core constraints at the assignment that comes closest to satisfying the first one."""
    if not core_cts:
        return []
    by_name = {c.name: c for c in schedule.constraints}
    target = by_name[core_cts[0]]
    others = [lit for name, lit in feas.constraint_literals.items() if name not in core_cts]
    model = feas.model
    if target.kind in ("le", "ge"):
        gap = feas.compiler.linear(target.lhs) - feas.compiler.linear(target.rhs)
        model.minimize(gap if target.kind == "le" else -gap)
    r = feas.solve(pins, time_limit_seconds, extra_assumptions=others)
    if r.values is None:  # the other constraints conflict with the pins too: relax them as well
        r = feas.solve(pins, time_limit_seconds)
    model.clear_objective()
    if r.values is None:
        return []
    return [by_name[n].explain(r.values) for n in core_cts if not by_name[n].holds(r.values)]
