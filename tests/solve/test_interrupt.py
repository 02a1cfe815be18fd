"""Stopping solves: Ctrl-C on the command line (a real ``loom-explorer solve`` in a subprocess, real CP-SAT) and
the stop token of the library (``solve/interrupt.py``).

A stop request ends the running searches through CP-SAT's own ``stop_search``; no search starts after it; the
candidates that did not finish are ``interrupted``; the command prints what it has and exits 130, never
aborting (a signal crossing CP-SAT used to end the process with ``terminate called ... bad_function_call``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from waits import WAIT_S

from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.report import solve_json, solve_table
from loom_explorer.solve.interrupt import Interrupted, StopToken
from loom_explorer.solve.solver import Session, SolveOptions, rank

ROOT = Path(__file__).resolve().parents[2]
BIG = "M=16384,K=16384,N=16384"  # 20 candidates, each search ~0.2-1.2 s with 4 workers
STOP_SECONDS = 2.0  # from the signal to the process's exit


class Running:
    """A ``loom-explorer`` subprocess whose stderr is collected as it comes (progress lines included)."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loom_explorer.cli", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.err = ""
        self._out: list[str] = []
        self._readers = [
            threading.Thread(target=self._read_err, daemon=True),
            threading.Thread(target=self._read_out, daemon=True),
        ]
        for t in self._readers:
            t.start()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        while chunk := self.proc.stderr.read(1):
            self.err += chunk

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        self._out.append(self.proc.stdout.read())

    def wait_for(self, text: str, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end and self.proc.poll() is None:
            if text in self.err:
                return True
            time.sleep(0.05)
        return text in self.err

    def interrupt(self) -> tuple[int, float, str, str]:
        """SIGINT, then (exit status, seconds until the process ended, stdout, stderr)."""
        assert self.proc.poll() is None, f"the command ended before the signal: {self.err[-2000:]}"
        sent = time.monotonic()
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout=WAIT_S)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
        seconds = time.monotonic() - sent
        for t in self._readers:
            t.join(10)
        return code, seconds, "".join(self._out), self.err


def _solve_and_interrupt(tmp_path: Path, *extra: str) -> tuple[int, float, str, str]:
    run = Running(["solve", "gemm", "--hw", "wormhole_n150", "--shape", BIG, "--time-limit", "100", *extra], tmp_path)
    # the progress line says the searches start (after 3-10 s here, minutes on a loaded machine); a second
    # later the command is inside its searches: with these options they take 40 s to minutes in all
    assert run.wait_for("solving 20 candidates", WAIT_S), run.err[-2000:]
    time.sleep(1.0)
    return run.interrupt()


def _no_abort(err: str) -> None:
    assert "terminate called" not in err and "Traceback" not in err, err[-3000:]


def test_ctrl_c_during_solve_prints_partial_table_and_exits_130(tmp_path):
    code, seconds, out, err = _solve_and_interrupt(tmp_path, "--alternatives", "3")
    _no_abort(err)
    assert code == 130, err[-3000:]
    assert seconds < STOP_SECONDS, (seconds, err[-2000:])
    rows = [line for line in out.splitlines() if re.match(r"\s*\d+\s+\S+\|in0=", line)]
    assert len(rows) == 20, out  # every candidate listed: finished ones as usual, the others interrupted
    statuses = [line.split()[2] for line in rows]
    assert "interrupted" in statuses and set(statuses) <= {"optimal", "interrupted"}, statuses
    assert "interrupted: " in out and "not proven optimal" in out
    assert "interrupted" in err


@pytest.mark.slow  # a fresh interpreter: the quick tier interrupts the plain solve above
def test_ctrl_c_during_fastest_solve_json_marks_unfinished_candidates(tmp_path):
    code, seconds, out, err = _solve_and_interrupt(
        tmp_path, "--fastest", "2", "--workers", "1", "--alternatives", "3", "--json"
    )
    _no_abort(err)
    assert code == 130, err[-3000:]
    assert seconds < STOP_SECONDS, (seconds, err[-2000:])
    doc = json.loads(out)
    assert doc["interrupted"] is True and len(doc["candidates"]) == 20
    statuses = {c["status"] for c in doc["candidates"]}
    assert "interrupted" in statuses and statuses <= {"optimal", "dominated", "interrupted"}, statuses
    for c in doc["candidates"]:  # a schedule shown for an interrupted candidate is a real one
        if c["status"] == "interrupted" and c["latency_cycles"] is not None:
            assert c["params"] and c["latency_us"] > 0


