"""An answer the results store holds is refereed before it is served: a record edited by hand (a lower latency,
an illegal parameter, a pin not kept, a candidate missing, an unproven status) is not served; the solve runs
again, says why on stderr, and its proof replaces the record. Every solve is real."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loom_explorer import cli
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.memory import referee_answer, solve_with_memory
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.validate import restate

SHAPE = "M=128,K=256,N=128"
TWO = ["M@y,N@x|in0=mcast_x,in1=mcast_y", "N@y,M@x|in0=dram,in1=dram"]  # two candidates keep the tests quick
Edit = Callable[[list[dict[str, Any]]], None]


def session_for(hw_path: Path) -> Session:
    return Session(load_hardware(hw_path), make_problem(load_program("gemm"), SHAPE))


def edit_record(store: Path, edit: Edit) -> None:
    """Change the one proven solve the store holds, as a hand with a SQLite browser would."""
    with sqlite3.connect(store) as db:
        [(key, text)] = db.execute("SELECT key, results FROM solved").fetchall()
        results = json.loads(text)
        edit(results)
        db.execute("UPDATE solved SET results = ? WHERE key = ?", (json.dumps(results), key))


def _best(results: list[dict[str, Any]]) -> dict[str, Any]:
    return min((r for r in results if r["solution"]), key=lambda r: r["solution"]["latency_cycles"])


def _faster(results: list[dict[str, Any]]) -> None:
    _best(results)["solution"]["latency_cycles"] //= 3


def _illegal(results: list[dict[str, Any]]) -> None:
    params = _best(results)["solution"]["params"]
    params[[n for n, _ in params].index("in0_block_w")][1] = 999


def _breakdown(results: list[dict[str, Any]]) -> None:
    terms = _best(results)["solution"]["breakdown"]
    terms[0][1], terms[1][1] = terms[0][1] + 100, terms[1][1] - 100  # the same sum, other terms


def _dropped(results: list[dict[str, Any]]) -> None:
    results.pop()


def _unproven(results: list[dict[str, Any]]) -> None:
    _best(results)["status"] = "timeout"


def _infeasible(results: list[dict[str, Any]]) -> None:
    best = _best(results)
    best["status"], best["solution"] = "infeasible", None  # hides the fastest candidate: not re-proven, see below


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_faster, "where the model computes"),
        (_illegal, "illegal: in0_block_w: 999 is outside its domain"),
        (_breakdown, "its latency terms are not the model's"),
        (_dropped, "its candidates are not the"),
        (_unproven, "status 'timeout' is not a proven one"),
    ],
)
def test_an_edited_record_is_not_served_and_is_replaced(
    tiny_hw_path: Path, tmp_path: Path, edit: Edit, says: str
) -> None:
    store = tmp_path / "results.sqlite"
    first = solve_with_memory(session_for(tiny_hw_path), {}, SolveOptions(), TWO, store=store)
    edit_record(store, edit)
    again = solve_with_memory(session_for(tiny_hw_path), {}, SolveOptions(), TWO, store=store)
    assert again.proven_at is None  # solved, not served
    assert again.note.startswith("the answer the results store holds for this solve (proven ")
    assert says in again.note and again.note.endswith("; solving again")
    assert [(r.candidate_name, r.solution.latency_cycles if r.solution else None) for r in again.results] == [
        (r.candidate_name, r.solution.latency_cycles if r.solution else None) for r in first.results
    ]
    third = solve_with_memory(session_for(tiny_hw_path), {}, SolveOptions(), TWO, store=store)
    assert third.proven_at is not None and third.note == ""  # the new proof replaced the edited record


def test_a_record_under_other_pins_is_not_served(tiny_hw_path: Path, tmp_path: Path) -> None:
    store = tmp_path / "results.sqlite"
    pins = {"in0_block_w": 2}
    solve_with_memory(session_for(tiny_hw_path), pins, SolveOptions(), TWO, store=store)

    def repin(results):
        for r in results:
            r.update(pins=[["in0_block_w", 4]])

    edit_record(store, repin)
    again = solve_with_memory(session_for(tiny_hw_path), pins, SolveOptions(), TWO, store=store)
    assert again.proven_at is None and "solved under other pins" in again.note


def test_the_cli_warns_and_answers_with_the_model_s_latency(tiny_hw_path: Path, tmp_path: Path, capsys) -> None:
    store = tmp_path / "results.sqlite"
    args = [
        "solve",
        "gemm",
        "--hw",
        str(tiny_hw_path),
        "--shape",
        SHAPE,
        "--store",
        str(store),
        "--json",
        *(f"--candidate={name}" for name in TWO),
    ]
    assert cli.main(args) == 0
    truth = {c["name"]: c["latency_cycles"] for c in json.loads(capsys.readouterr().out)["candidates"]}
    edit_record(store, _faster)
    assert cli.main(args) == 0
    out, err = capsys.readouterr()
    served = json.loads(out)
    assert served["proven_at"] is None and {c["name"]: c["latency_cycles"] for c in served["candidates"]} == truth
    assert "loom-explorer: the answer the results store holds for this solve" in err and "is not served" in err


def test_what_the_referee_does_not_re_prove(tiny_hw_path: Path, tmp_path: Path) -> None:
    """A candidate said infeasible is not re-proven (that is the solve itself): such an edit is served. Said
    here so that the limit is a tested fact, not a surprise."""
    store = tmp_path / "results.sqlite"
    solve_with_memory(session_for(tiny_hw_path), {}, SolveOptions(), TWO, store=store)
    edit_record(store, _infeasible)
    assert solve_with_memory(session_for(tiny_hw_path), {}, SolveOptions(), TWO, store=store).proven_at is not None


def test_every_answer_the_solver_gives_passes_the_referee(tiny_hw_path: Path) -> None:
    session = session_for(tiny_hw_path)
    for pins, options in (
        ({}, SolveOptions(top_k=3)),
        ({"in0_block_w": 2}, SolveOptions()),
        ({"in0_block_w": 8}, SolveOptions()),
        ({}, SolveOptions(fastest=1)),
    ):
        results = session.solve(pins, options, candidates=TWO)
        assert referee_answer(session, pins, TWO, results) is None
        for r in results:
            for s in ([r.solution] if r.solution else []) + list(r.alternatives):
                assert restate(session.schedule(r.candidate_name), s, pins) is None
