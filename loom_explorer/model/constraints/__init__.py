"""Constraint families, one per module. Each family is a function named after its module (``grid``,
``coverage``, ...) of the candidate's quantities (``l1_capacity`` also of the L1 buffers its kernel family
lists); ``FAMILIES`` lists them in the order the model adds them, :func:`constraints` adds them all."""

from __future__ import annotations

from collections.abc import Sequence

from loom_explorer.model.constraints.coverage import coverage
from loom_explorer.model.constraints.divisibility import divisibility
from loom_explorer.model.constraints.dst_capacity import dst_capacity
from loom_explorer.model.constraints.grid import grid
from loom_explorer.model.constraints.l1_capacity import l1_capacity
from loom_explorer.model.constraints.multicast import multicast
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import Constraint, L1Buffer

FAMILIES = (grid, coverage, divisibility, dst_capacity, l1_capacity, multicast)


def constraints(q: GridQuantities, buffers: Sequence[L1Buffer]) -> tuple[Constraint, ...]:
    """Every family's constraints on ``q``, in ``FAMILIES`` order; ``buffers``: one core's L1 buffers."""
    return (*grid(q), *coverage(q), *divisibility(q), *dst_capacity(q), *l1_capacity(q, buffers), *multicast(q))


__all__ = ["FAMILIES", "constraints", "coverage", "divisibility", "dst_capacity", "grid", "l1_capacity",
           "multicast"]
