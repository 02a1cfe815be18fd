"""The TT-Lang compiler's sub-blocking of a GEMM output block: constraints of the ``dst_capacity`` family
that the contraction adds for the TT-Lang target (``Problem.target`` ttlang; ``model.py``).

The TT-Lang compiler sub-blocks by itself, but with a K step of one tile (``in0_block_w = 1``) it must hold a
block of more than ``TTLANG_DST_TILES`` (4) tiles in sub-blocks of 2 to 4 tiles whose sides divide the
block's, and refuses a block that has none (measured with tt-lang 1.1.1,
tests/families/contraction/test_ttlang_compile.py: with in0_block_w = 1, 5x1, 7x1 and 1x5 are refused, 6x1,
9x1, 5x2, 2x3 compile; with in0_block_w >= 2, 5x1, 11x1 and 5x5 compile). So there

    subblock_h * subblock_w >= min(2, out_block_h * out_block_w, 3 - min(in0_block_w, 2))
    subblock_h * subblock_w <= 4 * min(in0_block_w, 2)

(with one-tile K steps: a sub-block of 2..4 tiles unless the block is one tile; otherwise no more than the
Dst rule, ``model/constraints/dst_capacity.py``), which, with the sub-block sides dividing the block's
(``model/constraints/divisibility.py``), holds for some sub-block exactly when the compiler takes the block.
"""

from __future__ import annotations

from loom_explorer.families.contraction.quantities import ContractionQuantities
from loom_explorer.model.expr import add, minimum, mul
from loom_explorer.model.schedule import Constraint

TTLANG_DST_TILES = 4  # the TT-Lang compiler's Dst capacity (tt-lang 1.1.1: "exceeds DST capacity of 4")


def ttlang_subblocks(q: ContractionQuantities) -> list[Constraint]:
    """The TT-Lang compiler's sub-blocking of a GEMM output block (module docstring): the contraction
    family adds these for the TT-Lang target (``model.py``)."""
    ((_, h, w),) = q.subblock_pairs()
    tiles, k_step = mul(h, w), minimum(q.in0_block_w, 2)
    return [
        Constraint(
            "dst_capacity[ttlang]",
            "dst_capacity",
            "le",
            tiles,
            mul(TTLANG_DST_TILES, k_step),
            "a sub-block of {lhs} tiles exceeds the TT-Lang compiler's Dst tiles ({rhs} here)",
        ),
        Constraint(
            "dst_subblock[ttlang]",
            "dst_capacity",
            "ge",
            tiles,
            minimum(2, mul(q.out_block_h, q.out_block_w), add(3, mul(-1, k_step))),
            "with one-tile K steps the TT-Lang compiler computes a block of more than 4 tiles in "
            "sub-blocks of 2 to 4 tiles; this one's is {lhs}",
        ),
    ]
