"""A symbolic schedule compiled once into a CP-SAT model, re-solved under different pins.

Definitions (products, divisions, maxima) are always enforced; each named constraint is a restriction,
optionally enforced only under a literal (the explanation model uses one literal per constraint). One
compiled model serves every combination of pins. In the optimisation model a pin narrows its
parameter's domain to the one value for one solve (the domain is restored afterwards): CP-SAT's
root-level reasoning (its LP, its bounds) then sees the pin, which pins passed as assumptions hide until
the search branches on them; re-solves after a pin were up to 10x slower that way
(docs/performance.md). In the explanation model pins are literals ``pin[name=value] => name == value``
passed as assumptions, so that an infeasible core can name them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import MutableSequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from loom_explorer.model.expr import Const, Max, Var, bounds
from loom_explorer.model.schedule import Constraint, SymbolicSchedule
from loom_explorer.solve.cpsat import LATENCY_LIMIT_CYCLES, CpCompiler
from loom_explorer.solve.interrupt import STOP, StopToken


def add_restriction(compiler: CpCompiler, c: Constraint, enforce: cp_model.IntVar | None = None) -> None:
    """Add constraint ``c`` to the compiler's model, only under ``enforce`` when given."""
    model = compiler.model
    if c.kind == "divides":
        if isinstance(c.rhs, Const) and isinstance(c.lhs, Var) and all(c.rhs.value % v == 0 for v in c.lhs.values):
            return  # every value of the divisor's domain divides the constant: always true
        lo, hi = bounds(c.rhs)
        dlo, _ = bounds(c.lhs)
        q = compiler.model.new_int_var(0, hi // max(dlo, 1), f"_q[{c.name}]")
        prod = compiler.model.new_int_var(0, hi, f"_p[{c.name}]")
        model.add_multiplication_equality(prod, [compiler.as_var(c.lhs), q])
        ct = model.add(prod == compiler.linear(c.rhs))
    else:
        lhs, rhs = compiler.linear(c.lhs), compiler.linear(c.rhs)
        ct = model.add(lhs <= rhs if c.kind == "le" else lhs >= rhs if c.kind == "ge" else lhs == rhs)
    if enforce is not None:
        ct.only_enforce_if(enforce)


def _in_domain(domain: list[int], value: int) -> bool:
    """Whether ``value`` lies in a CP-SAT domain given as [lo0, hi0, lo1, hi1, ...]."""
    return any(lo <= value <= hi for lo, hi in zip(domain[::2], domain[1::2], strict=True))


def _set_domain(field: MutableSequence[int], domain: list[int]) -> None:
    """Replace a variable's domain in the model's proto (a repeated integer field) by ``domain``."""
    field.clear()
    field.extend(domain)


@dataclass(frozen=True, slots=True)
class RawSolve:
    status: str  # CP-SAT status name
    values: dict[str, int] | None
    objective: int | None
    bound: int | None
    seconds: float
    core: tuple[int, ...] = ()  # indices of assumption literals sufficient for infeasibility


class CompiledSchedule:
    """The optimisation model of one symbolic schedule; thread-safe re-solves under pins."""

    def __init__(self, schedule: SymbolicSchedule, per_constraint_literals: bool = False) -> None:
        self.schedule = schedule
        self.model = cp_model.CpModel()
        self.compiler = CpCompiler(self.model)
        self.param_vars = {p.name: self.compiler.var(p.var) for p in schedule.params}
        self.constraint_literals: dict[str, cp_model.IntVar] = {}
        for c in schedule.constraints:
            lit = None
            if per_constraint_literals:
                lit = self.model.new_bool_var(f"ct[{c.name}]")
                self.constraint_literals[c.name] = lit
            add_restriction(self.compiler, c, lit)
        self.objective: cp_model.LinearExprT | None = None
        if not per_constraint_literals:  # the explanation model needs no latency
            self.objective = self.compiler.linear(schedule.latency)
            # objective <= cap; each solve sets cap's domain to the latency limit or a known schedule's latency
            self._cap = self.model.new_int_var(0, LATENCY_LIMIT_CYCLES, "latency_cap")
            self.model.add(self.objective <= self._cap)
            # redundant: valid lower bounds of the latency that propagate long before the products do
            bound = schedule.latency_lower_bound
            for part in bound.args if isinstance(bound, Max) else (bound,):
                self.model.add(self.objective >= self.compiler.linear(part))
            self.model.minimize(self.objective)
        self._pins: dict[tuple[str, int], cp_model.IntVar] = {}
        self._lock = threading.Lock()

    def pin_literal(self, name: str, value: int) -> cp_model.IntVar:
        key = (name, value)
        lit = self._pins.get(key)
        if lit is None:
            lit = self.model.new_bool_var(f"pin[{name}={value}]")
            self.model.add(self.param_vars[name] == value).only_enforce_if(lit)
            self._pins[key] = lit
        return lit

    def solve(
        self,
        pins: dict[str, int],
        time_limit_seconds: float,
        workers: int = 1,
        seed: int = 0,
        hint: dict[str, int] | None = None,
        extra_assumptions: list[cp_model.IntVar] | None = None,
        presolve: bool = False,
        upper_bound: int | None = None,
        first_solution: bool = False,
        stop: StopToken | None = None,
    ) -> RawSolve:
        """Solve under ``pins``. CP-SAT's presolve is off by default: on these small product-heavy models it
        costs more than it saves (2-5x slower full solves, 2-6x slower re-solves; docs/performance.md).
        ``upper_bound``: the latency of a legal schedule under these pins (``solve/incumbent.py``); the
        search then only looks at schedules at least as fast. ``first_solution``: stop at the first schedule
        found (a feasibility check under ``upper_bound``). ``stop`` (default: the process-wide token): a stop
        request ends the search early (status ``FEASIBLE`` or ``UNKNOWN``); once set, no search starts
        (``UNKNOWN``) (``solve/interrupt.py``)."""
        with self._lock:
            saved: dict[int, list[int]] = {}  # domains changed for this solve, restored below
            literals = list(extra_assumptions or [])
            if self.objective is not None:
                cap = LATENCY_LIMIT_CYCLES if upper_bound is None else min(upper_bound, LATENCY_LIMIT_CYCLES)
                self.model.proto.variables[self._cap.index].domain[1] = cap  # the domain is [0, cap]
                for n, v in pins.items():
                    index = self.param_vars[n].index
                    saved[index] = list(self.model.proto.variables[index].domain)
                    if not _in_domain(saved[index], v):  # the solver checks pins before it gets here
                        raise ValueError(f"pin {n}={v} is outside the parameter's domain")
                    _set_domain(self.model.proto.variables[index].domain, [v, v])
            else:
                literals += [self.pin_literal(n, v) for n, v in pins.items()]
            self.model.clear_assumptions()
            self.model.add_assumptions(literals)
            self.model.clear_hints()
            for name, value in (hint or {}).items():
                if name in self.param_vars:
                    self.model.add_hint(self.param_vars[name], value)
            solver = cp_model.CpSolver()
            solver.parameters.max_time_in_seconds = time_limit_seconds
            solver.parameters.num_workers = workers
            solver.parameters.random_seed = seed
            solver.parameters.cp_model_presolve = presolve
            solver.parameters.stop_after_first_solution = first_solution
            solver.parameters.catch_sigint_signal = False  # Ctrl-C stops searches through the token only
            start = time.perf_counter()
            try:
                with (stop or STOP).searching(solver) as go:
                    status = solver.solve(self.model) if go else cp_model.UNKNOWN
            finally:
                for index, domain in saved.items():
                    _set_domain(self.model.proto.variables[index].domain, domain)
            seconds = time.perf_counter() - start
            name = solver.status_name(status)
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                values = {n: int(solver.value(v)) for n, v in self.param_vars.items()}
                if self.objective is None:  # feasibility (explanation) model, possibly with a temporary goal
                    return RawSolve(name, values, None, None, seconds)
                # the objective evaluated on the returned solution: after a time limit CP-SAT's reported
                # objective_value can differ from it (seen with OR-Tools 9.15)
                return RawSolve(
                    name, values, int(solver.value(self.objective)), int(solver.best_objective_bound), seconds
                )
            core = (
                tuple(int(i) for i in solver.sufficient_assumptions_for_infeasibility())
                if status == cp_model.INFEASIBLE
                else ()
            )
            return RawSolve(name, None, None, None, seconds, core)