@pytest.mark.slow  # a fresh interpreter: the quick tier interrupts the plain solve above
def test_ctrl_c_during_deploy_solve_deploys_nothing(tmp_path):
    """``deploy`` solves first: Ctrl-C then runs and records nothing (no unproven schedule is deployed)."""
    store = tmp_path / "store.sqlite"
    run = Running(
        [
            "deploy",
            "gemm",
            "--hw",
            "wormhole_n150",
            "--shape",
            BIG,
            "--time-limit",
            "100",
            "--runner",
            "simulator",
            "--store",
            str(store),
        ],
        tmp_path,
    )
    assert run.wait_for("solving 20 candidates", WAIT_S), run.err[-2000:]
    time.sleep(1.0)
    code, seconds, _, err = run.interrupt()
    _no_abort(err)
    assert code == 130, err[-3000:]
    assert seconds < STOP_SECONDS, (seconds, err[-2000:])
    assert "so no deployment" in err and not store.exists(), err[-2000:]


# --------------------------------------------------------------------------------------- the library
@pytest.fixture(scope="module")
def big_problem():
    hw = load_hardware("wormhole_n150")
    return hw, make_problem(load_program("gemm"), BIG)


def test_a_stop_request_ends_the_running_searches_and_starts_none(big_problem):
    hw, problem = big_problem
    token = StopToken()
    session = Session(hw, problem, stop=token)
    out: list = []
    solver = threading.Thread(
        target=lambda: out.append(session.solve({}, SolveOptions(time_limit_seconds=100, workers_per_model=2, top_k=3)))
    )
    solver.start()
    time.sleep(1.5)
    stopped = time.monotonic()
    token.stop()
    solver.join(30)
    assert not solver.is_alive() and time.monotonic() - stopped < STOP_SECONDS
    [results] = out
    assert len(results) == 20
    interrupted = [r for r in results if r.status == "interrupted"]
    assert interrupted and {r.status for r in results} <= {"optimal", "interrupted"}
    # a search started after the stop would take at least tens of ms; none started
    assert sum(r.solve_seconds < 0.05 for r in interrupted) >= len(interrupted) - 1
    assert results == rank(results)
    # a later solve of the same session starts no search either
    again = session.solve({}, SolveOptions(time_limit_seconds=100, fastest=1))
    assert {r.status for r in again} == {"interrupted"}


def test_building_stops_on_a_set_token(big_problem):
    hw, problem = big_problem
    token = StopToken()
    token.stop()
    with pytest.raises(Interrupted, match="0 of 20 built"):
        Session(hw, problem, stop=token)


def test_interrupted_results_rank_and_print(n150):
    problem = make_problem(load_program("gemm"), "M=256,K=256,N=256")
    token = StopToken()
    session = Session(n150, problem, stop=token)
    solved = session.solve({}, SolveOptions(time_limit_seconds=30), candidates=[session.schedules[0].candidate.name])
    token.stop()
    rest = session.solve({}, SolveOptions(time_limit_seconds=30))
    results = rank(solved + [r for r in rest if r.candidate_name != solved[0].candidate_name])
    assert results[0].status == "optimal" and {r.status for r in results[1:]} == {"interrupted"}
    schedules = {s.candidate.name: s for s in session.schedules}
    table = solve_table(n150, problem, schedules, results)
    lines = table.splitlines()
    header = next(line for line in lines if "candidate" in line and "status" in line)
    row = next(line for line in lines if " interrupted " in line)
    assert row.index("interrupted") == header.index("status")  # the column fits the new status
    assert f"interrupted: {len(results) - 1} of {len(results)} candidates did not finish" in table
    doc = solve_json(n150, problem, schedules, results, {})
    assert doc["interrupted"] is True
    assert [c["status"] for c in doc["candidates"]].count("interrupted") == len(results) - 1
    assert solve_json(n150, problem, schedules, solved, {})["interrupted"] is False
