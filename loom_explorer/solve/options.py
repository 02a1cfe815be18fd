"""The solver's settings (``SolveOptions``) and the model's latency range (``LATENCY_LIMIT_CYCLES``), apart
from the solver so that reading them, building the candidates' models (``Session``) or a solve's key in the
results store (``solve/memory.py``) imports no OR-Tools."""

from __future__ import annotations

from dataclasses import dataclass

LATENCY_LIMIT_CYCLES = 2**39  # about 9 minutes at 1 GHz: schedules predicted slower are not considered


@dataclass(frozen=True, slots=True)
class SolveOptions:
    """Solver settings. The defaults were measured (docs/performance.md): CP-SAT's solve times on these
    models are heavy-tailed, and a 4-worker portfolio per model, candidates one after the other, beat 2
    candidates at a time with one worker each (and 2 or 8 workers) on a 2-core machine. CP-SAT's
    presolve is off (see CompiledSchedule.solve)."""

    time_limit_seconds: float = 30.0
    workers_per_model: int = 4
    parallel_models: int = 1  # 0: one per CPU core
    seed: int = 0
    top_k: int = 1
    explain: bool = True
    # None: prove every candidate's own optimum. n >= 1: prove only the n fastest candidates' optima and
    # every other candidate no faster than the n-th ("dominated"), a branch and bound over candidates
    fastest: int | None = None
