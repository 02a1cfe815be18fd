"""Symbolic integer expressions: one tree, three interpreters.

Every latency term and every constraint side of a schedule is an :class:`Expr`. The same tree is

* evaluated on plain Python integers (:func:`evaluate`) by the referee and the brute-force enumerator,
* compiled to CP-SAT (:class:`loom_explorer.solve.cpsat.CpCompiler`) by the solver, and
* described as text (:func:`describe`) for the docs, the CLI and the app,

so the solver, the referee and the picture cannot drift apart.

All values are integers (cycles, bytes, tiles). Division is exact integer division: ``CeilDiv(a, b)`` is
``ceil(a / b)`` for ``b > 0`` and ``FloorDiv(a, b)`` is ``floor(a / b)``; rates that are not integers
(e.g. 22.2 bytes/cycle) are written as ``CeilDiv(bytes * 10, 222)`` by :func:`ceil_rate`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from itertools import product
from typing import Union

from loom_explorer.errors import LoomError
from loom_explorer.model.domain import Domain

ExprLike = Union["Expr", int]

# a lookup table (``select``, ``lookup``) lists every value of its keys' domains: at most this many rows
MAX_TABLE_ROWS = 1 << 16


class ModelRangeError(LoomError, ValueError):
    """The problem's numbers exceed what the integer model represents (or can build in bounded work)."""


class Expr:
    """Base class of expression nodes; arithmetic operators build new nodes."""

    __slots__ = ()

    def __add__(self, other: ExprLike) -> Expr:
        return add(self, other)

    def __radd__(self, other: ExprLike) -> Expr:
        return add(other, self)

    def __sub__(self, other: ExprLike) -> Expr:
        return add(self, mul(-1, other))

    def __rsub__(self, other: ExprLike) -> Expr:
        return add(other, mul(-1, self))

    def __mul__(self, other: ExprLike) -> Expr:
        return mul(self, other)

    def __rmul__(self, other: ExprLike) -> Expr:
        return mul(other, self)

    def __str__(self) -> str:
        return describe(self)


@dataclass(frozen=True, slots=True)
class Const(Expr):
    value: int


@dataclass(frozen=True, slots=True)
class Var(Expr):
    """An integer unknown with a finite domain (a schedule parameter or an auxiliary).

    ``values`` is a :class:`~loom_explorer.model.domain.Domain` (intervals: ``1..E`` costs the same for any
    extent ``E``); an explicit collection of integers given instead is converted to one."""

    name: str
    values: Domain

    def __post_init__(self) -> None:
        if not isinstance(self.values, Domain):
            object.__setattr__(self, "values", Domain.of(self.values))
        if not self.values:
            raise ValueError(f"variable {self.name!r} has an empty domain")


@dataclass(frozen=True, slots=True)
class Sum(Expr):
    terms: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Prod(Expr):
    factors: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class CeilDiv(Expr):
    num: Expr
    den: Expr


@dataclass(frozen=True, slots=True)
class FloorDiv(Expr):
    num: Expr
    den: Expr


@dataclass(frozen=True, slots=True)
class Max(Expr):
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Min(Expr):
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Select(Expr):
    """``table[key]``: a constant looked up by the value of a variable (every domain value listed)."""

    key: Var
    table: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Table(Expr):
    """``table[(k1, k2, ...)]``: a constant looked up by the values of several variables (every
    combination of their domains listed), e.g. a per-grid-shape coefficient indexed by (grid_x, grid_y)."""

    keys: tuple[Var, ...]
    table: tuple[tuple[tuple[int, ...], int], ...]


@dataclass(frozen=True, slots=True)
class Choice(Expr):
    """``if_true`` when the 0/1 variable ``cond`` is 1, else ``if_false``."""

    cond: Var
    if_true: Expr
    if_false: Expr


def const(value: ExprLike) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expressions take integers, got {value!r}")
    return Const(value)


def add(*operands: ExprLike) -> Expr:
    """Sum with constants folded and nested sums flattened."""
    terms: list[Expr] = []
    total = 0
    for op in operands:
        e = const(op)
        parts = e.terms if isinstance(e, Sum) else (e,)
        for p in parts:
            if isinstance(p, Const):
                total += p.value
            else:
                terms.append(p)
    if total:
        terms.append(Const(total))
    if not terms:
        return Const(0)
    return terms[0] if len(terms) == 1 else Sum(tuple(terms))


