"""The memory of proven solves: a solve proven before comes back from the store with the same answer and says
when it was proven; a changed hardware description, kernel, pin or tool never returns a stale answer; an
unproven solve is never remembered; a store that cannot be used does not stop a solve. Every solve is real."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml
from loom_helpers import small_hw_dict, write_hw

from loom_explorer import cli
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve import memory
from loom_explorer.solve.interrupt import StopToken
from loom_explorer.solve.memory import results_from_json, results_json, solve_key, solve_with_memory
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.store import open_store

SHAPE = "M=64,K=128,N=64"  # small: every solve here is real, and what is checked is the store, not the search
KERNELS = Path(__file__).resolve().parents[2] / "kernels"


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    return tmp_path / "results.sqlite"


def session_for(hw_path: Path, kernel: str | Path = "gemm", stop: StopToken | None = None) -> Session:
    problem = make_problem(load_program(kernel), SHAPE)
    return Session(load_hardware(hw_path), problem, stop=stop or StopToken())


def test_results_round_trip_through_json(tiny_hw, solve_cached) -> None:
    """Every field comes back, conflicts and alternatives included."""
    _, results = solve_cached(tiny_hw, "gemm", SHAPE, options=SolveOptions(top_k=2))
    _, conflicted = solve_cached(tiny_hw, "gemm", SHAPE, pins={"in0_block_w": 3})
    both = [*results, *conflicted]
    assert any(r.alternatives for r in both) and any(r.conflict for r in both)
    assert results_from_json(results_json(both)) == both


def test_a_proven_solve_comes_back_from_the_store(tiny_hw_path, store) -> None:
    first = solve_with_memory(session_for(tiny_hw_path), {}, SolveOptions(), store=store)
    assert first.proven_at is None and first.note == "" and first.results
    again = solve_with_memory(session_for(tiny_hw_path), {}, SolveOptions(), store=store)
    assert again.proven_at is not None and again.results == first.results
    assert again.provenance().startswith(f"from the store, proven {again.proven_at[:10]} ")
    # pins, the candidates asked for and the alternatives are part of the key
    pinned = solve_with_memory(session_for(tiny_hw_path), {"in0_block_w": 2}, SolveOptions(), store=store)
    assert pinned.proven_at is None and pinned.results != first.results
    assert solve_with_memory(session_for(tiny_hw_path), {}, SolveOptions(top_k=2), store=store).proven_at is None
    name = first.results[0].candidate_name
    assert solve_with_memory(session_for(tiny_hw_path), {}, SolveOptions(), [name], store=store).proven_at is None
    # --no-cache solves again, and its proof replaces the old one
    fresh = solve_with_memory(session_for(tiny_hw_path), {}, SolveOptions(), store=store, use_memory=False)
    assert fresh.proven_at is None  # the same optima (a tie between equally fast schedules may break either way)
    assert [(r.candidate_name, r.solution.latency_cycles if r.solution else None) for r in fresh.results] == [
        (r.candidate_name, r.solution.latency_cycles if r.solution else None) for r in first.results
    ]
    with open_store(store) as s:
        key = solve_key(
            load_hardware(tiny_hw_path), make_problem(load_program("gemm"), SHAPE), {}, SolveOptions(), None, True
        )
        recorded = s.solved(key)
    assert recorded is not None and results_from_json(recorded.results) == fresh.results


def test_an_edited_hardware_file_or_kernel_is_solved_again(tmp_path, store) -> None:
    hw_path = write_hw(tmp_path / "chip.yaml", small_hw_dict(4, 4))
    kernel = tmp_path / "my_gemm.py"
    kernel.write_text((KERNELS / "gemm.py").read_text())
    solve_with_memory(session_for(hw_path, kernel), {}, SolveOptions(), store=store)
    assert solve_with_memory(session_for(hw_path, kernel), {}, SolveOptions(), store=store).proven_at is not None
    # a comment is not a change of the chip ...
    hw_path.write_text("# reworded\n" + hw_path.read_text())
    assert solve_with_memory(session_for(hw_path, kernel), {}, SolveOptions(), store=store).proven_at is not None
    # ... a constant is
    d = yaml.safe_load(hw_path.read_text())
    d["clock_ghz"] = d["clock_ghz"] * 1.1
    write_hw(hw_path, d)
    assert solve_with_memory(session_for(hw_path, kernel), {}, SolveOptions(), store=store).proven_at is None
    # an edited kernel file is a new program
    kernel.write_text(kernel.read_text().replace("A @ B", "A times B", 1))
    assert "A times B" in load_program(kernel).description
    assert solve_with_memory(session_for(hw_path, kernel), {}, SolveOptions(), store=store).proven_at is None
    assert solve_with_memory(session_for(hw_path, kernel), {}, SolveOptions(), store=store).proven_at is not None


def test_an_edited_tool_is_a_new_key(tiny_hw_path, store, monkeypatch) -> None:
    solve_with_memory(session_for(tiny_hw_path), {}, SolveOptions(), store=store)
    monkeypatch.setattr(memory, "code_sha256", lambda: "0" * 64)
    assert solve_with_memory(session_for(tiny_hw_path), {}, SolveOptions(), store=store).proven_at is None


def test_an_unproven_solve_is_not_remembered(tiny_hw_path, store) -> None:
    stop = StopToken()
    session = session_for(tiny_hw_path, stop=stop)
    stop.stop()
    stopped = solve_with_memory(session, {}, SolveOptions(), store=store)
    assert {r.status for r in stopped.results} == {"interrupted"}
    with open_store(store) as s:
        assert s._db.execute("SELECT COUNT(*) FROM solved").fetchone() == (0,)


def test_a_store_it_cannot_use_does_not_stop_the_solve(tiny_hw_path, tmp_path) -> None:
    newer = tmp_path / "newer.sqlite"
    with open_store(newer):
        pass
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    done = solve_with_memory(session_for(tiny_hw_path), {}, SolveOptions(), store=newer)
    assert done.results and done.results[0].solution is not None
    assert done.note.startswith("results store not used: ") and "schema_version 99" in done.note


def test_the_cli_says_a_second_solve_came_from_the_store(tiny_hw_path, store, capsys) -> None:
    args = ["solve", "gemm", "--hw", str(tiny_hw_path), "--shape", SHAPE, "--store", str(store)]
    assert cli.main(args) == 0
    first = capsys.readouterr()
    assert "solving" in first.err and "from the store" not in first.err
    assert cli.main(args) == 0
    second = capsys.readouterr()
    assert second.out == first.out and "from the store, proven " in second.err and "solving" not in second.err
    assert cli.main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["proven_at"] is not None
    assert cli.main([*args, "--no-cache", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["proven_at"] is None
    # traffic and export reuse the same proofs (their own options: traffic proves only the fastest)
    traffic = ["traffic", "gemm", "--hw", str(tiny_hw_path), "--shape", SHAPE, "--store", str(store)]
    assert cli.main(traffic) == 0 and "from the store" not in capsys.readouterr().err
    assert cli.main(traffic) == 0 and "from the store, proven" in capsys.readouterr().err


def test_each_candidate_reports_as_it_finishes(tiny_hw_path, store) -> None:
    """The CLI's progress bar counts these: one report per candidate solved (with ``fastest`` too), none for
    an answer from the store."""
    seen: list[str] = []
    solved = solve_with_memory(
        session_for(tiny_hw_path), {}, SolveOptions(), store=store, on_result=lambda r: seen.append(r.candidate_name)
    )
    assert sorted(seen) == sorted(r.candidate_name for r in solved.results)
    seen.clear()
    assert (
        solve_with_memory(
            session_for(tiny_hw_path),
            {},
            SolveOptions(),
            store=store,
            on_result=lambda r: seen.append(r.candidate_name),
        ).proven_at
        is not None
    )
    assert seen == []
    fastest = session_for(tiny_hw_path).solve({}, SolveOptions(fastest=1), on_result=lambda r: seen.append(r.status))
    assert len(seen) == len(fastest) and "dominated" in seen
