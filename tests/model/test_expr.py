"""The expression layer: one tree, three interpreters that must agree.

For random trees (hypothesis, derandomised so CI is reproducible) built with the package's smart
constructors over a few variables with awkward domains (negative values, zero, a 0/1 variable, a fixed
variable, gaps):

* ``evaluate(expr, values) == compile_python(expr)(values)``;
* the CP-SAT value of the compiled tree with every variable fixed is the same number, and CP-SAT finds the
  assignment feasible (an auxiliary variable whose bounds were computed too tight would make it
  infeasible);
* ``bounds(expr)`` contains the value; ``describe(expr)`` is text mentioning every variable;
* minimising/maximising the compiled tree over the free variables gives the brute-force min/max over the
  domains (so no auxiliary bound cuts off a reachable value).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from loom_explorer.model.expr import (
    Const,
    Expr,
    Prod,
    Var,
    add,
    bounds,
    ceil_div,
    ceil_rate,
    choice,
    compile_python,
    const,
    describe,
    evaluate,
    floor_div,
    lookup,
    maximum,
    minimum,
    mul,
    python_source,
    select,
    variable_nodes,
    variables,
)
from loom_explorer.solve.cpsat import CpCompiler

VARS = {
    "a": Var("a", (-3, -1, 0, 2, 5)),  # type: ignore[arg-type]
    "b": Var("b", (0, 1)),  # type: ignore[arg-type]
    "c": Var("c", (1, 2, 3, 4, 7)),  # type: ignore[arg-type]
    "d": Var("d", (4,)),  # type: ignore[arg-type]
    "e": Var("e", (0, 1, 2, 3, 5, 8)),  # type: ignore[arg-type]
}
SELECT_KEYS = [VARS["a"], VARS["c"], VARS["e"]]
TABLE_KEYS = [(VARS["c"], VARS["e"]), (VARS["a"], VARS["b"])]


def _select(key: Var) -> st.SearchStrategy[Expr]:
    n = len(key.values)
    return st.lists(st.integers(-20, 40), min_size=n, max_size=n).map(
        lambda vals: select(key, dict(zip(key.values, vals, strict=True)))
    )


def _lookup(keys: tuple[Var, Var]) -> st.SearchStrategy[Expr]:
    """A table over two variables (the per-grid-shape link coefficients' form); in a product it compiles
    to one reified equality per key combination (``CpCompiler._table_product``)."""
    combos = list(itertools.product(keys[0].values, keys[1].values))
    return st.lists(st.integers(-5, 30), min_size=len(combos), max_size=len(combos)).map(
        lambda vals: lookup(keys, dict(zip(combos, vals, strict=True)))
    )


LEAVES = st.one_of(
    st.integers(-6, 12).map(const),
    st.sampled_from(list(VARS.values())),
    st.sampled_from(SELECT_KEYS).flatmap(_select),
    st.sampled_from(TABLE_KEYS).flatmap(_lookup),
)


def _extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    pair = st.tuples(children, children)
    nonneg = children.map(lambda e: maximum(e, 0))
    positive = children.map(lambda e: maximum(e, 1))
    return st.one_of(
        pair.map(lambda t: add(*t)),
        pair.map(lambda t: t[0] - t[1]),
        pair.map(lambda t: mul(*t)),
        st.tuples(st.integers(-4, 5), children).map(lambda t: mul(t[0], t[1])),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: maximum(*xs)),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: minimum(*xs)),
        st.tuples(nonneg, positive).map(lambda t: ceil_div(*t)),
        st.tuples(nonneg, positive).map(lambda t: floor_div(*t)),
        st.tuples(nonneg, st.integers(1, 9)).map(lambda t: ceil_div(*t)),
        st.tuples(nonneg, st.integers(1, 9)).map(lambda t: floor_div(*t)),
        st.tuples(nonneg, st.sampled_from([22.3, 15, 29, 0.5, Fraction(7, 3)])).map(lambda t: ceil_rate(*t)),  # type: ignore[arg-type]
        st.tuples(children, children).map(lambda t: choice(VARS["b"], t[0], t[1])),
    )


TREES = st.recursive(LEAVES, _extend, max_leaves=14)


def _assignment(expr: Expr) -> st.SearchStrategy[dict[str, int]]:
    nodes = variable_nodes(expr)
    return st.fixed_dictionaries({n: st.sampled_from(v.values) for n, v in nodes.items()})


@st.composite
def tree_and_values(draw):
    expr = draw(TREES)
    return expr, draw(_assignment(expr))


def cp_value(expr: Expr, values: dict[str, int]) -> int:
    """Compile ``expr`` with CpCompiler, fix every variable, return CP-SAT's value of the tree."""
    model = cp_model.CpModel()
    compiler = CpCompiler(model)
    target = compiler.as_var(expr)
    for name, var in compiler.vars.items():
        model.add(var == values[name])
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    status = solver.solve(model)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE), (
        f"CP-SAT finds the fixed assignment {values} infeasible for {describe(expr)}"
    )
    return int(solver.value(target))


def cp_extreme(expr: Expr, maximise: bool) -> int:
    model = cp_model.CpModel()
    target = CpCompiler(model).as_var(expr)
    model.maximize(target) if maximise else model.minimize(target)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    return int(solver.objective_value)


