"""Dst capacity: one output sub-block of each matmul is accumulated in the Dst register file.

    subblock_h * subblock_w <= D       (out_subblock_*; attention also qk_subblock_*)

``D`` = ``compute.dst_tiles`` (8 on Wormhole/Blackhole in half-sync mode with 16-bit accumulation) or
``compute.dst_tiles_fp32_acc`` (4) with fp32 accumulation.

A family adds its own Dst rules (``FamilyModel.constraints``, family ``dst_capacity``): the contraction's
TT-Lang sub-blocking is in ``families/contraction/subblocks.py``.
"""

from __future__ import annotations

from loom_explorer.model.expr import const, mul
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import Constraint


def dst_capacity(q: GridQuantities) -> list[Constraint]:
    acc = "fp32" if q.problem.fp32_acc else "16-bit"
    pairs = q.subblock_pairs()
    return [
        Constraint(
            "dst_capacity" if len(pairs) == 1 else f"dst_capacity[{name}]",
            "dst_capacity",
            "le",
            mul(h, w),
            const(q.dst_tiles),
            f"a {name} sub-block of {{lhs}} tiles exceeds the {{rhs}} Dst tiles available with {acc} accumulation",
        )
        for name, h, w in pairs
    ]
