"""Brute force: enumerate every assignment of a schedule's parameters, keep the best legal one.

A depth-first walk over the parameters in their declared order; each constraint is checked as soon as all
its variables are bound (pruning whole subtrees), the latency at every legal leaf. No bounding on the
objective: this is the exhaustive reference that CP-SAT's optimum is compared with.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from loom_explorer.model.expr import compile_python, variables
from loom_explorer.model.schedule import SymbolicSchedule, compile_check


@dataclass(frozen=True, slots=True)
class BruteResult:
    best_values: dict[str, int] | None
    best_latency_cycles: int | None
    legal_points: int
    visited_nodes: int
    complete: bool
    seconds: float


@dataclass(slots=True)
class _WalkState:
    """What the depth-first walk has found so far."""

    best_values: dict[str, int] | None = None
    best_latency_cycles: int | None = None
    legal_points: int = 0
    visited_nodes: int = 0
    stopped: bool = False


def space_size(schedule: SymbolicSchedule) -> int:
    """Assignments of every parameter over its domain (the product of the domain sizes)."""
    n = 1
    for p in schedule.params:
        n *= p.values.size
    return n


def brute_force(
    schedule: SymbolicSchedule,
    pins: dict[str, int] | None = None,
    time_limit_seconds: float | None = None,
    on_legal: Callable[[dict[str, int], int], None] | None = None,
) -> BruteResult:
    """The best legal assignment; ``on_legal(values, latency)`` is called for every legal one if given."""
    pins = pins or {}
    params = list(schedule.params)
    order = [p.name for p in params]
    checks: list[list[Callable[[Mapping[str, int]], bool]]] = [[] for _ in params]
    for c in schedule.constraints:
        depth = max((order.index(n) for n in variables(c.lhs) | variables(c.rhs)), default=0)
        checks[depth].append(compile_check(c))
    latency = compile_python(schedule.latency)
    domains = [(p.name, (pins[p.name],) if p.name in pins else p.values) for p in params]
    start = time.perf_counter()
    deadline = start + time_limit_seconds if time_limit_seconds else None
    state = _WalkState()
    values: dict[str, int] = {}
    last = len(domains) - 1

    def walk(i: int) -> None:
        name, domain = domains[i]
        for value in domain:
            state.visited_nodes += 1
            if deadline is not None and state.visited_nodes % 4096 == 0 and time.perf_counter() > deadline:
                state.stopped = True
                return
            values[name] = value
            if not all(check(values) for check in checks[i]):
                continue
            if i == last:
                state.legal_points += 1
                lat = latency(values)
                if on_legal is not None:
                    on_legal(values, lat)
                if state.best_latency_cycles is None or lat < state.best_latency_cycles:
                    state.best_latency_cycles, state.best_values = lat, dict(values)
            else:
                walk(i + 1)
                if state.stopped:
                    return

    walk(0)
    return BruteResult(
        best_values=state.best_values,
        best_latency_cycles=state.best_latency_cycles,
        legal_points=state.legal_points,
        visited_nodes=state.visited_nodes,
        complete=not state.stopped,
        seconds=time.perf_counter() - start,
    )
