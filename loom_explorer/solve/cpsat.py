"""Compile :mod:`loom_explorer.model.expr` trees into a CP-SAT model.

Linear nodes (sums, constant multiples) stay linear expressions. Every nonlinear node becomes one
auxiliary integer variable whose bounds come from :func:`~loom_explorer.model.expr.bounds`, defined by
one CP-SAT constraint (always enforced: definitions never take part in a conflict):

* ``x*y``            -> ``AddMultiplicationEquality`` (products of more factors are chained pairwise)
* ``ceil(n / c)``    -> ``c*q >= n`` and ``c*q <= n + c - 1`` (linear for a constant ``c``)
* ``ceil(n / d)``    -> ``p = q*d``, ``p >= n``, ``p <= n + d - 1`` (``d`` a positive variable)
* ``floor(n / c)``   -> ``c*q <= n`` and ``c*q >= n - c + 1``
* ``max``/``min``    -> ``AddMaxEquality`` / ``AddMinEquality``
* ``table[key]``     -> ``AddAllowedAssignments([key, r], table)`` (several keys likewise)
* ``c ? a : b``      -> ``r == a`` if ``c``, ``r == b`` if not ``c`` (half-reified equalities)

Structurally equal sub-trees are compiled once (the nodes are frozen and hashable).
"""

from __future__ import annotations

from itertools import product

from ortools.sat.python import cp_model

from loom_explorer.model.expr import (
    CeilDiv,
    Choice,
    Const,
    Expr,
    FloorDiv,
    Max,
    Min,
    ModelRangeError,
    Prod,
    Select,
    Sum,
    Table,
    Var,
    bounds,
)
from loom_explorer.solve.options import LATENCY_LIMIT_CYCLES

Linear = cp_model.LinearExpr | int  # what compiling an expression gives: a CP-SAT expression or a constant

AUX_LIMIT = 2**59
# a product with a table of at most this many key combinations is one reified equality per combination
# (the per-grid-shape NoC link coefficients: 64 on an 8x8 grid, 130 on 13x10); a larger table (attention's
# 32x32 causal step table) stays one multiplication, measured faster there (docs/performance.md)
TABLE_PRODUCT_MAX_COMBOS = 256


__all__ = ["AUX_LIMIT", "LATENCY_LIMIT_CYCLES", "CpCompiler", "ModelRangeError", "domain"]


def domain(v: Var) -> cp_model.Domain:
    """``v``'s domain as a CP-SAT domain, interval by interval (never value by value). Values beyond
    ``AUX_LIMIT`` are outside the model's range (they would pass CP-SAT's int64 in any product)."""
    if v.values.max > AUX_LIMIT or v.values.min < -AUX_LIMIT:
        raise ModelRangeError(f"{v.name} ranges over {v.values.text()}, beyond the model's range of 2**59")
    return cp_model.Domain.from_flat_intervals(v.values.flat_intervals())


