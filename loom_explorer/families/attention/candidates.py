"""The attention family's candidate hooks (``VARIANTS``, ``mapping/variants.py``): its causal diagonal.

Under a causal mask (the program's ``causal`` option, set for the problem) query chunk ``i`` needs the key
chunks up to its last row only, so:

* cores along the query dimension need different numbers of key/value blocks: a tensor indexed by the
  key/value dimension is not multicast along it (``multicast_along``);
* causal load balancing (``BALANCED``, ``|balanced``: a low and a high query chunk per core) is a second
  variant of every layout that spreads the query dimension; a flattened causal layout is always balanced (as
  TTNN's is) (``layout_tags``).
"""

from __future__ import annotations

from loom_explorer.families.attention.program import ATTENTION, Attention
from loom_explorer.mapping.candidate import Tag
from loom_explorer.mapping.variants import CandidateVariants, Layout
from loom_explorer.problem import Problem
from loom_explorer.program.family import Structure

BALANCED = Tag("balanced", "each core takes a low and a high query chunk (causal load balancing)")


def _diagonal(problem: Problem, st: Structure) -> tuple[str, str] | None:
    """(query dim, key/value dim) of the causal diagonal when the problem is causal, else None."""
    assert isinstance(st, Attention)
    return st.diagonal if st.diagonal is not None and problem.has_option("causal") else None


def layout_tags(problem: Problem, st: Structure, axes: Layout) -> tuple[tuple[Tag, ...], ...]:
    """A layout's candidates (module docstring): balanced only, both, or plain."""
    diagonal = _diagonal(problem, st)
    carries_q = diagonal is not None and any(diagonal[0] in d.split("*") for _, d in axes)
    flattened = any("*" in d for _, d in axes)
    return ((BALANCED,),) if carries_q and flattened else ((), (BALANCED,)) if carries_q else ((),)


def multicast_along(problem: Problem, st: Structure, tensor: str, dim: str) -> bool:
    """False for a tensor indexed by the key/value dim along the query dim of a causal problem."""
    diagonal = _diagonal(problem, st)
    return not (diagonal is not None and dim == diagonal[0] and diagonal[1] in problem.program.tensor(tensor).dims)


VARIANTS = CandidateVariants(ATTENTION.name, layout_tags=layout_tags, multicast_along=multicast_along)
