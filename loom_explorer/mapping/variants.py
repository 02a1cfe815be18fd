"""Candidates a kernel family contributes to the programs of the family it is a variant of.

A family whose ``ProgramFamily.variant_of`` names another family registers a :class:`CandidateVariants` under
the entry-point group ``loom_explorer.candidate_variants`` (``loom_explorer/plugins.py``), named as the family:
the candidate enumerator (``mapping/enumerate.py``) adds its ``candidates(problem, structure)`` after the
program family's own, each naming the variant family as ``Candidate.family`` (whose model builds it and whose
writers write it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from loom_explorer.mapping.candidate import Candidate
from loom_explorer.plugins import registered
from loom_explorer.problem import Problem
from loom_explorer.program.family import Structure

GROUP = "loom_explorer.candidate_variants"


@dataclass(frozen=True, slots=True)
class CandidateVariants:
    """One variant family's candidates of a problem of the family it is a variant of (module docstring)."""

    name: str
    candidates: Callable[[Problem, Structure], list[Candidate]]


def candidate_variants() -> Mapping[str, CandidateVariants]:
    """Every registered variant family's candidates, by family name."""
    return registered(GROUP, CandidateVariants)
