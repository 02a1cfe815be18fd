"""The data-movement family's L1 buffers of one core (``quantities.py`` for the notation)."""

from __future__ import annotations

from loom_explorer.families.data_movement.quantities import DataMovementQuantities
from loom_explorer.model.expr import mul
from loom_explorer.model.schedule import L1Buffer


def data_movement_buffers(q: DataMovementQuantities) -> list[L1Buffer]:
    """Per core: each source's circular buffer (``depth`` blocks) or, in L1, its shard (the elements it
    holds: ``shard_unit_bytes``); the output's double-buffered block or, in L1, its shard."""
    out: list[L1Buffer] = []
    for t in q.streamed:
        if q.problem.placement(t).in_l1:
            out.append(L1Buffer(f"{t}_shard", mul(q.core_tiles, q.shard_unit_bytes(t)), f"{t} resident shard"))
        else:
            out.append(L1Buffer(t, mul(q.depth[t], q.block, q.tile_bytes(t)), f"{t} circular buffer"))
    y = q.output
    if q.problem.placement(y).in_l1:
        out.append(L1Buffer(y, mul(q.core_tiles, q.shard_unit_bytes(y)), f"{y} shard (lives in L1)"))
    else:
        out.append(L1Buffer(y, mul(2, q.block, q.tile_bytes(y)), f"{y} output blocks (double-buffered)"))
    return out
