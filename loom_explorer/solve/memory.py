"""A memory of proven solves: a problem solved before comes back from the results store at once, with the
same answer, and says when it was proven.

The key (``solve_key``) is the SHA-256 of everything that determines the results:

* the hardware description's validated contents (``hashing.hardware_sha256``: an edited constant or grid
  is a new key; a reworded comment is not);
* the problem: the kernel's tile program as loaded (its full ``repr``: every dim, tensor and op, so an
  edited kernel file, or a helper it imports, is a new key), the shape, formats, fidelity, fp32
  accumulation, placements, enabled optional tensors, activation, options and target;
* the solve: pins, the candidates asked for, the NoC bound, alternatives per candidate, ``fastest`` and
  whether conflicts are explained;
* the tool: its version, the SHA-256 of its own source files (``code_sha256``: an edited model is a new
  key even at the same version) and OR-Tools' version.

Time limits, workers, seed and parallelism are not in the key: only results whose every candidate is
proven (``PROVEN``: optimal, dominated, infeasible or a conflict) are remembered, and those do not depend
on them (a tie between equally fast schedules may break either way). A solve that was interrupted or ran
out of time is never remembered. ``use_memory=False`` (``--no-cache``) solves again and records the new
proof over the old one. A store that cannot be opened or written (a newer tool's file, a read-only file, a
full disk, an unwritable folder) does not stop a solve: the memory is skipped and ``Remembered.note`` says
why (the command line warns on stderr).

An answer read back is refereed before it is served (``referee_answer``), since the file can be edited by
hand: it must hold one result per candidate asked for, each of a proven status under the pins asked for,
and every schedule in it (the optimum and each alternative) must pass ``validate.restate``: legal, pins
kept, and the latency, breakdown, L1 and DRAM figures the model computes for its values. Solutions'
optimality and the infeasibility of a candidate are not re-proven (that is the solve itself). An answer
that fails is not served: ``Remembered.note`` says why, the problem is solved again and the new proof
replaces it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.hashing import hardware_sha256
from loom_explorer.problem import Problem
from loom_explorer.result import CandidateResult, Conflict, Solution
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.store import SolvedRecord, StoreError, default_store_path, open_store, package_version
from loom_explorer.validate import restate

PROVEN = frozenset({"optimal", "dominated", "infeasible", "conflict"})
PACKAGE_DIR = Path(__file__).resolve().parents[1]


@cache
def code_sha256() -> str:
    """SHA-256 of every ``.py`` file of the package (relative path and bytes, in path order)."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def problem_identity(problem: Problem) -> dict[str, object]:
    """What determines the problem, in a canonical order (sets sorted)."""
    return {
        "program": repr(problem.program),
        "shape": [list(p) for p in problem.shape],
        "formats": sorted((t, f.value) for t, f in problem.formats),
        "fidelity": problem.fidelity.value,
        "fp32_acc": problem.fp32_acc,
        "placements": sorted((t, p.value) for t, p in problem.placements),
        "enabled": sorted(problem.enabled),
        "activation": problem.activation,
        "options": sorted(problem.options),
        "target": problem.target.value,
    }


