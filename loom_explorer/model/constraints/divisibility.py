"""Divisibility the kernels need (``a | b``: ``b`` is a multiple of ``a``).

Contraction (TTNN matmul_program_config legality):

    out_subblock_h | out_block_h,   out_subblock_w | out_block_w,
    out_block_h | per_core_M,       out_block_w | per_core_N,
    in0_block_w | per_core_K

Attention (chunk sizes in tiles, ``q_chunk_size/32`` and ``k_chunk_size/32``; ``D`` in tiles):

    qk_subblock_h | q chunk,  qk_subblock_w | k chunk,  out_subblock_h | q chunk,  out_subblock_w | D

Tails of the problem are handled by coverage, not here.
"""

from __future__ import annotations

from loom_explorer.model.expr import Expr, Var
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import Constraint


def _divides(a: Var, b: Expr, b_name: str) -> Constraint:
    return Constraint(
        f"divisibility[{a.name}|{b_name}]",
        "divisibility",
        "divides",
        a,
        b,
        f"{b_name} = {{rhs}} is not a multiple of {a.name} = {{lhs}}",
    )


def divisibility(q: GridQuantities) -> list[Constraint]:
    return [_divides(a, b, name) for a, b, name in q.divisibility_pairs()]
