"""The row-reduction family's L1 buffers of one core (``quantities.py`` for the notation; the same for TTNN's
kernels and the TT-Lang writer's)."""

from __future__ import annotations

from loom_explorer.families.row_reduction.quantities import RowReductionQuantities
from loom_explorer.model.expr import const, mul
from loom_explorer.model.schedule import L1Buffer


def row_reduction_buffers(q: RowReductionQuantities) -> list[L1Buffer]:
    """Per core: each input's circular buffer (``depth`` blocks; a row vector's or scalar's tiles, held), or
    its resident shard when it lives in L1; a block per version of each intermediate (each pass stores a new
    one), two of an output (its shard when it lives in L1); a scaler tile per kind of reduction (ones;
    ``1/W`` for a mean); with split columns, ``(R*g + 5)*block_h`` tiles for ``R`` reductions (module
    docstring of ``ttlang.py``: every core's, as every count is the slowest core's)."""
    out: list[L1Buffer] = []
    for t in q.streamed:
        if q.problem.placement(t).in_l1:
            out.append(L1Buffer(f"{t}_shard", mul(q.resident_tiles(t), q.tile_bytes(t)), f"{t} resident shard"))
        elif t in q.per_block:
            out.append(L1Buffer(t, mul(q.depth[t], q.tiles(t), q.tile_bytes(t)), f"{t} circular buffer"))
        else:
            out.append(L1Buffer(t, mul(q.tiles(t), q.tile_bytes(t)), f"{t}, held for the whole kernel"))
    for p in q.st.passes:
        if p.tensor in q.st.outputs and q.problem.placement(p.tensor).in_l1:
            out.append(
                L1Buffer(
                    f"{p.tensor}_shard",
                    mul(q.resident_tiles(p.tensor), q.tile_bytes(p.tensor)),
                    f"{p.tensor} shard (lives in L1)",
                )
            )
            continue
        blocks = 2 if p.tensor in q.st.outputs else 1
        out.append(
            L1Buffer(
                f"{p.tensor}{p.version}",
                mul(blocks, q.tiles(p.tensor), q.tile_bytes(p.tensor)),
                f"{p.tensor}, version {p.version}{' (double-buffered)' if blocks == 2 else ''}",
            )
        )
    kinds = {r.op == "mean" for r in q.st.reductions}
    tile = q.tile_bytes(q.st.full[0])
    out.append(L1Buffer("scalers", const(len(kinds) * tile), "the reductions' scaler tiles"))
    reductions = len(q.st.reductions)
    if q.candidate.gather_axis is not None and reductions:
        out.append(
            L1Buffer(
                "partials",
                mul(reductions * q.split_cores + 5, q.block_h, q.acc_tile_bytes),
                "per reduction the g - 1 partials the first core receives (a slot per gather pipe) and "
                "the result another core receives; the own or sent partial, two accumulator blocks, "
                "the result sent",
            )
        )
    return out
