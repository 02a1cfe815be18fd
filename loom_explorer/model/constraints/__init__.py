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
from loom_explorer.model.constraints.ttlang_export import ttlang_export
from loom_explorer.model.constraints.ttnn_sharding import ttnn_sharding
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import Constraint, L1Buffer

FAMILIES = (grid, coverage, divisibility, dst_capacity, l1_capacity, multicast, ttlang_export, ttnn_sharding)


def constraints(
    q: GridQuantities, buffers: Sequence[L1Buffer], extra: Sequence[Constraint] = ()
) -> tuple[Constraint, ...]:
    """Every family's constraints on ``q``, in ``FAMILIES`` order; ``buffers``: one core's L1 buffers;
    ``extra``: the kernel family's own constraints (``ModelFamily.constraints``), each added after the
    constraints of the family it names (``Constraint.family``)."""
    shared = {
        "grid": grid(q),
        "coverage": coverage(q),
        "divisibility": divisibility(q),
        "dst_capacity": dst_capacity(q),
        "l1_capacity": l1_capacity(q, buffers),
        "multicast": multicast(q),
        "ttlang_export": ttlang_export(q),
        "ttnn_sharding": ttnn_sharding(q),
    }
    unknown = {c.family for c in extra} - shared.keys()
    if unknown:
        raise ValueError(f"constraints of no constraint family: {sorted(unknown)}")
    return tuple(c for family, own in shared.items() for c in (*own, *(e for e in extra if e.family == family)))


__all__ = [
    "FAMILIES",
    "constraints",
    "coverage",
    "divisibility",
    "dst_capacity",
    "grid",
    "l1_capacity",
    "multicast",
    "ttlang_export",
]
