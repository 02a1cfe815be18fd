"""Dst capacity: one output sub-block is accumulated in the Dst register file.

    out_subblock_h * out_subblock_w <= D

``D`` = ``compute.dst_tiles`` (8 on Wormhole/Blackhole in half-sync mode with 16-bit accumulation) or
``compute.dst_tiles_fp32_acc`` (4) with fp32 accumulation.
"""

from __future__ import annotations

from loom_explorer.model.expr import const, mul
from loom_explorer.model.quantities import Quantities
from loom_explorer.model.schedule import Constraint


def dst_capacity(q: Quantities) -> list[Constraint]:
    acc = "fp32" if q.problem.fp32_acc else "16-bit"
    return [
        Constraint("dst_capacity", "dst_capacity", "le", mul(q.out_subblock_h, q.out_subblock_w),
                   const(q.dst_tiles),
                   f"a sub-block of {{lhs}} tiles exceeds the {{rhs}} Dst tiles available with {acc} accumulation"),
    ]
