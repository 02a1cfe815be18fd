"""The NoC traffic of an attention candidate, as flows (the shared flow builders of ``model/traffic.py``)."""

from __future__ import annotations

from loom_explorer.families.attention.quantities import MASK_INDEX, AttentionQuantities
from loom_explorer.model.expr import const, mul
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.model.traffic import WRITER_NOC, input_flows, write_flow


def attention_flows(q: AttentionQuantities) -> list[TrafficFlow]:
    """The NoC flows of attention: a q chunk per query chunk, k and v chunks per step, o chunks written;
    with the causal mask, its index once per core (``families/attention/quantities.py``). Counts are the slowest core's
    (the latency's); the tiles moved take each core's own (``families/attention/work.py``, by these flows'
    names)."""
    q_in, k_in, v_in = q.st.streamed
    flows = input_flows(q, {q_in: q.chunks, k_in: q.steps, v_in: q.steps})
    flows.append(write_flow(q, q.st.output, q.block_tiles(q.st.output), q.chunks))
    if q.causal:
        masked = q.st.step_ops("diagonal")[0].tensor
        flows.append(
            TrafficFlow(
                "causal mask index read",
                MASK_INDEX,
                "dram_read",
                "all",
                None,
                WRITER_NOC,
                mul(q.mask_index_tiles, q.tile_bytes(masked)),
                const(1),
                format_of=masked,
            )
        )
    return flows
