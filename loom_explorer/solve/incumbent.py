"""A legal schedule to start a solve from, found without searching.

Before a candidate is solved, every earlier solution that could fit it is re-checked under the current
pins: the candidate's own last solution (from before a pin changed), and the solutions of the candidates
already solved in this ``Session`` that share its parameter names (e.g. the same layout with another
multicast choice). Each is adapted (the candidate's fixed parameters and the pins override it), checked
against every constraint, and costed, with functions compiled from the same expressions the referee
evaluates. The best legal one bounds the solve from above (``objective <= its latency``) and is the
search's hint; the optimum found is still proven, and equal to what an unbounded solve finds, because
the bound is a schedule's latency and so never below the optimum.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from loom_explorer.model.expr import compile_python
from loom_explorer.model.schedule import SymbolicSchedule, compile_check


@dataclass(frozen=True, slots=True)
class Incumbent:
    values: dict[str, int]
    latency_cycles: int


class IncumbentFinder:
    """Adapts, checks and costs candidate points for one schedule (compiled once)."""

    def __init__(self, schedule: SymbolicSchedule) -> None:
        self._domains = {p.name: p.values for p in schedule.params}  # intervals: membership by binary search
        self._fixed = {p.name: p.values.min for p in schedule.params if p.fixed}
        self._checks = [compile_check(c) for c in schedule.constraints]
        self._latency = compile_python(schedule.latency)

    def adapt(self, values: Mapping[str, int], pins: Mapping[str, int]) -> dict[str, int] | None:
        """``values`` as a point of this schedule (fixed parameters and pins win), or None when a parameter
        has no value or one outside its domain."""
        point = {**{n: values[n] for n in self._domains if n in values}, **self._fixed, **pins}
        if point.keys() != self._domains.keys() or any(v not in self._domains[n] for n, v in point.items()):
            return None
        return point

    def best(self, sources: Iterable[Mapping[str, int]], pins: Mapping[str, int]) -> Incumbent | None:
        """The legal point of least latency among ``sources`` adapted to ``pins``, if any is legal."""
        found: Incumbent | None = None
        seen: set[tuple[int, ...]] = set()
        for source in sources:
            point = self.adapt(source, pins)
            if point is None:
                continue
            key = tuple(point[n] for n in self._domains)
            if key in seen:
                continue
            seen.add(key)
            try:
                if not all(check(point) for check in self._checks):
                    continue
                latency = self._latency(point)
            except (KeyError, ZeroDivisionError):  # a point outside the model's tables is not legal
                continue
            if found is None or latency < found.latency_cycles:
                found = Incumbent(point, latency)
        return found
