"""``bounds``: the interval of an expression over its variables' domains, at the points where it is defined.

A division is defined only where its divisor is >= 1 (``evaluate`` raises elsewhere; CP-SAT's definition has
no solution there), so ``bounds`` is checked against every *defined* point: for random trees whose divisors'
domains may reach 0 or below, and numerators of either sign, the interval contains every value ``evaluate``
gives (exhaustively over the domains), and it never raises. A divisor with no positive value at all (the
reported crash: a multicast group ``floor(4 / per_core_H)`` with ``per_core_H`` in 5..32) leaves the expression
defined nowhere; its bound is then finite and CP-SAT finds its compiled model infeasible.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from loom_explorer.model.expr import (
    CeilDiv,
    Const,
    Expr,
    FloorDiv,
    Max,
    Min,
    Prod,
    Sum,
    Var,
    add,
    bounds,
    ceil_div,
    evaluate,
    floor_div,
    maximum,
    minimum,
    mul,
    variable_nodes,
)
from loom_explorer.solve.cpsat import CpCompiler

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _domain() -> st.SearchStrategy[tuple[int, ...]]:
    """A small domain of integers, often containing 0 and negatives, sometimes gapped."""
    return st.lists(st.integers(-6, 9), min_size=1, max_size=4, unique=True).map(lambda xs: tuple(sorted(xs)))


NAMES = ("v0", "v1", "v2")


def _division(node: type[CeilDiv] | type[FloorDiv], num: Expr, den: Expr) -> Expr:
    """The raw node for a variable divisor (what the model builds, e.g. ``floor(4 / per_core_H)``); a constant
    divisor goes through the constructor, which refuses one <= 0 (so none is ever built): 1 instead."""
    if isinstance(den, Const):
        return (ceil_div if node is CeilDiv else floor_div)(num, max(den.value, 1))
    return node(num, den)


def _extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    pair = st.tuples(children, children)
    return st.one_of(
        pair.map(lambda t: add(*t)),
        pair.map(lambda t: t[0] - t[1]),
        pair.map(lambda t: mul(*t)),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: maximum(*xs)),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: minimum(*xs)),
        # division nodes whose divisor's domain may include 0 and negatives, the numerator of any sign
        pair.map(lambda t: _division(CeilDiv, *t)),
        pair.map(lambda t: _division(FloorDiv, *t)),
    )


# the tree's shape over placeholder variables (one strategy, built once); the domains are drawn per example
SHAPES = st.recursive(
    st.one_of(st.integers(-4, 9).map(lambda c: add(c)), st.sampled_from([Var(n, (0,)) for n in NAMES])),  # type: ignore[arg-type]
    _extend,
    max_leaves=8,
)


def _substitute(expr: Expr, domains: dict[str, tuple[int, ...]]) -> Expr:
    """``expr`` with each variable given its domain from ``domains``."""
    if isinstance(expr, Var):
        return Var(expr.name, domains[expr.name])  # type: ignore[arg-type]
    if isinstance(expr, (Sum, Prod, Max, Min)):
        parts = tuple(
            _substitute(e, domains)
            for e in (expr.terms if isinstance(expr, Sum) else expr.factors if isinstance(expr, Prod) else expr.args)
        )
        return type(expr)(parts)
    if isinstance(expr, (CeilDiv, FloorDiv)):
        return type(expr)(_substitute(expr.num, domains), _substitute(expr.den, domains))
    return expr


@st.composite
def trees(draw: st.DrawFn) -> Expr:
    shape = draw(SHAPES)
    return _substitute(shape, {n: draw(_domain()) for n in NAMES})


def defined_values(expr: Expr) -> list[int]:
    """``evaluate`` at every point of the domains where every divisor is positive."""
    nodes = variable_nodes(expr)
    names = sorted(nodes)
    seen = []
    for combo in itertools.product(*(nodes[n].values for n in names)):
        try:
            seen.append(evaluate(expr, dict(zip(names, combo, strict=True))))
        except ZeroDivisionError:
            continue
    return seen


@SETTINGS
@given(trees())
def test_bounds_contain_every_defined_value(expr: Expr) -> None:
    lo, hi = bounds(expr)
    assert lo <= hi
    for value in defined_values(expr):
        assert lo <= value <= hi, f"{expr} = {value} outside [{lo}, {hi}]"


def _interval() -> st.SearchStrategy[range]:
    return st.tuples(st.integers(-9, 9), st.integers(0, 8)).map(lambda t: range(t[0], t[0] + t[1] + 1))


@SETTINGS
@given(st.tuples(_interval(), _interval(), st.booleans()))
def test_division_bounds_are_tight_on_a_box(case: tuple[range, range, bool]) -> None:
    """For one division of two variables with interval domains, the interval is exactly the range over the
    defined points (the corners of the monotone quotient), whenever there is one."""
    num_values, den_values, ceil = case
    n, d = Var("n", num_values), Var("d", den_values)  # type: ignore[arg-type]
    expr = CeilDiv(n, d) if ceil else FloorDiv(n, d)
    seen = defined_values(expr)
    lo, hi = bounds(expr)
    if seen:
        assert (lo, hi) == (min(seen), max(seen))
    else:  # the divisor has no positive value: defined nowhere, any finite interval is sound
        assert lo <= hi


def _cp_range(expr: Expr) -> tuple[int, int] | None:
    """CP-SAT's minimum and maximum of the compiled expression, or None when the model is infeasible."""
    out = []
    for maximise in (False, True):
        model = cp_model.CpModel()
        target = CpCompiler(model).as_var(expr)
        model.maximize(target) if maximise else model.minimize(target)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        status = solver.solve(model)
        if status == cp_model.INFEASIBLE:
            return None
        assert status == cp_model.OPTIMAL
        out.append(int(solver.objective_value))
    return out[0], out[1]


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(trees())
def test_cpsat_range_is_the_defined_range(expr: Expr) -> None:
    """The compiled model (whose auxiliaries take their domains from ``bounds``) reaches exactly the values
    of the defined points: a bound cut too tight would lose one, a division by a non-positive divisor would
    add one; with no defined point the model is infeasible."""
    seen = defined_values(expr)
    got = _cp_range(expr)
    if not seen:
        assert got is None
    else:
        assert got == (min(seen), max(seen))


