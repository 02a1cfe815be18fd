"""L1 capacity: the circular buffers of one core fit the usable L1.

    sum of buffers <= L1_usable

with the buffers of the candidate's kernel family (``FamilyModel.l1_buffers``: each family lists them for
the kernels of ``Problem.target``, e.g. the contraction's in ``families/contraction/buffers.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from loom_explorer.model.expr import const, total
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import Constraint, L1Buffer


def l1_capacity(q: GridQuantities, buffers: Sequence[L1Buffer]) -> list[Constraint]:
    """One core's ``buffers`` (the kernel family's, ``FamilyModel.l1_buffers``: TTNN's kernels' or the
    exported TT-Lang kernels', as ``Problem.target`` says) fit its usable L1."""
    return [
        Constraint(
            "l1_capacity",
            "l1_capacity",
            "le",
            total(b.bytes_expr for b in buffers),
            const(q.hw.l1.usable_bytes),
            "needs {lhs:,} B of L1 per core, {rhs:,} B usable",
        ),
    ]