def total(operands: Iterable[ExprLike]) -> Expr:
    return add(*operands)


def mul(*operands: ExprLike) -> Expr:
    """Product with constants folded (a zero constant gives zero) and nested products flattened."""
    factors: list[Expr] = []
    coeff = 1
    for op in operands:
        e = const(op)
        parts = e.factors if isinstance(e, Prod) else (e,)
        for p in parts:
            if isinstance(p, Const):
                coeff *= p.value
            else:
                factors.append(p)
    if coeff == 0 or not factors:
        return Const(coeff)
    if coeff != 1:
        factors.insert(0, Const(coeff))
    return factors[0] if len(factors) == 1 else Prod(tuple(factors))


def ceil_div(num: ExprLike, den: ExprLike) -> Expr:
    n, d = const(num), const(den)
    if isinstance(d, Const):
        if d.value <= 0:
            raise ValueError("ceil_div needs a positive divisor")
        if d.value == 1:
            return n
        if isinstance(n, Const):
            return Const(-(-n.value // d.value))
    return CeilDiv(n, d)


def floor_div(num: ExprLike, den: ExprLike) -> Expr:
    n, d = const(num), const(den)
    if isinstance(d, Const):
        if d.value <= 0:
            raise ValueError("floor_div needs a positive divisor")
        if d.value == 1:
            return n
        if isinstance(n, Const):
            return Const(n.value // d.value)
    return FloorDiv(n, d)


def ceil_rate(amount: ExprLike, rate: float | Fraction, max_denominator: int = 1000) -> Expr:
    """``ceil(amount / rate)`` for a positive rational rate (e.g. bytes over bytes/cycle -> cycles)."""
    frac = Fraction(rate).limit_denominator(max_denominator)
    if frac <= 0:
        raise ValueError(f"rate must be positive, got {rate}")
    return ceil_div(mul(amount, frac.denominator), frac.numerator)


def maximum(*args: ExprLike) -> Expr:
    items = _dedupe(const(a) for a in args)
    consts = [a.value for a in items if isinstance(a, Const)]
    rest = [a for a in items if not isinstance(a, Const)]
    if consts:
        rest.append(Const(max(consts)))
    return rest[0] if len(rest) == 1 else Max(tuple(rest))


def minimum(*args: ExprLike) -> Expr:
    items = _dedupe(const(a) for a in args)
    consts = [a.value for a in items if isinstance(a, Const)]
    rest = [a for a in items if not isinstance(a, Const)]
    if consts:
        rest.append(Const(min(consts)))
    return rest[0] if len(rest) == 1 else Min(tuple(rest))


def _table_rows(keys: tuple[Var, ...]) -> int:
    rows = 1
    for k in keys:
        rows *= k.values.size
    if rows > MAX_TABLE_ROWS:
        raise ModelRangeError(
            f"a lookup table over {', '.join(k.name for k in keys)} would list {rows:,} rows, "
            f"more than the model's {MAX_TABLE_ROWS:,}"
        )
    return rows


def select(key: Var, table: Mapping[int, int]) -> Expr:
    _table_rows((key,))
    missing = [v for v in key.values if v not in table]
    if missing:
        raise ValueError(f"select on {key.name} lacks entries for {missing}")
    values = {table[v] for v in key.values}
    if len(values) == 1:
        return Const(values.pop())
    return Select(key, tuple((v, table[v]) for v in key.values))


def lookup(keys: tuple[Var, ...], table: Mapping[tuple[int, ...], int]) -> Expr:
    """``table[(k1, ...)]`` over every combination of the keys' domain values (a constant when they agree)."""
    _table_rows(keys)
    combos = list(product(*(k.values for k in keys)))
    missing = [c for c in combos if c not in table]
    if missing:
        raise ValueError(f"lookup on {[k.name for k in keys]} lacks entries for {missing[:4]}")
    values = {table[c] for c in combos}
    if len(values) == 1:
        return Const(values.pop())
    return Table(keys, tuple((c, table[c]) for c in combos))


def choice(cond: Var, if_true: ExprLike, if_false: ExprLike) -> Expr:
    if cond.values.min < 0 or cond.values.max > 1:
        raise ValueError(f"choice needs a 0/1 variable, {cond.name} has {cond.values}")
    t, f = const(if_true), const(if_false)
    if t == f:
        return t
    return Choice(cond, t, f)


def _dedupe(items: Iterable[Expr]) -> list[Expr]:
    out: list[Expr] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


# --------------------------------------------------------------------------------------- interpreters


def evaluate(expr: Expr, values: Mapping[str, int], memo: dict[int, int] | None = None) -> int:
    """The value of ``expr`` for an assignment of every variable it mentions (plain Python ints).

    A sub-tree met twice (the trees are DAGs: a per-core block count feeds several terms) is evaluated once:
    ``memo`` maps a node's ``id`` to its value for these ``values``; pass one dict to several calls to share
    it across expressions of one schedule (never across assignments). Each node kind is evaluated by its
    entry of ``_EVALUATORS`` (a lookup by type, not a chain of ``isinstance`` tests: the referee's cost)."""
    return _value(expr, values, {} if memo is None else memo)


def _value(expr: Expr, values: Mapping[str, int], memo: dict[int, int]) -> int:
    kind = type(expr)
    if kind is Const:
        return expr.value  # type: ignore[attr-defined, no-any-return]
    if kind is Var:
        name: str = expr.name  # type: ignore[attr-defined]
        try:
            return values[name]
        except KeyError:
            raise KeyError(f"no value for variable {name!r}") from None
    key = id(expr)
    found = memo.get(key)
    if found is None:
        evaluator = _EVALUATORS.get(kind)
        if evaluator is None:
            raise TypeError(f"unknown expression node {kind.__name__}")
        found = memo[key] = evaluator(expr, values, memo)
    return found


def _sum(e: Sum, v: Mapping[str, int], m: dict[int, int]) -> int:
    out = 0
    for term in e.terms:
        out += _value(term, v, m)
    return out


def _prod(e: Prod, v: Mapping[str, int], m: dict[int, int]) -> int:
    out = 1
    for factor in e.factors:
        out *= _value(factor, v, m)
    return out


def _divisor(e: CeilDiv | FloorDiv, v: Mapping[str, int], m: dict[int, int]) -> int:
    den = _value(e.den, v, m)
    if den <= 0:
        raise ZeroDivisionError(f"divisor {describe(e.den)} = {den}")
    return den


def _ceil_div(e: CeilDiv, v: Mapping[str, int], m: dict[int, int]) -> int:
    den = _divisor(e, v, m)
    return -(-_value(e.num, v, m) // den)


def _floor_div(e: FloorDiv, v: Mapping[str, int], m: dict[int, int]) -> int:
    den = _divisor(e, v, m)
    return _value(e.num, v, m) // den


def _select(e: Select, v: Mapping[str, int], m: dict[int, int]) -> int:
    key = _value(e.key, v, m)
    for k, value in e.table:
        if k == key:
            return value
    raise KeyError(f"{e.key.name}={key} is outside its table")


def _table(e: Table, v: Mapping[str, int], m: dict[int, int]) -> int:
    keys = tuple([_value(k, v, m) for k in e.keys])
    for ks, value in e.table:
        if ks == keys:
            return value
    raise KeyError(f"{[k.name for k in e.keys]}={keys} is outside its table")


def _choice(e: Choice, v: Mapping[str, int], m: dict[int, int]) -> int:
    return _value(e.if_true if _value(e.cond, v, m) else e.if_false, v, m)


# each evaluator takes its own node type (the dict is keyed by it), hence ``...`` for the node argument
_EVALUATORS: dict[type, Callable[..., int]] = {
    Sum: _sum,
    Prod: _prod,
    CeilDiv: _ceil_div,
    FloorDiv: _floor_div,
    Max: lambda e, v, m: max([_value(a, v, m) for a in e.args]),
    Min: lambda e, v, m: min([_value(a, v, m) for a in e.args]),
    Select: _select,
    Table: _table,
    Choice: _choice,
}


def bounds(expr: Expr) -> tuple[int, int]:
    """Interval ``(lo, hi)`` that contains every value of ``expr`` over its variables' domains.

    A division is defined only where its divisor is positive (:func:`evaluate` raises elsewhere, and the
    CP-SAT definition ``p = q*d, n <= p <= n + d - 1`` has no solution for ``d <= 0``), so the interval is over
    the *defined* points: the assignments of the domains at which every divisor in ``expr`` is >= 1. Every
    rule below keeps that: a node's defined points are a subset of each child's, so a child's interval
    contains the child's value at each of them (:func:`_division_bounds` for the divisions)."""
    if isinstance(expr, Const):
        return expr.value, expr.value
    if isinstance(expr, Var):
        return expr.values.min, expr.values.max
    if isinstance(expr, Sum):
        bs = [bounds(t) for t in expr.terms]
        return sum(b[0] for b in bs), sum(b[1] for b in bs)
    if isinstance(expr, Prod):
        lo, hi = 1, 1
        for f in expr.factors:
            flo, fhi = bounds(f)
            corners = (lo * flo, lo * fhi, hi * flo, hi * fhi)
            lo, hi = min(corners), max(corners)
        return lo, hi
    if isinstance(expr, (CeilDiv, FloorDiv)):
        return _division_bounds(expr)
    if isinstance(expr, Max):
        bs = [bounds(a) for a in expr.args]
        return max(b[0] for b in bs), max(b[1] for b in bs)
    if isinstance(expr, Min):
        bs = [bounds(a) for a in expr.args]
        return min(b[0] for b in bs), min(b[1] for b in bs)
    if isinstance(expr, (Select, Table)):
        vals = [v for _, v in expr.table]
        return min(vals), max(vals)
    if isinstance(expr, Choice):
        (a, b), (c, d) = bounds(expr.if_true), bounds(expr.if_false)
        return min(a, c), max(b, d)
    raise TypeError(f"unknown expression node {type(expr).__name__}")


def _division_bounds(expr: CeilDiv | FloorDiv) -> tuple[int, int]:
    """Interval of ``ceil(n / d)`` or ``floor(n / d)`` over ``n`` in ``[n_lo, n_hi]`` and the divisor's legal
    part, ``d`` in ``[max(d_lo, 1), d_hi]`` (a divisor <= 0 leaves the division undefined: :func:`bounds`).

    For ``d >= 1`` the rounded quotient ``f(n, d)`` is nondecreasing in ``n``, and for a fixed ``n`` monotone
    in ``d`` (nonincreasing when ``n >= 0``, nondecreasing when ``n < 0``). So over the box its minimum is
    ``min(f(n_lo, d_lo), f(n_lo, d_hi))`` and its maximum ``max(f(n_hi, d_lo), f(n_hi, d_hi))``, for
    numerators of either sign; the divisor is never 0 in these corners.

    When ``d_hi < 1`` no value of the divisor's domain is legal: the division, and every expression containing
    it, is defined nowhere (a candidate whose every schedule is illegal, e.g. a multicast group
    ``floor(E_H/E_Hkv / per_core_H)`` on a grid whose ``per_core_H`` domain starts above the group). Any
    interval is then sound; the one returned treats the divisor as 1, ``f(n, 1) = n``, so the quotient keeps
    its numerator's interval and a caller building on it (``latency_floor``, the CP-SAT auxiliaries) stays
    finite and the solver, not this bound, reports the candidate infeasible."""
    nlo, nhi = bounds(expr.num)
    dlo, dhi = bounds(expr.den)
    dlo = max(dlo, 1)
    dhi = max(dhi, dlo)
    rnd: Callable[[int, int], int] = (lambda a, b: -(-a // b)) if isinstance(expr, CeilDiv) else (lambda a, b: a // b)
    return min(rnd(nlo, dlo), rnd(nlo, dhi)), max(rnd(nhi, dlo), rnd(nhi, dhi))


def variables(expr: Expr) -> frozenset[str]:
    """Names of every variable the expression mentions."""
    return frozenset(v.name for v in _vars(expr))


def variable_nodes(expr: Expr) -> dict[str, Var]:
    return {v.name: v for v in _vars(expr)}


def _vars(expr: Expr) -> Iterable[Var]:
    if isinstance(expr, Var):
        yield expr
    elif isinstance(expr, (Sum,)):
        for t in expr.terms:
            yield from _vars(t)
    elif isinstance(expr, Prod):
        for t in expr.factors:
            yield from _vars(t)
    elif isinstance(expr, (CeilDiv, FloorDiv)):
        yield from _vars(expr.num)
        yield from _vars(expr.den)
    elif isinstance(expr, (Max, Min)):
        for t in expr.args:
            yield from _vars(t)
    elif isinstance(expr, Select):
        yield expr.key
    elif isinstance(expr, Table):
        yield from expr.keys
    elif isinstance(expr, Choice):
        yield expr.cond
        yield from _vars(expr.if_true)
        yield from _vars(expr.if_false)


def describe(expr: Expr) -> str:
    """Readable infix text, e.g. ``max(T_mm, ceil(in0_block_w * 4096 / 22))``."""
    return _describe(expr, 0)


def _describe(expr: Expr, prec: int) -> str:
    # precedence: 0 top, 1 sum, 2 product
    if isinstance(expr, Const):
        return f"{expr.value}" if expr.value >= 0 or prec == 0 else f"({expr.value})"
    if isinstance(expr, Var):
        return expr.name
    if isinstance(expr, Sum):
        text = ""
        for i, t in enumerate(expr.terms):
            if isinstance(t, Prod) and isinstance(t.factors[0], Const) and t.factors[0].value < 0:
                neg = mul(-t.factors[0].value, *t.factors[1:])
                text += f" - {_describe(neg, 2)}" if i else f"-{_describe(neg, 2)}"
            elif isinstance(t, Const) and t.value < 0 and i:
                text += f" - {-t.value}"
            else:
                text += (" + " if i else "") + _describe(t, 1)
        return f"({text})" if prec > 1 else text
    if isinstance(expr, Prod):
        text = "*".join(_describe(f, 2) for f in expr.factors)
        return text
    if isinstance(expr, CeilDiv):
        return f"ceil({_describe(expr.num, 2)} / {_describe(expr.den, 2)})"
    if isinstance(expr, FloorDiv):
        return f"floor({_describe(expr.num, 2)} / {_describe(expr.den, 2)})"
    if isinstance(expr, Max):
        return "max(" + ", ".join(_describe(a, 0) for a in expr.args) + ")"
    if isinstance(expr, Min):
        return "min(" + ", ".join(_describe(a, 0) for a in expr.args) + ")"
    if isinstance(expr, Select):
        cases = ", ".join(f"{k}: {v}" for k, v in expr.table)
        return f"{expr.key.name}->{{{cases}}}"
    if isinstance(expr, Table):
        return f"table[{', '.join(k.name for k in expr.keys)}]"
    if isinstance(expr, Choice):
        return f"({expr.cond.name} ? {_describe(expr.if_true, 0)} : {_describe(expr.if_false, 0)})"
    raise TypeError(f"unknown expression node {type(expr).__name__}")


def python_source(expr: Expr) -> str:
    """Python source of ``expr`` over a mapping ``v`` of variable values (same semantics as evaluate)."""
    if isinstance(expr, Const):
        return repr(expr.value)
    if isinstance(expr, Var):
        return f"v[{expr.name!r}]"
    if isinstance(expr, Sum):
        return "(" + " + ".join(python_source(t) for t in expr.terms) + ")"
    if isinstance(expr, Prod):
        return "(" + " * ".join(python_source(f) for f in expr.factors) + ")"
    if isinstance(expr, CeilDiv):
        return f"(-(-{python_source(expr.num)} // {python_source(expr.den)}))"
    if isinstance(expr, FloorDiv):
        return f"({python_source(expr.num)} // {python_source(expr.den)})"
    if isinstance(expr, (Max, Min)):
        fn = "max" if isinstance(expr, Max) else "min"
        return f"{fn}(" + ", ".join(python_source(a) for a in expr.args) + ")"
    if isinstance(expr, Select):
        return f"{dict(expr.table)!r}[v[{expr.key.name!r}]]"
    if isinstance(expr, Table):
        keys = ", ".join(f"v[{k.name!r}]" for k in expr.keys)
        return f"{dict(expr.table)!r}[({keys},)]"
    if isinstance(expr, Choice):
        return f"({python_source(expr.if_true)} if v[{expr.cond.name!r}] else {python_source(expr.if_false)})"
    raise TypeError(f"unknown expression node {type(expr).__name__}")


def compile_python(expr: Expr) -> Callable[[Mapping[str, int]], int]:
    """A fast Python function ``f(values) -> int`` equal to ``evaluate(expr, values)``."""
    compiled: Callable[[Mapping[str, int]], int] = eval(f"lambda v: {python_source(expr)}")  # our own tree
    return compiled
