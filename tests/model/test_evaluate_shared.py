"""``evaluate`` with a memo shared across the expressions of one schedule (what the referee of stored answers
does) gives exactly the values of separate evaluations, on every node kind and on real schedules."""

from __future__ import annotations

import pytest

from loom_explorer.hardware import load_hardware
from loom_explorer.model.domain import Domain
from loom_explorer.model.expr import Var, ceil_div, choice, evaluate, floor_div, lookup, maximum, minimum, select
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session


def test_every_node_kind_with_a_shared_memo() -> None:
    a, b, c = Var("a", Domain.of([1, 2, 3])), Var("b", Domain.of([1, 4])), Var("c", Domain.of([0, 1]))
    shared_sub = ceil_div(a * 7 + b, b)  # met by several expressions below
    table: dict[tuple[int, ...], int] = {(x, y): x * 100 + y for x in (1, 2, 3) for y in (1, 4)}
    exprs = [
        shared_sub + maximum(a, b * 2),
        floor_div(shared_sub * 3, a) - minimum(a, b),
        choice(c, shared_sub, a),
        select(a, {1: 10, 2: 20, 3: 30}) * lookup((a, b), table),
    ]
    for va in (1, 2, 3):
        for vb in (1, 4):
            for vc in (0, 1):
                values = {"a": va, "b": vb, "c": vc}
                memo: dict[int, int] = {}
                assert [evaluate(e, values, memo) for e in exprs] == [evaluate(e, values) for e in exprs]
                assert memo  # the shared sub-tree's value was kept


@pytest.mark.parametrize(
    ("kernel", "shape"), [("gemm", "M=256,K=512,N=384"), ("flash_attention", "B=1,H=4,Sq=256,Skv=512,D=64")]
)
def test_real_schedules_with_a_shared_memo(kernel: str, shape: str) -> None:
    session = Session(load_hardware("wormhole_n150"), make_problem(load_program(kernel), shape))
    compared = 0
    for schedule in session.schedules:
        values = {p.name: p.values[len(p.values) // 2] for p in schedule.params}  # any point, legal or not
        exprs = [t.expr for t in schedule.terms] + [schedule.l1_bytes, schedule.dram_read_bytes]
        try:
            alone = [evaluate(e, values) for e in exprs]
        except (ArithmeticError, LookupError):
            continue  # a point outside the model's tables: no value to compare
        shared: dict[int, int] = {}
        assert [evaluate(e, values, shared) for e in exprs] == alone
        compared += 1
    assert compared >= len(session.schedules) // 2
