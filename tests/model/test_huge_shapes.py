"""Any shape is bounded work: refused with the reason, or solved within its time limit, in bounded memory.

The command-line runs are real subprocesses under an address-space limit (2 GiB) and a timeout, so that a
model that enumerated an extent would fail here (``MemoryError``) instead of taking the machine's memory.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

import pytest
from waits import WAIT_S

from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.cpsat import ModelRangeError
from loom_explorer.solve.solver import ModelTimeError, Session, SolveOptions

MEMORY_LIMIT_BYTES = 2 * 1024**3
MCAST = "M@y,N@x|in0=mcast_x,in1=mcast_y"


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def run_cli(*args: str, timeout: float = WAIT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loom_explorer.cli", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limited,
    )


# a subprocess each: one chip and one shape of each kernel in the quick tier, the rest with the slow tests
@pytest.mark.parametrize("hw", ["wormhole_n150", pytest.param("blackhole_p150a", marks=pytest.mark.slow)])
@pytest.mark.parametrize(
    "kernel, shape",
    [
        ("gemm", "M=1000000000000,K=4096,N=4096"),
        pytest.param("gemm", "M=1000000000000000000,K=4096,N=4096", marks=pytest.mark.slow),
        pytest.param("gemm", "M=4096,K=1000000000000000000,N=4096", marks=pytest.mark.slow),
        ("flash_attention", "B=1,H=8,Sq=1000000000000,Skv=1000000000000,D=128"),
        pytest.param("flash_attention", "B=1,H=8,Sq=4096,Skv=1000000000000000000,D=128", marks=pytest.mark.slow),
    ],
)
def test_a_shape_beyond_the_model_is_refused_with_the_reason(hw: str, kernel: str, shape: str) -> None:
    r = run_cli("solve", kernel, "--hw", hw, "--shape", shape, "--time-limit", "30")
    assert r.returncode == 2, r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr
    [line] = r.stderr.strip().splitlines()
    assert line.startswith("loom-explorer: error: ") and "beyond the model's range" in line and "2**39" in line


def test_a_causal_attention_beyond_the_model_is_refused() -> None:
    r = run_cli(
        "solve",
        "flash_attention",
        "--hw",
        "wormhole_n150",
        "--causal",
        "--time-limit",
        "30",
        "--shape",
        "B=1,H=8,Sq=1000000000000,Skv=1000000000000,D=128",
    )
    assert r.returncode == 2 and "beyond the model's range" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_a_huge_legal_shape_is_solved_within_its_time_limit() -> None:
    """M = 10**9 is within range (about 4*10**11 cycles): each candidate's work ends with its time limit,
    whatever it found (alternatives included); a fixed 1.5 s allows for the model's compilation and the
    referee."""
    limit_s = 6.0  # also the deadline of building every candidate's model (about 2 s on a loaded machine)
    r = run_cli(
        "solve",
        "gemm",
        "--hw",
        "wormhole_n150",
        "--shape",
        "M=1000000000,K=4096,N=4096",
        "--json",
        "--time-limit",
        str(limit_s),
        "--candidate",
        MCAST,
        "--alternatives",
        "3",
    )
    assert r.returncode in (0, 3), r.stderr[-2000:]
    doc = json.loads(r.stdout)
    for c in doc["candidates"]:
        assert c["status"] in ("optimal", "feasible", "timeout"), c
        assert c["solve_seconds"] <= limit_s + 1.5, c


def test_an_expired_deadline_builds_nothing() -> None:
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("gemm"), "M=256,K=256,N=256")
    with pytest.raises(ModelTimeError, match=r"time limit ran out while building the candidates' models \(0 of"):
        Session(hw, problem, deadline=time.monotonic() - 1.0)
    assert isinstance(ModelTimeError("x"), ModelRangeError)  # the CLI's exit 2, the explorer's field error
    session = Session(hw, problem, deadline=time.monotonic() + 600)  # a deadline not reached changes nothing
    [r] = session.solve({}, SolveOptions(time_limit_seconds=30), candidates=[MCAST])
    assert r.status == "optimal"


def test_a_session_beyond_the_range_says_so_before_any_search() -> None:
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("gemm"), "M=1000000000000,K=4096,N=4096")
    started = time.monotonic()
    with pytest.raises(ModelRangeError, match=r"at least [\d,]+ cycles .* beyond the model's range of 2\*\*39"):
        Session(hw, problem)
    assert time.monotonic() - started < 60  # bounded work (a generous bound: no timing of performance)


def test_a_candidate_beyond_the_range_is_explained_without_a_search() -> None:
    """Only some candidates out of range: those are infeasible with the reason, the others solve."""
    hw = load_hardware("wormhole_n150")
    # M has 2 tiles: a 1-D layout of M leaves each core all 3.1*10**10 tiles of K (beyond the range); split-K
    # candidates spread K over 8 cores (within it)
    problem = make_problem(load_program("gemm"), "M=64,K=1000000000000,N=32")
    session = Session(hw, problem)
    out = [s.candidate.name for s in session.schedules if session._out_of_range(s)]
    assert out and all(n.startswith("M@xy") for n in out) and len(out) < len(session.schedules)
    [r] = session.solve({}, SolveOptions(time_limit_seconds=10), candidates=out[:1])
    assert r.status == "infeasible" and r.conflict is not None and r.conflict.families == ("range",)
    assert "beyond the model's range" in r.conflict.message and r.solve_seconds < 5
