"""Constraint families, one per module. Each family is a function ``family(q) -> list[Constraint]`` named after
its module (``grid``, ``coverage``, ...); ``FAMILIES`` lists them in the order the model adds them."""

from loom_explorer.model.constraints.coverage import coverage
from loom_explorer.model.constraints.divisibility import divisibility
from loom_explorer.model.constraints.dst_capacity import dst_capacity
from loom_explorer.model.constraints.grid import grid
from loom_explorer.model.constraints.l1_capacity import l1_buffers, l1_capacity
from loom_explorer.model.constraints.multicast import multicast

FAMILIES = (grid, coverage, divisibility, dst_capacity, l1_capacity, multicast)

__all__ = ["FAMILIES", "coverage", "divisibility", "dst_capacity", "grid", "l1_buffers", "l1_capacity", "multicast"]
