"""The element-wise family's L1 buffers of one core (``quantities.py`` for the notation; the same for TTNN's
kernels and the TT-Lang writer's)."""

from __future__ import annotations

from loom_explorer.families.elementwise.quantities import ElementwiseQuantities, tiles_of
from loom_explorer.model.expr import Expr, const, mul
from loom_explorer.model.schedule import L1Buffer


def _resident_tiles(q: ElementwiseQuantities, tensor: str) -> Expr:
    """Tiles of an L1-resident input one core holds: its share of each of the tensor's dimensions."""
    dims = q.problem.program.tensor(tensor).dims
    if q.flat is not None:
        return q.core_tiles if tensor in q.st.full else const(tiles_of(q.problem, dims))
    return mul(1, *(q.share(d) for d in dims))


def elementwise_buffers(q: ElementwiseQuantities) -> list[L1Buffer]:
    """Per core: each streamed input's circular buffer (``depth`` blocks of its block tiles), a scalar's one
    tile, an L1-resident input's shard; each output's double-buffered block (or its shard in L1)."""
    out: list[L1Buffer] = []
    for t in q.streamed:
        if q.problem.placement(t).in_l1:
            out.append(L1Buffer(f"{t}_shard", mul(_resident_tiles(q, t), q.tile_bytes(t)), f"{t} resident shard"))
        elif t in q.per_block:
            out.append(L1Buffer(t, mul(q.depth[t], q.block_tiles(t), q.tile_bytes(t)), f"{t} circular buffer"))
        else:
            out.append(L1Buffer(t, const(q.tile_bytes(t)), f"{t}, a scalar held for the whole kernel"))
    for t in q.st.outputs:
        if q.problem.placement(t).in_l1:
            out.append(L1Buffer(t, mul(q.core_tiles, q.tile_bytes(t)), f"{t} shard (lives in L1)"))
        else:
            out.append(L1Buffer(t, mul(2, q.block, q.tile_bytes(t)), f"{t} output blocks (double-buffered)"))
    return out
