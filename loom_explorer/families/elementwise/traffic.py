"""The element-wise family's traffic (``quantities.py`` for the notation): the inputs read (and multicast)
once per block, a scalar once, the outputs written; and the bytes read from DRAM."""

from __future__ import annotations

from loom_explorer.families.elementwise.quantities import ElementwiseQuantities
from loom_explorer.model.expr import Expr, const
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.model.latency import streamed_dram_read_bytes
from loom_explorer.model.traffic import input_flows, write_flow


def elementwise_flows(q: ElementwiseQuantities) -> list[TrafficFlow]:
    """Inputs read (and multicast) as ``model/traffic.py``'s ``input_flows``: once per block, a scalar once;
    every DRAM output written once per block."""
    counts = {t: (q.blocks if t in q.per_block else const(1)) for t in q.streamed}
    return [*input_flows(q, counts), *(write_flow(q, t, q.block, q.blocks) for t in q.dram_outputs)]


def elementwise_dram_read_bytes(q: ElementwiseQuantities) -> Expr:
    """Bytes read from DRAM by all cores: streamed inputs block by block, a scalar once per reader."""
    return streamed_dram_read_bytes(q, q.blocks, q.per_block)