def solve_key(
    hw: HardwareSpec,
    problem: Problem,
    pins: dict[str, int],
    options: SolveOptions,
    candidates: list[str] | None,
    noc_bound: bool,
) -> str:
    """The SHA-256 of everything that determines a solve's results (module docstring)."""
    identity = {
        "hardware": hardware_sha256(hw),
        "problem": problem_identity(problem),
        "pins": sorted(pins.items()),
        "candidates": sorted(candidates) if candidates else None,
        "noc_bound": noc_bound,
        "top_k": options.top_k,
        "fastest": options.fastest,
        "explain": options.explain,
        "tool": package_version("loom-explorer"),
        "code": code_sha256(),
        "ortools": package_version("ortools"),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def results_json(results: list[CandidateResult]) -> str:
    return json.dumps([asdict(r) for r in results])


def _solution(d: dict[str, Any]) -> Solution:
    return Solution(
        params=tuple((str(n), int(v)) for n, v in d["params"]),
        latency_cycles=int(d["latency_cycles"]),
        breakdown=tuple((str(n), int(v)) for n, v in d["breakdown"]),
        l1_bytes=int(d["l1_bytes"]),
        dram_read_bytes=int(d["dram_read_bytes"]),
    )


def results_from_json(text: str) -> list[CandidateResult]:
    """The inverse of ``results_json``."""
    out = []
    for d in json.loads(text):
        conflict = d["conflict"]
        out.append(
            CandidateResult(
                candidate_name=d["candidate_name"],
                description=d["description"],
                status=d["status"],
                solution=_solution(d["solution"]) if d["solution"] else None,
                alternatives=tuple(_solution(a) for a in d["alternatives"]),
                conflict=None
                if conflict is None
                else Conflict(
                    pins=tuple((n, v) for n, v in conflict["pins"]),
                    constraints=tuple(conflict["constraints"]),
                    families=tuple(conflict["families"]),
                    message=conflict["message"],
                ),
                best_bound_cycles=d["best_bound_cycles"],
                solve_seconds=d["solve_seconds"],
                pins=tuple((n, v) for n, v in d["pins"]),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class Remembered:
    """A solve's results; ``proven_at`` (UTC, ISO 8601) when they came from the store, None when solved now;
    ``note``: why the store was not used, if it could not be."""

    results: list[CandidateResult]
    proven_at: str | None = None
    note: str = ""
    refused: bool = False  # the store held an answer the referee refused: solve again and replace it

    def provenance(self) -> str:
        """E.g. ``from the store, proven 2026-12-04 10:33 UTC (--no-cache solves again)``; "" when solved now."""
        if self.proven_at is None:
            return ""
        return f"from the store, proven {self.proven_at[:16].replace('T', ' ')} UTC (--no-cache solves again)"


def recall(
    session: Session,
    pins: dict[str, int],
    options: SolveOptions,
    candidates: list[str] | None = None,
    noc_bound: bool = True,
    store: str | Path | None = None,
) -> Remembered:
    """The solve proven before under this key (``proven_at`` set), or an empty ``Remembered`` (its ``note``
    says why when the store could not be read)."""
    key = solve_key(session.hw, session.problem, pins, options, candidates, noc_bound)
    if not Path(store if store is not None else default_store_path()).exists():
        return Remembered([])  # nothing proven yet; reading creates no file
    try:
        with open_store(store) as opened:
            found = opened.solved(key)
        if found is None:
            return Remembered([])
        results = results_from_json(found.results)
    except (StoreError, OSError, sqlite3.Error, ValueError, KeyError, TypeError) as exc:
        return Remembered([], note=f"results store not used: {exc}")
    why = referee_answer(session, pins, candidates, results)
    if why is not None:
        return Remembered(
            [],
            note=f"the answer the results store holds for this solve (proven {found.created}) "
            f"is not served: {why}; solving again",
            refused=True,
        )
    return Remembered(results, found.created)


def referee_answer(
    session: Session, pins: dict[str, int], candidates: list[str] | None, results: list[CandidateResult]
) -> str | None:
    """Why ``results`` (read from the store) cannot be served for this solve (module docstring), or None."""
    asked = sorted(candidates) if candidates else sorted(s.candidate.name for s in session.schedules)
    names = sorted(r.candidate_name for r in results)
    if names != asked:
        return f"its candidates are not the {len(asked)} asked for"
    for r in results:
        where = r.candidate_name
        if r.status not in PROVEN:
            return f"{where}: status {r.status!r} is not a proven one"
        if dict(r.pins) != pins:
            return f"{where}: solved under other pins"
        if (r.solution is None) != (r.status in ("dominated", "infeasible", "conflict")):
            return f"{where}: status {r.status} {'without' if r.solution is None else 'with'} a schedule"
        schedule = session.schedule(r.candidate_name)
        for i, claimed in enumerate([*([r.solution] if r.solution else []), *r.alternatives]):
            try:
                why = restate(schedule, claimed, pins)
            except (ArithmeticError, LookupError, ValueError, TypeError) as exc:  # values outside the model's tables
                why = f"cannot be evaluated ({type(exc).__name__}: {exc})"
            if why is not None:
                return f"{where}: {'its schedule' if i == 0 else f'alternative {i}'}: {why}"
        if r.solution and r.best_bound_cycles is not None and r.best_bound_cycles > r.solution.latency_cycles:
            return f"{where}: a bound of {r.best_bound_cycles:,} cycles above its schedule's latency"
    return None


def remember(
    session: Session,
    pins: dict[str, int],
    options: SolveOptions,
    results: list[CandidateResult],
    candidates: list[str] | None = None,
    noc_bound: bool = True,
    store: str | Path | None = None,
) -> str:
    """Record ``results`` when every candidate is proven and the session was not stopped; why the store could
    not be written, or ""."""
    if not results or session.stop.stopped or any(r.status not in PROVEN for r in results):
        return ""
    problem = session.problem
    summary = " ".join(
        [
            problem.shape_text,
            problem.formats[0][1].value,
            problem.fidelity.value,
            *sorted(problem.options),
            *(f"{n}={v}" for n, v in sorted(pins.items())),
        ]
    )
    record = SolvedRecord(
        solve_key(session.hw, problem, pins, options, candidates, noc_bound),
        session.hw.name,
        hardware_sha256(session.hw),
        problem.program.name,
        summary,
        results_json(results),
    )
    try:
        with open_store(store) as opened:
            opened.record_solved(record)
        return ""
    except (StoreError, OSError, sqlite3.Error) as exc:
        return f"results store not used: {exc}"


def solve_with_memory(
    session: Session,
    pins: dict[str, int],
    options: SolveOptions,
    candidates: list[str] | None = None,
    noc_bound: bool = True,
    store: str | Path | None = None,
    use_memory: bool = True,
    announce: Callable[[], None] | None = None,
    on_result: Callable[[CandidateResult], None] | None = None,
    first: Sequence[str] = (),
) -> Remembered:
    """``session.solve``, answered from the store when the same solve was proven before (module docstring);
    a new proof is recorded. ``announce`` is called before a real solve starts, ``on_result`` as each of its
    candidates finishes, ``first`` the candidates to try first (``Session.solve``: an order, not in the key)."""
    note, refused = "", False
    if use_memory:
        found = recall(session, pins, options, candidates, noc_bound, store)
        if found.proven_at is not None:
            return found
        note, refused = found.note, found.refused
    if announce is not None:
        announce()
    results = session.solve(pins, options, candidates=candidates, on_result=on_result, first=first)
    if not note or refused:  # a refused answer is replaced by the new proof
        note = "; ".join(filter(None, [note, remember(session, pins, options, results, candidates, noc_bound, store)]))
    return Remembered(results, note=note)
