"""Coverage: the cores along an axis cover the dimension on it, and none is idle (tails allowed).

2-D, dimension ``d`` on an axis with ``g`` cores:

    g * per_core_d >= E_d             (every tile has a core)
    (g - 1) * per_core_d <= E_d - 1   (the last core along the axis has work)

so ``g = ceil(E_d / per_core_d)``; the last core may get fewer than ``per_core_d`` (a ragged tail).

1-D, dimension ``d`` over ``u = ceil(E_d / per_core_d)`` cores filled row-major into grid_x columns:

    u <= grid_x * grid_y,   u >= grid_x * (grid_y - 1) + 1,   u >= grid_x

Extents are in the units ``per_core_d`` counts: tiles (or items) for a contraction; for attention, query
*chunks* (``ceil(Sq/q_chunk)``, or chunk pairs when causal load balancing pairs them) and, on a flattened
layout, tasks (``B*H*chunks``). An extent that depends on a parameter also needs ``per_core_d <= E_d``
(for a constant extent the domain already says so).
"""

from __future__ import annotations

from loom_explorer.model.expr import Const, const, mul
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import Constraint


def coverage(q: GridQuantities) -> list[Constraint]:
    out: list[Constraint] = []
    for axis, dim in q.candidate.axes:
        extent = const(q.extent(dim))
        p = q.per_core[dim]
        if not isinstance(extent, Const):
            out.append(
                Constraint(
                    f"coverage[{dim},excess]",
                    "coverage",
                    "le",
                    p,
                    extent,
                    f"per_core_{dim} = {{lhs}} exceeds the {{rhs}} there are",
                )
            )
        if axis == "xy":
            used = q.used_cores_1d  # ceil(E_d / per_core_d); flash-decoding's groups times kv_cores
            out += [
                Constraint(
                    f"coverage[{dim}]",
                    "coverage",
                    "le",
                    used,
                    mul(q.grid_x, q.grid_y),
                    f"{dim} needs {{lhs}} cores at per_core_{dim}, the grid used has {{rhs}}",
                ),
                Constraint(
                    f"coverage[{dim},last_row]",
                    "coverage",
                    "ge",
                    used,
                    mul(q.grid_x, q.grid_y - 1) + 1,
                    f"{dim} fills {{lhs}} cores, leaving the last row of the grid used idle (needs at least {{rhs}})",
                ),
                Constraint(
                    f"coverage[{dim},columns]",
                    "coverage",
                    "ge",
                    used,
                    q.grid_x,
                    f"{dim} fills {{lhs}} cores, fewer than the {{rhs}} columns used",
                ),
            ]
            continue
        g = q.grid_x if axis == "x" else q.grid_y
        gname = "grid_x" if axis == "x" else "grid_y"
        out += [
            Constraint(
                f"coverage[{dim}]",
                "coverage",
                "ge",
                mul(g, p),
                extent,
                f"{gname}*per_core_{dim} = {{lhs}} do not cover {dim} = {{rhs}}",
            ),
            Constraint(
                f"coverage[{dim},idle]",
                "coverage",
                "le",
                mul(g - 1, p),
                extent - 1,
                f"the last core along {dim} would be idle: (g-1)*per_core_{dim} = {{lhs}} already cover "
                f"{dim} (= {{rhs}} + 1)",
            ),
        ]
    return out
