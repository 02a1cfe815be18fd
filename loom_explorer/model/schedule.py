"""The symbolic schedule of one candidate: parameters, named constraints, named latency terms."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.domain import Domain
from loom_explorer.model.expr import Const, Expr, Var, bounds, describe, evaluate, python_source
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.problem import Problem

ConstraintKind = Literal["le", "ge", "eq", "divides"]


@dataclass(frozen=True, slots=True)
class Param:
    """A schedule parameter (TTNN's name where TTNN has the concept) and its finite domain.

    ``bound``: why the domain stops short of the extent where a constraint makes that exact (e.g. "larger
    blocks alone overflow L1"), said when a pin falls outside it; empty when the domain is the plain range."""

    var: Var
    description: str
    unit: str
    bound: str = ""

    @property
    def name(self) -> str:
        return self.var.name

    @property
    def values(self) -> Domain:
        """The domain: intervals, never enumerated to build or test (``model/domain.py``)."""
        return self.var.values

    @property
    def fixed(self) -> bool:
        return self.var.values.fixed

    def domain_text(self) -> str:
        """``lo..hi`` for a run of values, ``{a, b, ...}`` otherwise (:meth:`Domain.text`)."""
        return self.var.values.text()


@dataclass(frozen=True, slots=True)
class Constraint:
    """``lhs <= rhs`` / ``>=`` / ``==``, or ``lhs`` divides ``rhs``, named and grouped in a family.

    ``message`` is a ``str.format`` template over ``lhs`` and ``rhs`` (their values) that says in words
    what a violation means, e.g. ``"needs {lhs:,} B of L1 per core, {rhs:,} B usable"``.
    """

    name: str
    family: str
    kind: ConstraintKind
    lhs: Expr
    rhs: Expr
    message: str

    def values(self, values: dict[str, int]) -> tuple[int, int]:
        return evaluate(self.lhs, values), evaluate(self.rhs, values)

    def holds(self, values: dict[str, int]) -> bool:
        lhs, rhs = self.values(values)
        if self.kind == "le":
            return lhs <= rhs
        if self.kind == "ge":
            return lhs >= rhs
        if self.kind == "eq":
            return lhs == rhs
        return lhs > 0 and rhs % lhs == 0

    def explain(self, values: dict[str, int]) -> str:
        lhs, rhs = self.values(values)
        return f"{self.name}: " + self.message.format(lhs=lhs, rhs=rhs)

    def text(self) -> str:
        op = {"le": "<=", "ge": ">=", "eq": "=="}.get(self.kind)
        if op is None:
            return f"{describe(self.rhs)} % {describe(self.lhs)} == 0"
        return f"{describe(self.lhs)} {op} {describe(self.rhs)}"


def compile_check(c: Constraint) -> Callable[[Mapping[str, int]], bool]:
    """A fast Python function ``f(values) -> bool`` equal to ``c.holds(values)``: the same comparison of
    the same two expressions, compiled to Python source once (``model/expr.py: python_source``)."""
    check: Callable[[Mapping[str, int]], bool] = eval(f"lambda v: {_check_source(c)}")  # our own tree
    return check


def _check_source(c: Constraint) -> str:
    lhs, rhs = python_source(c.lhs), python_source(c.rhs)
    if c.kind == "le":
        return f"{lhs} <= {rhs}"
    if c.kind == "ge":
        return f"{lhs} >= {rhs}"
    if c.kind == "eq":
        return f"{lhs} == {rhs}"
    return f"({lhs} > 0 and {rhs} % {lhs} == 0)"


@dataclass(frozen=True, slots=True)
class LatencyTerm:
    """A named share of the latency on the critical path; the terms of a schedule sum to its latency."""

    name: str
    expr: Expr
    description: str


@dataclass(frozen=True, slots=True)
class L1Buffer:
    name: str
    bytes_expr: Expr
    description: str


@dataclass(frozen=True, slots=True)
class SymbolicSchedule:
    hardware: HardwareSpec
    problem: Problem
    candidate: Candidate
    params: tuple[Param, ...]
    constraints: tuple[Constraint, ...]
    latency: Expr
    latency_lower_bound: Expr
    terms: tuple[LatencyTerm, ...]
    l1_buffers: tuple[L1Buffer, ...]
    l1_bytes: Expr
    dram_read_bytes: Expr
    flops: int
    ideal_cycles: int
    traffic: tuple[TrafficFlow, ...] = ()
    noc_bound_cycles: Expr = Const(0)
    cores_used: Expr = Const(1)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.family for c in self.constraints))


def latency_floor(schedule: SymbolicSchedule) -> int:
    """A lower bound of the latency of every legal schedule of this candidate, in cycles, the largest of:

    * the interval lower bounds (:func:`~loom_explorer.model.expr.bounds`, exact integers of any size) of the
      latency and of its redundant lower bound over the parameters' domains: sound over the whole domain,
      illegal points included, and tight for a contraction because ``per_core_d`` starts at
      ``ceil(E_d / cores)`` (``model/quantities.py: spread_domain``);
    * ``ideal_cycles``, the compute roofline: every tile matmul of the problem is done by some core, the
      slowest core does at least the average over all the chip's cores, and its latency counts each of its
      tile matmuls at ``c_f`` cycles (checked on every legal schedule:
      ``tests/families/contraction/test_lower_bound.py``,
      ``tests/families/attention/test_attention_model.py``). Attention's interval bound is weak (its chunk counts
      divide by the chunk sizes), this one is not."""
    return max(bounds(schedule.latency)[0], bounds(schedule.latency_lower_bound)[0], schedule.ideal_cycles)
