"""Dst capacity: one output sub-block of each matmul is accumulated in the Dst register file.

    subblock_h * subblock_w <= D       (out_subblock_*; attention also qk_subblock_*)

``D`` = ``compute.dst_tiles`` (8 on Wormhole/Blackhole in half-sync mode with 16-bit accumulation) or
``compute.dst_tiles_fp32_acc`` (4) with fp32 accumulation.

For the exported TT-Lang GEMM kernels (``Problem.target`` ttlang) the TT-Lang compiler sub-blocks by itself,
but with a K step of one tile (``in0_block_w = 1``) it must hold a block of more than ``TTLANG_DST_TILES``
(4) tiles in sub-blocks of 2 to 4 tiles whose sides divide the block's, and refuses a block that has none
(measured with tt-lang 1.1.1, tests/export/test_ttlang_compile.py: with in0_block_w = 1, 5x1, 7x1 and 1x5 are
refused, 6x1, 9x1, 5x2, 2x3 compile; with in0_block_w >= 2, 5x1, 11x1 and 5x5 compile). So there

    subblock_h * subblock_w >= min(2, out_block_h * out_block_w, 3 - min(in0_block_w, 2))
    subblock_h * subblock_w <= 4 * min(in0_block_w, 2)

(with one-tile K steps: a sub-block of 2..4 tiles unless the block is one tile; otherwise no more than the
Dst rule above), which, with the sub-block sides dividing the block's (``divisibility.py``), holds for some
sub-block exactly when the compiler takes the block.
"""

from __future__ import annotations

from loom_explorer.model.expr import add, const, minimum, mul
from loom_explorer.model.quantities import GridQuantities, Quantities
from loom_explorer.model.schedule import Constraint

TTLANG_DST_TILES = 4  # the TT-Lang compiler's Dst capacity (tt-lang 1.1.1: "exceeds DST capacity of 4")


def dst_capacity(q: GridQuantities) -> list[Constraint]:
    acc = "fp32" if q.problem.fp32_acc else "16-bit"
    pairs = q.subblock_pairs()
    return [
        Constraint("dst_capacity" if len(pairs) == 1 else f"dst_capacity[{name}]", "dst_capacity", "le",
                   mul(h, w), const(q.dst_tiles),
                   f"a {name} sub-block of {{lhs}} tiles exceeds the {{rhs}} Dst tiles available with {acc} "
                   "accumulation")
        for name, h, w in pairs
    ]


def ttlang_subblocks(q: Quantities) -> list[Constraint]:
    """The TT-Lang compiler's sub-blocking of a GEMM output block (module docstring): the contraction
    family adds these for the TT-Lang target (``model/families/contraction.py``)."""
    (_, h, w), = q.subblock_pairs()
    tiles, k_step = mul(h, w), minimum(q.in0_block_w, 2)
    return [
        Constraint("dst_capacity[ttlang]", "dst_capacity", "le", tiles, mul(TTLANG_DST_TILES, k_step),
                   "a sub-block of {lhs} tiles exceeds the TT-Lang compiler's Dst tiles ({rhs} here)"),
        Constraint("dst_subblock[ttlang]", "dst_capacity", "ge", tiles,
                   minimum(2, mul(q.out_block_h, q.out_block_w), add(3, mul(-1, k_step))),
                   "with one-tile K steps the TT-Lang compiler computes a block of more than 4 tiles in "
                   "sub-blocks of 2 to 4 tiles; this one's is {lhs}"),
    ]
