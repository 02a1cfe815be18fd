"""The data-movement family's traffic (``quantities.py`` for the notation): every source read once per block,
the output written once per block, through the shared DRAM-bank and NoC link model (``model/traffic.py``), so
``loom-explorer traffic`` and the explorer draw them. The bytes are the iteration's tiles (a padded source's
padding and a sliced output's cut-off part are counted as moved)."""

from __future__ import annotations

from loom_explorer.families.data_movement.quantities import DataMovementQuantities
from loom_explorer.model.expr import Expr
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.model.latency import streamed_dram_read_bytes
from loom_explorer.model.traffic import input_flows, write_flow


def data_movement_flows(q: DataMovementQuantities) -> list[TrafficFlow]:
    flows = input_flows(q, {t: q.blocks for t in q.streamed})
    if not q.problem.placement(q.output).in_l1:
        flows.append(write_flow(q, q.output, q.block, q.blocks))
    return flows


def data_movement_dram_read_bytes(q: DataMovementQuantities) -> Expr:
    """Bytes read from DRAM by all cores: every source once per block."""
    return streamed_dram_read_bytes(q, q.blocks, q.streamed)
