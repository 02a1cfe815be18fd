"""Multicast: a multicast has receivers, and split-K has partners.

    mcast_x:  grid_x >= 2      mcast_y:  grid_y >= 2      mcast_xy: cores >= 2
    grouped (k[Hkv] along H):  the cores of one group, (E_H/E_Hkv)/per_core_H per axis, >= 2
    split-K along an axis:     cores along it >= 2

A "multicast" to nobody is the DRAM-read candidate in disguise; requiring receivers keeps every
candidate what its name says. Rectangles are legal by construction: the receivers of a row/column
multicast are the used cores of that row/column, and a 1-D multicast targets the used grid rectangle.
"""

from __future__ import annotations

from loom_explorer.model.expr import const
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import Constraint

_AXIS_NAME = {"x": "grid_x", "y": "grid_y", "xy": "cores"}


def multicast(q: GridQuantities) -> list[Constraint]:
    out: list[Constraint] = []
    for tensor in q.streamed:
        axis = q.candidate.comm(tensor).axis
        if axis is None:
            continue
        out.append(
            Constraint(
                f"multicast[{tensor}]",
                "multicast",
                "ge",
                q.mcast_receivers(tensor),
                const(2),
                f"{tensor} multicast along {_AXIS_NAME[axis]} reaches {{lhs}} cores; "
                "a multicast needs at least {rhs}",
            )
        )
    if q.candidate.gather_axis:
        axis = q.candidate.gather_axis
        out.append(
            Constraint(
                "multicast[split_k]",
                "multicast",
                "ge",
                q.axis_cores(axis),
                const(2),
                f"split-K over {_AXIS_NAME[axis]} = {{lhs}} cores; needs at least {{rhs}}",
            )
        )
    return out