SETTINGS = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(tree_and_values())
def test_three_interpreters_agree(case):
    expr, values = case
    value = evaluate(expr, values)
    assert compile_python(expr)(values) == value
    lo, hi = bounds(expr)
    assert lo <= value <= hi, f"{describe(expr)} = {value} outside bounds [{lo}, {hi}]"
    assert cp_value(expr, values) == value
    text = describe(expr)
    assert isinstance(text, str) and text
    assert str(expr) == text if not isinstance(expr, Const) else True
    for name in variables(expr):
        assert name in text


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(TREES)
def test_cpsat_extremes_match_exhaustive_evaluation(expr):
    nodes = variable_nodes(expr)
    names = sorted(nodes)
    seen = [
        evaluate(expr, dict(zip(names, combo, strict=True)))
        for combo in itertools.product(*(nodes[n].values for n in names))
    ]
    lo, hi = bounds(expr)
    assert lo <= min(seen) and max(seen) <= hi
    assert cp_extreme(expr, maximise=False) == min(seen)
    assert cp_extreme(expr, maximise=True) == max(seen)


# ------------------------------------------------------------------------------------ hand-picked cases

X = Var("x", (1, 2, 3, 6))  # type: ignore[arg-type]
Y = Var("y", (2, 5))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "expr, values, expected",
    [
        (ceil_div(X * 7, 4), {"x": 3}, 6),
        (floor_div(X * 7, 4), {"x": 3}, 5),
        (ceil_div(7, X), {"x": 2}, 4),
        (floor_div(Y * X, X + 1), {"x": 6, "y": 5}, 4),
        (ceil_rate(X * 100, 22.3), {"x": 2}, 9),  # 200 / 22.3 = 8.97
        (maximum(X, Y, 4), {"x": 3, "y": 2}, 4),
        (minimum(X - 5, Y), {"x": 1, "y": 2}, -4),
        (select(X, {1: 10, 2: 20, 3: 30, 6: 60}), {"x": 6}, 60),
        (choice(Var("f", (0, 1)), X, Y), {"f": 0, "x": 1, "y": 5}, 5),  # type: ignore[arg-type]
        (X * Y * X, {"x": 3, "y": 5}, 45),
        (2 * X - 3 * Y + 1, {"x": 6, "y": 2}, 7),
    ],
)
def test_known_values(expr, values, expected):
    assert evaluate(expr, values) == expected
    assert compile_python(expr)(values) == expected
    assert cp_value(expr, values) == expected


@pytest.mark.parametrize("side", [3, 20])  # 9 combinations: reified equalities; 400: one multiplication
def test_table_products_both_encodings(side):
    """``table[g1, g2] * x`` and ``ceil(table * x / 7)`` take every value exhaustive evaluation gives, with
    the table small enough for one reified equality per combination and too large for it."""
    g1, g2 = Var("g1", tuple(range(1, side + 1))), Var("g2", tuple(range(1, side + 1)))  # type: ignore[arg-type]
    table = lookup((g1, g2), {(i, j): (i * 7 + j * 3) % 11 for i in g1.values for j in g2.values})
    xs = Var("xs", (1, 4, 9))  # type: ignore[arg-type]
    for expr in (mul(table, xs), ceil_rate(mul(xs, 5, table), 7), mul(table, xs, xs)):
        for values in ({"g1": 1, "g2": side, "xs": 9}, {"g1": side, "g2": 2, "xs": 4}, {"g1": 2, "g2": 3, "xs": 1}):
            assert cp_value(expr, values) == evaluate(expr, values)
        seen = [evaluate(expr, {"g1": i, "g2": j, "xs": x}) for i in g1.values for j in g2.values for x in xs.values]
        assert (cp_extreme(expr, maximise=False), cp_extreme(expr, maximise=True)) == (min(seen), max(seen))


def test_smart_constructors_fold_constants():
    assert add(2, 3) == Const(5)
    assert mul(X, 0) == Const(0)
    assert mul(1, X) is X
    assert ceil_div(X, 1) is X
    assert ceil_div(7, 2) == Const(4)
    assert maximum(X, X) is X
    assert select(X, {1: 4, 2: 4, 3: 4, 6: 4}) == Const(4)
    assert choice(Var("f", (0, 1)), X, X) is X  # type: ignore[arg-type]


def test_constructor_errors():
    with pytest.raises(ValueError):
        Var("empty", ())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ceil_div(X, 0)
    with pytest.raises(ValueError):
        select(X, {1: 1, 2: 2})  # 3 and 6 missing
    with pytest.raises(ValueError):
        choice(X, 1, 2)  # not a 0/1 variable
    with pytest.raises(TypeError):
        const(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ceil_rate(X, 0)


def test_evaluate_names_a_missing_variable():
    with pytest.raises(KeyError, match="x"):
        evaluate(X + 1, {})


def test_describe_reads_as_maths():
    text = describe(maximum(ceil_div(X * 4096, 22), Y) - 3)
    assert "ceil(" in text and "max(" in text and "4096" in text and "- 3" in text
    assert "v['x']" in python_source(X)


def test_raw_product_of_constants_compiles():
    expr = Prod((Const(2), Const(3)))
    assert evaluate(expr, {}) == 6 == compile_python(expr)({})
    assert cp_value(expr, {}) == 6
