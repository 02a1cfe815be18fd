"""What TTNN's sharded memory configs need of a schedule: even shards, so that the best schedule solved for
TTNN's kernels (``Problem.target`` ttnn) is one whose L1-sharded tensors TTNN can lay out
(``targets/ttnn/sharding.py::grid_shard`` writes that layout, and refuses an uneven one).

A ``[R, C]`` tensor (``tiles(R)``, ``tiles(C)`` tiles) placed in L1 sharded as the candidate splits it:

    l1_height, R on the 1-D layout (xy):   per_core_R | tiles(R)
    l1_width,  C on the 1-D layout (xy):   per_core_C | tiles(C)
    l1_block,  R on y and C on x:          per_core_R * grid_y = tiles(R),  per_core_C * grid_x = tiles(C)

(a block shard grid is the whole ``grid_x x grid_y`` rectangle, so its shards fill it). A tensor placed
otherwise, or on axes its placement does not shard, adds nothing: the export says why it has no layout.
Which ops need even shards, and which tensors are ``[R, C]`` sharded alike, is the kernel family's to say:
the rules come from the families (``FamilyModel.constraints``), named after this constraint family, which has
no rule of its own. TTNN's sharded norms and softmax validate even shards (``layernorm_device_operation.cpp``,
``softmax_device_operation.cpp``: ``families/row_reduction/constraints.py``); its element-wise ops take uneven
ones (the shipped captures ran some), so that family has no such rule.
"""

from __future__ import annotations

from collections.abc import Iterable

from loom_explorer.model.expr import Expr, const, mul
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import Constraint
from loom_explorer.problem import KernelTarget, Placement

FAMILY = "ttnn_sharding"


def ttnn_sharding(q: GridQuantities) -> list[Constraint]:
    """No rule shared by every kernel family: the families supply theirs (module docstring)."""
    return []


def even_shards(q: GridQuantities, rows: str, cols: str, tensors: Iterable[str]) -> list[Constraint]:
    """The rules of the module docstring for the ``[rows, cols]`` ``tensors`` of ``q``'s problem, when it is
    solved for TTNN's kernels; one constraint per rule, however many tensors share it."""
    if q.problem.target is not KernelTarget.ttnn:
        return []
    cand = q.candidate
    axes = (cand.axis_of(rows), cand.axis_of(cols))
    out: dict[str, Constraint] = {}
    for tensor in tensors:
        placement = q.problem.placement(tensor)
        if placement is Placement.l1_height and axes == ("xy", None):
            out.setdefault(rows, _divides(q, rows, placement))
        elif placement is Placement.l1_width and axes == (None, "xy"):
            out.setdefault(cols, _divides(q, cols, placement))
        elif placement is Placement.l1_block and axes == ("y", "x"):
            out.setdefault(rows, _fills(q, rows, q.grid_y, "grid_y", placement))
            out.setdefault(cols, _fills(q, cols, q.grid_x, "grid_x", placement))
    return list(out.values())


def _divides(q: GridQuantities, dim: str, placement: Placement) -> Constraint:
    return Constraint(
        f"{FAMILY}[per_core_{dim}|{dim}]",
        FAMILY,
        "divides",
        q.per_core[dim],
        const(q.problem.tiles(dim)),
        f"TTNN's {placement.value} sharding needs even shards: per_core_{dim} = {{lhs}} does not divide the "
        f"{{rhs}} tiles of {dim}",
    )


def _fills(q: GridQuantities, dim: str, cores: Expr, axis: str, placement: Placement) -> Constraint:
    return Constraint(
        f"{FAMILY}[per_core_{dim}*{axis}={dim}]",
        FAMILY,
        "eq",
        mul(q.per_core[dim], cores),
        const(q.problem.tiles(dim)),
        f"TTNN's {placement.value} shards fill the grid: per_core_{dim} x {axis} = {{lhs}} tiles, but {dim} "
        f"has {{rhs}}",
    )
