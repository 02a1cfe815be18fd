"""The row-reduction family's traffic (``quantities.py`` for the notation): the inputs read every block or
once (TTNN's split-column interleaved reader: ``p`` times a block, ``ttnn_reads.py``), each reduction's
partials gathered and the combined vector multicast back when the columns are split over ``g > 1`` cores
(TTNN's sharded LayerNorm), the outputs written; and the bytes read from DRAM."""

from __future__ import annotations

from loom_explorer.families.row_reduction.quantities import RowReductionQuantities
from loom_explorer.families.row_reduction.ttnn_reads import tile_round_trip_reader
from loom_explorer.model.dram_reads import dram_readers
from loom_explorer.model.expr import Expr, const, mul, total
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.model.latency import block_bytes, streamed_dram_read_bytes
from loom_explorer.model.traffic import WRITER_NOC, input_flows, write_flow
from loom_explorer.noc.tables import Senders

_HEADS: dict[str, Senders] = {"x": "row_heads", "y": "col_heads", "xy": "origin"}


def row_reduction_flows(q: RowReductionQuantities) -> list[TrafficFlow]:
    """Inputs read (and multicast) every block or once; with split columns, each reduction's partials
    gathered to the first core along the axis and the combined vector multicast back; outputs written."""
    n = q.blocks
    reader = tile_round_trip_reader(q)
    passes = {t: reader.passes for t in reader.inputs} if reader else {}
    flows = input_flows(q, {t: (mul(n, passes.get(t, 1)) if t in q.per_block else const(1)) for t in q.streamed})
    axis = q.candidate.gather_axis
    if axis is not None:
        for r in q.st.reductions:
            flows.append(
                TrafficFlow(
                    f"{r.out} partials gather",
                    r.out,
                    "gather",
                    "all",
                    axis,
                    WRITER_NOC,
                    mul(q.block_h, q.acc_tile_bytes),
                    n,
                )
            )
            flows.append(
                TrafficFlow(
                    f"{r.out} multicast",
                    r.out,
                    "multicast",
                    _HEADS[axis],
                    axis,
                    WRITER_NOC,
                    mul(q.block_h, q.tile_bytes(r.out)),
                    n,
                )
            )
    return [*flows, *(write_flow(q, t, q.tiles(t), n) for t in q.dram_outputs)]


def row_reduction_dram_read_bytes(q: RowReductionQuantities) -> Expr:
    """Bytes read from DRAM by all cores: inputs read every block once per block, the others once; with TTNN's
    re-reading reader (``ttnn_reads.py``) its inputs ``p`` times a block and its outputs read back once."""
    once = streamed_dram_read_bytes(q, q.blocks, q.per_block)
    reader = tile_round_trip_reader(q)
    if reader is None:
        return once
    again = total(mul(reader.passes - 1, dram_readers(q, t), q.blocks, block_bytes(q, t)) for t in reader.inputs)
    back = total(mul(q.cores, q.blocks, q.tiles(t), q.tile_bytes(t)) for t in reader.reread)
    return once + again + back