def test_the_reported_multicast_group() -> None:
    """``ceil(cores / floor(4 / per_core_H))`` with ``per_core_H`` in 5..32 (flash_attention, H=32, Hkv=8 on the
    n300's 7 rows): the divisor is 0 everywhere; the bound used to divide by it (ZeroDivisionError)."""
    per_core_h = Var("per_core_H", range(5, 33))  # type: ignore[arg-type]
    cores = Var("cores", range(1, 57))  # type: ignore[arg-type]
    readers = ceil_div(cores, floor_div(4, per_core_h))
    assert bounds(floor_div(4, per_core_h)) == (0, 0)
    lo, hi = bounds(readers)
    assert lo <= hi
    assert defined_values(readers) == []
    assert _cp_range(readers) is None


@pytest.mark.parametrize(
    "num, den, expected",
    [
        ((0, 10), (0, 3), (0, 10)),  # the divisor's 0 excluded: d in 1..3; ceil(0/3) = 0, ceil(10/1) = 10
        ((-7, 5), (1, 4), (-7, 5)),  # numerators of both signs: ceil(-7/1) = -7, ceil(5/1) = 5
        ((-7, -3), (-2, 4), (-7, 0)),  # negative only, d in 1..4: ceil(-7/1) = -7, ceil(-3/4) = 0
        ((-7, -3), (2, 4), (-3, 0)),  # ceil(-7/2) = -3 and ceil(-7/4) = -1: the minimum at the smaller divisor
    ],
)
def test_ceil_division_corners(num: tuple[int, int], den: tuple[int, int], expected: tuple[int, int]) -> None:
    n, d = Var("n", range(num[0], num[1] + 1)), Var("d", range(den[0], den[1] + 1))  # type: ignore[arg-type]
    seen = defined_values(CeilDiv(n, d))
    assert bounds(CeilDiv(n, d)) == expected == (min(seen), max(seen))
