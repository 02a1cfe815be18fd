"""Divisibility the kernels need (TTNN matmul_program_config legality):

    out_subblock_h | out_block_h,   out_subblock_w | out_block_w,
    out_block_h | per_core_M,       out_block_w | per_core_N,
    in0_block_w | per_core_K

(``a | b``: ``b`` is a multiple of ``a``). Tails of the problem are handled by coverage, not here.
"""

from __future__ import annotations

from loom_explorer.model.expr import Var
from loom_explorer.model.quantities import Quantities
from loom_explorer.model.schedule import Constraint


def _divides(a: Var, b: Var) -> Constraint:
    return Constraint(f"divisibility[{a.name}|{b.name}]", "divisibility", "divides", a, b,
                      f"{b.name} = {{rhs}} is not a multiple of {a.name} = {{lhs}}")


def divisibility(q: Quantities) -> list[Constraint]:
    pairs = [
        (q.out_subblock_h, q.out_block_h),
        (q.out_subblock_w, q.out_block_w),
        (q.out_block_h, q.pm),
        (q.out_block_w, q.pn),
        (q.in0_block_w, q.pk),
    ]
    return [_divides(a, b) for a, b in pairs]
