"""A kernel family's hooks into the candidate enumerator (``mapping/enumerate.py``): what of a program's
candidates is its own.

A family registers a :class:`CandidateVariants` under the entry-point group ``loom_explorer.candidate_variants``
(``loom_explorer/plugins.py``), named as the family; each hook is optional:

* ``layout_tags(problem, structure, layout)``: the candidates of one layout of the family's programs, as the
  tag sets each carries (``Candidate.tags``; ``((),)``, one untagged candidate, without the hook);
* ``multicast_along(problem, structure, tensor, dim)``: whether ``tensor`` may be multicast along a grid axis
  that carries ``dim`` where it is shared (every shared axis without the hook);
* ``candidates(problem, structure)``: for a family that is a variant of another's programs
  (``ProgramFamily.variant_of``), its candidates of that family's problems, added after the program family's
  own, each naming the variant family as ``Candidate.family`` (whose model builds it and whose writers write it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from loom_explorer.mapping.candidate import Axis, Candidate, Tag
from loom_explorer.plugins import registered
from loom_explorer.problem import Problem
from loom_explorer.program.dsl import TileProgram
from loom_explorer.program.family import Structure
from loom_explorer.program.structure import program_family

GROUP = "loom_explorer.candidate_variants"

Layout = tuple[tuple[Axis, str], ...]
"""A candidate's grid axes and the dimensions each carries (``Candidate.axes``)."""
LayoutTags = Callable[[Problem, Structure, Layout], tuple[tuple[Tag, ...], ...]]
MulticastAlong = Callable[[Problem, Structure, str, str], bool]


@dataclass(frozen=True, slots=True)
class CandidateVariants:
    """One family's candidate hooks (module docstring)."""

    name: str
    layout_tags: LayoutTags | None = None
    multicast_along: MulticastAlong | None = None
    candidates: Callable[[Problem, Structure], list[Candidate]] | None = None


def family_name(program: TileProgram, candidate: Candidate | None = None) -> str:
    """The kernel family that models, writes and runs ``candidate``: the family it names (``Candidate.family``,
    a variant family's), else ``program``'s."""
    return candidate.family if candidate is not None and candidate.family else program_family(program).name


def candidate_variants() -> Mapping[str, CandidateVariants]:
    """Every registered family's candidate hooks, by family name."""
    return registered(GROUP, CandidateVariants)
