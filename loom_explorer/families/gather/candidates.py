"""The gather family's candidate hooks (``VARIANTS``, ``mapping/variants.py``): a table is never multicast.

The table is shared along the output rows in the access-map sense (no output row indexes it), but each core
reads the rows its own indices name, not the same ones: multicasting the table would move all of it to every
core, which no gather does (``multicast_along``)."""

from __future__ import annotations

from loom_explorer.families.gather.program import GATHER, Gathering
from loom_explorer.mapping.variants import CandidateVariants
from loom_explorer.problem import Problem
from loom_explorer.program.family import Structure


def multicast_along(problem: Problem, st: Structure, tensor: str, dim: str) -> bool:
    """False for the table (module docstring)."""
    assert isinstance(st, Gathering)
    return tensor != st.table


VARIANTS = CandidateVariants(GATHER.name, multicast_along=multicast_along)