class CpCompiler:
    """Owns the mapping from expression nodes to CP-SAT variables/expressions of one model."""

    def __init__(self, model: cp_model.CpModel) -> None:
        self.model = model
        self.vars: dict[str, cp_model.IntVar] = {}
        self._cache: dict[Expr, Linear] = {}
        self._aux = 0
        self._combos: dict[tuple[Var, ...], dict[tuple[int, ...], cp_model.IntVar]] = {}

    # ---------------------------------------------------------------- variables
    def var(self, v: Var) -> cp_model.IntVar:
        existing = self.vars.get(v.name)
        if existing is not None:
            return existing
        if v.values.intervals == ((0, 1),):
            new = self.model.new_bool_var(v.name)
        else:
            new = self.model.new_int_var_from_domain(domain(v), v.name)
        self.vars[v.name] = new
        return new

    def _new_aux(self, lo: int, hi: int, hint: str) -> cp_model.IntVar:
        # Interval bounds multiply worst cases that never occur together and can pass int64 on huge shapes;
        # AUX_LIMIT keeps every auxiliary inside CP-SAT's range. It is exact as long as the latency is capped
        # at LATENCY_LIMIT_CYCLES (every auxiliary is at most the latency times a rate scale < 2**20).
        self._aux += 1
        lo, hi = max(lo, -AUX_LIMIT), min(hi, AUX_LIMIT)
        if lo > hi:
            raise ModelRangeError(f"an intermediate quantity of the model is at least {lo:,}, beyond its range")
        return self.model.new_int_var(lo, hi, f"_{hint}{self._aux}")

    # ---------------------------------------------------------------- compile
    def linear(self, expr: Expr) -> Linear:
        """A CP-SAT linear expression (or int) equal to ``expr``."""
        cached = self._cache.get(expr)
        if cached is not None:
            return cached
        out = self._compile(expr)
        self._cache[expr] = out
        return out

    def as_var(self, expr: Expr) -> cp_model.IntVar:
        """A CP-SAT variable equal to ``expr`` (introduces one when ``expr`` is not already a variable)."""
        lin = self.linear(expr)
        if isinstance(lin, cp_model.IntVar):
            return lin
        lo, hi = bounds(expr)
        aux = self._new_aux(lo, hi, "v")
        self.model.add(aux == lin)
        return aux

    def _compile(self, expr: Expr) -> Linear:
        if isinstance(expr, Const):
            return expr.value
        if isinstance(expr, Var):
            return self.var(expr)
        if isinstance(expr, Sum):
            return sum((self.linear(t) for t in expr.terms), 0)
        if isinstance(expr, Prod):
            return self._product(expr)
        if isinstance(expr, CeilDiv):
            return self._division(expr, ceil=True)
        if isinstance(expr, FloorDiv):
            return self._division(expr, ceil=False)
        if isinstance(expr, (Max, Min)):
            lo, hi = bounds(expr)
            target = self._new_aux(lo, hi, "max" if isinstance(expr, Max) else "min")
            args = [self.linear(a) for a in expr.args]
            if isinstance(expr, Max):
                self.model.add_max_equality(target, args)
            else:
                self.model.add_min_equality(target, args)
            return target
        if isinstance(expr, Select):
            lo, hi = bounds(expr)
            target = self._new_aux(lo, hi, "sel")
            self.model.add_allowed_assignments([self.var(expr.key), target], list(expr.table))
            return target
        if isinstance(expr, Table):
            lo, hi = bounds(expr)
            target = self._new_aux(lo, hi, "tab")
            self.model.add_allowed_assignments(
                [*(self.var(k) for k in expr.keys), target], [(*k, v) for k, v in expr.table]
            )
            return target
        if isinstance(expr, Choice):
            lo, hi = bounds(expr)
            target = self._new_aux(lo, hi, "ch")
            cond = self.var(expr.cond)
            self.model.add(target == self.linear(expr.if_true)).only_enforce_if(cond)
            self.model.add(target == self.linear(expr.if_false)).only_enforce_if(~cond)
            return target
        raise TypeError(f"cannot compile {type(expr).__name__}")

    def _product(self, expr: Prod) -> Linear:
        coeff = 1
        factors: list[Expr] = []
        for f in expr.factors:
            if isinstance(f, Const):
                coeff *= f.value
            else:
                factors.append(f)
        if not factors:
            return coeff
        if len(factors) == 1:
            return coeff * self._within(factors[0], self.linear(factors[0]), coeff)
        tables = [f for f in factors if isinstance(f, Table)]
        if len(tables) == 1 and len(tables[0].table) <= TABLE_PRODUCT_MAX_COMBOS:
            return coeff * self._within(Prod(tuple(factors)), self._table_product(tables[0], factors), coeff)
        # chain pairwise: ((f0*f1)*f2)*...
        acc: Expr = factors[0]
        acc_var: Linear = self.as_var(acc)
        for f in factors[1:]:
            acc = Prod((acc, f)) if not isinstance(acc, Prod) else Prod(acc.factors + (f,))
            cached = self._cache.get(acc)
            if cached is None:
                lo, hi = bounds(acc)
                target = self._new_aux(lo, hi, "mul")
                self.model.add_multiplication_equality(target, [acc_var, self.as_var(f)])
                self._cache[acc] = target
                cached = target
            acc_var = cached
        return coeff * self._within(acc, acc_var, coeff)

    def _table_product(self, table: Table, factors: list[Expr]) -> cp_model.IntVar:
        """``table[keys] * rest`` as one half-reified linear equality per key combination,
        ``[keys == k] => r == table[k]*rest``: no multiplication constraint (every candidate of six GEMM shapes,
        two seeds each: 58.1 s this way against 70.9 s with multiplications, measured 2026-12-03)."""
        rest_factors = [f for f in factors if f is not table]
        rest = rest_factors[0] if len(rest_factors) == 1 else Prod(tuple(rest_factors))
        rest_lin = self.linear(rest)
        lo, hi = bounds(Prod(tuple(factors)))
        target = self._new_aux(lo, hi, "tmul")
        for key, value in table.table:
            self.model.add(target == value * rest_lin).only_enforce_if(self._combo(table.keys, key))
        return target

    def _combo(self, keys: tuple[Var, ...], values: tuple[int, ...]) -> cp_model.IntVar:
        """A literal true exactly when ``keys == values`` (one-hot over every combination, made once)."""
        if keys not in self._combos:
            lits: dict[tuple[int, ...], cp_model.IntVar] = {}
            for combo in product(*(k.values for k in keys)):
                lit = self.model.new_bool_var(f"_is{combo}")
                for k, v in zip(keys, combo, strict=True):
                    self.model.add(self.var(k) == v).only_enforce_if(lit)
                lits[combo] = lit
            self.model.add_exactly_one(lits.values())
            self._combos[keys] = lits
        return self._combos[keys][values]

    def _within(self, expr: Expr, lin: Linear, coeff: int) -> Linear:
        """``lin`` (equal to ``expr``), restricted to ``|x| <= AUX_LIMIT/|coeff|`` so that ``coeff*x`` stays
        inside int64; exact for the same reason as AUX_LIMIT (``coeff*x`` is a quantity of the model)."""
        lo, hi = bounds(expr)
        limit = AUX_LIMIT // max(abs(coeff), 1)
        if hi <= limit and lo >= -limit:
            return lin
        scaled = self._new_aux(max(lo, -limit), min(hi, limit), "lim")
        self.model.add(scaled == lin)
        return scaled

    def _division(self, expr: CeilDiv | FloorDiv, ceil: bool) -> Linear:
        lo, hi = bounds(expr)
        if isinstance(expr.den, Const):  # keep c*q inside int64 (q is at most AUX_LIMIT/c, as its numerator is)
            lo, hi = max(lo, -AUX_LIMIT // expr.den.value), min(hi, AUX_LIMIT // expr.den.value)
        q = self._new_aux(lo, hi, "div")
        num = self.linear(expr.num)
        if isinstance(expr.den, Const):
            c = expr.den.value
            if ceil:
                self.model.add(c * q >= num)
                self.model.add(c * q <= num + c - 1)
            else:
                self.model.add(c * q <= num)
                self.model.add(c * q >= num - c + 1)
            return q
        den = self.as_var(expr.den)
        dlo, dhi = bounds(expr.den)
        # p = q*d at the defined points, d >= 1 (``bounds``): the corners of [lo, hi] x [max(dlo, 1), dhi]
        dlo = max(dlo, 1)
        corners = (lo * dlo, lo * max(dhi, dlo), hi * dlo, hi * max(dhi, dlo))
        p = self._new_aux(min(corners), max(corners), "prod")
        self.model.add_multiplication_equality(p, [q, den])
        if ceil:
            self.model.add(p >= num)
            self.model.add(p <= num + den - 1)
        else:
            self.model.add(p <= num)
            self.model.add(p >= num - den + 1)
        return q
