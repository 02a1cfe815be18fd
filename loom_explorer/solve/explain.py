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

import time
from collections.abc import Callable

from ortools.sat.python import cp_model

from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.result import Conflict
from loom_explorer.solve.compiled import CompiledSchedule, RawSolve
from loom_explorer.solve.cpsat import LATENCY_LIMIT_CYCLES
from loom_explorer.solve.interrupt import STOP, Interrupted, StopToken

MIN_SOLVE_SECONDS = 0.01  # a solve after the explanation's time is spent still returns a status at once


def explain_infeasibility(
    schedule: SymbolicSchedule,
    pins: dict[str, int],
    time_limit_seconds: float = 5.0,
    stop: StopToken = STOP,
    capped: bool = False,
) -> Conflict | None:
    """A minimal conflict of pins and constraints, or None when the schedule is in fact feasible (or the time
    ran out before infeasibility was proven). Raises ``Interrupted`` when ``stop`` is set before the
    explanation is complete.

    ``time_limit_seconds`` bounds the whole explanation (building its model and every solve): each solve
    gets what the earlier ones left (at least ``MIN_SOLVE_SECONDS``). When the time runs out while the core
    is being shrunk, the core found so far is kept: still a conflict, not necessarily a minimal one.

    ``capped``: the caller's optimisation model, whose latency is capped at ``LATENCY_LIMIT_CYCLES`` (and
    otherwise only has redundant valid bounds more), found no schedule under ``pins``. When this model, which
    has no cap, finds one, every legal schedule is then beyond that range: said as a ``range`` conflict
    rather than ``None``."""
    ends = time.monotonic() + time_limit_seconds
    feas = CompiledSchedule(schedule, per_constraint_literals=True)

    def solve(pins: dict[str, int], assumptions: list[cp_model.IntVar] | None = None) -> RawSolve:
        left = max(MIN_SOLVE_SECONDS, ends - time.monotonic())
        r = feas.solve(pins, left, extra_assumptions=assumptions, stop=stop)
        if stop.stopped:
            raise Interrupted("explanation interrupted")
        return r

    c_lits = feas.constraint_literals
    p_lits = {name: feas.pin_literal(name, v) for name, v in pins.items()}
    members = [("pin", n) for n in pins] + [("constraint", c.name) for c in schedule.constraints]

    def literal(m: tuple[str, str]) -> cp_model.IntVar:
        return p_lits[m[1]] if m[0] == "pin" else c_lits[m[1]]

    def infeasible(subset: list[tuple[str, str]]) -> bool:
        return solve({}, [literal(m) for m in subset]).status == "INFEASIBLE"

    first = solve({}, [literal(m) for m in members])
    if capped and first.status in ("FEASIBLE", "OPTIMAL"):
        lead = (
            "pins " + ", ".join(f"{n}={v}" for n, v in pins.items()) + " allow only schedules"
            if pins
            else "every schedule of this candidate is"
        )
        return Conflict(
            pins=tuple(sorted(pins.items())),
            constraints=(),
            families=("range",),
            message=f"{lead} predicted beyond the model's range of 2**39 = {LATENCY_LIMIT_CYCLES:,} cycles",
        )
    if first.status != "INFEASIBLE":
        return None
    index_of = {literal(m).index: m for m in members}
    core = [index_of[i] for i in first.core if i in index_of] or members
    # deletion filter: drop every member the conflict does not need
    i = 0
    while i < len(core) and time.monotonic() < ends:
        trial = core[:i] + core[i + 1 :]
        if trial and infeasible(trial):
            core = trial
        else:
            i += 1
    core_pins = tuple((n, pins[n]) for kind, n in core if kind == "pin")
    core_cts = [n for kind, n in core if kind == "constraint"]
    by_name = {c.name: c for c in schedule.constraints}
    details = _numbers(schedule, feas, pins, core_cts, solve)
    families = tuple(dict.fromkeys(by_name[n].family for n in core_cts))
    pin_text = ", ".join(f"{n}={v}" for n, v in core_pins)
    lead = f"pins {pin_text} conflict" if core_pins else "no schedule exists"
    if details:
        message = f"{lead}: " + "; ".join(details)
    else:
        message = f"{lead} with " + (" and ".join(core_cts) if core_cts else "the parameter domains")
    return Conflict(pins=core_pins, constraints=tuple(core_cts), families=families, message=message)


def _numbers(
    schedule: SymbolicSchedule,
    feas: CompiledSchedule,
    pins: dict[str, int],
    core_cts: list[str],
    solve: Callable[..., RawSolve],
) -> list[str]:
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
    try:
        r = solve(pins, others)
        if r.values is None:  # the other constraints conflict with the pins too: relax them as well
            r = solve(pins)
    finally:
        model.clear_objective()
    if r.values is None:
        return []
    return [by_name[n].explain(r.values) for n in core_cts if not by_name[n].holds(r.values)]
