"""What a solve returns: a schedule, a conflict, or nothing within the time limit.

Plain frozen records that import nothing of the package: the referee (``validate.py``) builds a
:class:`Solution`, the solver (``solve/``) a :class:`CandidateResult`, and every layer above reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# dominated: no schedule of this candidate is faster than best_bound_cycles (SolveOptions.fastest); its own optimum
# was not sought. interrupted: a stop request (Ctrl-C, solve/interrupt.py) ended or prevented its search; the
# solution, if any, is the best its search found, not proven optimal
Status = Literal["optimal", "feasible", "dominated", "infeasible", "conflict", "timeout", "interrupted"]


@dataclass(frozen=True, slots=True)
class Solution:
    """A concrete schedule: every parameter's value and what the model predicts for it."""

    params: tuple[tuple[str, int], ...]
    latency_cycles: int
    breakdown: tuple[tuple[str, int], ...]
    l1_bytes: int
    dram_read_bytes: int

    def values(self) -> dict[str, int]:
        return dict(self.params)


@dataclass(frozen=True, slots=True)
class Conflict:
    """Why no schedule exists: the pins and the constraints that cannot hold together, in words."""

    pins: tuple[tuple[str, int], ...]
    constraints: tuple[str, ...]
    families: tuple[str, ...]
    message: str


@dataclass(frozen=True, slots=True)
class CandidateResult:
    candidate_name: str
    description: str
    status: Status
    solution: Solution | None
    alternatives: tuple[Solution, ...]
    conflict: Conflict | None
    best_bound_cycles: int | None
    solve_seconds: float
    pins: tuple[tuple[str, int], ...] = ()

    @property
    def feasible(self) -> bool:
        return self.solution is not None
