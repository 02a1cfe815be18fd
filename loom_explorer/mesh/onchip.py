"""The on-chip side of a split: its per-chip problem's lower bound and, when asked, its proven optimum.

Each distinct per-chip problem (``splits.ChipProblem``) is built once on the mesh's chip. Its bound is the
larger of the compute roofline and the DRAM floor (``bounds.py``: every candidate's latency is at least
each), computed without building any candidate's model. Its optimum is
``Session(hw, problem).solve(fastest=1)`` through the results store (``solve/memory.py``): a problem proven
before is read back (refereed), a new proof is recorded, so a second run solves nothing; ``stored`` says,
from the store's key alone, which problems' answers are there, so a plan reads them before its first round.
A problem whose every candidate is infeasible (or beyond the model's range) has no schedule: the splits that
need it are left out of the joint model.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from loom_explorer.errors import LoomError
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mesh.bounds import chip_bound as problem_bound
from loom_explorer.mesh.splits import ChipProblem
from loom_explorer.problem import Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.memory import solve_key, solve_with_memory
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.store import StoreError, default_store_path, open_store


@dataclass(frozen=True, slots=True)
class ChipSolve:
    """A per-chip problem's proven answer: ``latency_cycles`` of its best schedule (None: no schedule, and
    ``why``), whether it came from the store, the candidate, and the wall time spent."""

    latency_cycles: int | None
    proven: bool
    from_store: bool
    candidate: str
    seconds: float
    why: str = ""


def chip_problem(problem: ChipProblem) -> Problem:
    return make_problem(
        load_program(problem.kernel),
        problem.shape_text,
        fidelity=problem.fidelity,
        formats=dict(problem.formats),
        options=problem.options,
    )


def chip_bound(hw: HardwareSpec, problem: ChipProblem) -> int:
    """A lower bound of every schedule of ``problem`` on ``hw`` (module docstring)."""
    return problem_bound(hw, chip_problem(problem)).cycles


def chip_options(time_limit_seconds: float) -> SolveOptions:
    """The per-chip solve: the fastest candidate only, proven, no conflict explained."""
    return SolveOptions(time_limit_seconds=time_limit_seconds, fastest=1, explain=False)


def stored(hw: HardwareSpec, problems: list[ChipProblem], store: str | Path | None) -> set[ChipProblem]:
    """The problems whose proven answer the results store holds (by key: nothing is built or refereed
    here; ``solve_chip`` reads and referees each). An unreadable store holds nothing."""
    path = Path(store if store is not None else default_store_path())
    if not path.exists():
        return set()
    options = chip_options(1.0)  # time limits are not in the key
    keys = {}
    for p in problems:
        try:
            keys[p] = solve_key(hw, chip_problem(p), {}, options, None, True)
        except (LoomError, ValueError):
            continue
    try:
        with open_store(path) as opened:
            return {p for p, k in keys.items() if opened.solved(k) is not None}
    except (StoreError, OSError, sqlite3.Error):
        return set()


def solve_chip(
    hw: HardwareSpec,
    problem: ChipProblem,
    store: str | Path | None,
    use_memory: bool,
    time_limit_seconds: float,
    first: tuple[str, ...] = (),
) -> ChipSolve:
    """The proven fastest schedule of ``problem`` (module docstring); ``first``: candidates to try first (the
    winners of problems of the same kernel: ``Session.solve``, an order only)."""
    start = time.perf_counter()
    try:
        session = Session(hw, chip_problem(problem))
    except (LoomError, ValueError) as exc:  # beyond the model's range, or a shape the kernel refuses
        return ChipSolve(None, True, False, "", time.perf_counter() - start, str(exc))
    options = chip_options(time_limit_seconds)
    found = solve_with_memory(session, {}, options, store=store, use_memory=use_memory, first=first)
    seconds = time.perf_counter() - start
    best = [r for r in found.results if r.solution is not None]
    if not best:
        return ChipSolve(None, True, found.proven_at is not None, "", seconds, "no candidate has a schedule")
    top = min(best, key=lambda r: r.solution.latency_cycles if r.solution else 0)
    assert top.solution is not None
    proven = all(r.status in ("optimal", "dominated", "infeasible", "conflict") for r in found.results)
    return ChipSolve(top.solution.latency_cycles, proven, found.proven_at is not None, top.candidate_name, seconds)
