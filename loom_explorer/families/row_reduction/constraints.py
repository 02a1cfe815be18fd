"""The row-reduction family's own constraints: the TT-Lang writer's rule (``ttlang.py``), in the shared
constraint family ``ttlang_export`` (``model/constraints/ttlang_export.py``), only when the schedule is
solved for the exported TT-Lang kernels (``Problem.target`` ttlang); TTNN's even shards of the ``[R, C]``
tensors (``model/constraints/ttnn_sharding.py``: TTNN's sharded norms and softmax validate them,
``ttnn.py``) when it is solved for TTNN's kernels.

A padded column would enter every reduction, so the columns (``C`` tiles) split evenly over the cores along
their axis, with ``g = ceil(C / per_core_C)`` cores (coverage):

    per_core_C | C          (so g * per_core_C = C)
"""

from __future__ import annotations

from loom_explorer.families.row_reduction.quantities import RowReductionQuantities
from loom_explorer.model.constraints.ttlang_export import FAMILY as TTLANG_EXPORT
from loom_explorer.model.constraints.ttnn_sharding import even_shards
from loom_explorer.model.expr import const
from loom_explorer.model.schedule import Constraint
from loom_explorer.problem import KernelTarget


def row_reduction_constraints(q: RowReductionQuantities) -> list[Constraint]:
    """The family's constraints on ``q`` beyond the shared constraint families (module docstring)."""
    if q.problem.target is KernelTarget.ttlang:
        return even_columns(q)
    st = q.st
    tensors = (t.name for t in (*st.program.inputs, *st.program.outputs) if st.kind(t.name) == "rows")
    return even_shards(q, st.rows_dim, st.cols_dim, tensors)


def even_columns(q: RowReductionQuantities) -> list[Constraint]:
    """``per_core_C | C`` when the columns are on an axis (module docstring)."""
    cols = q.st.cols_dim
    if cols not in q.per_core:  # the columns on no axis: every core takes all of them
        return []
    tiles = q.problem.tiles(cols)
    return [
        Constraint(
            f"{TTLANG_EXPORT}[per_core_{cols}|{cols}]",
            TTLANG_EXPORT,
            "divides",
            q.per_core[cols],
            const(tiles),
            f"TT-Lang export splits the columns evenly: per_core_{cols} = {{lhs}} does not divide the "
            f"{{rhs}} tiles of {cols} (a padded column would enter every reduction)",
        )
    ]
