"""The element-wise family's model: blocks of output tiles per core, every input but a scalar streamed
with them (``quantities.py`` for the notation)."""

from __future__ import annotations

from functools import partial

from loom_explorer.families.elementwise.buffers import elementwise_buffers
from loom_explorer.families.elementwise.latency import elementwise_latency_terms
from loom_explorer.families.elementwise.program import ELEMENTWISE
from loom_explorer.families.elementwise.quantities import build_elementwise_quantities
from loom_explorer.families.elementwise.traffic import elementwise_dram_read_bytes, elementwise_flows
from loom_explorer.families.elementwise.work import elementwise_work
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.families.base import FamilyModel, ModelFamily
from loom_explorer.model.noc_bound import write_link_shares
from loom_explorer.problem import Problem


def build(hw: HardwareSpec, problem: Problem, candidate: Candidate, noc_bound: bool) -> FamilyModel:
    """The element-wise model of ``candidate``: inputs stream with every block; the output
    writes' link shares bound the writes (when ``noc_bound``)."""
    q = build_elementwise_quantities(hw, problem, candidate)
    flows = elementwise_flows(q)
    operations, work_cycles = elementwise_work(hw, problem)
    return FamilyModel(
        quantities=q,
        flows=tuple(flows),
        step_tensors=q.per_block,
        latency=partial(elementwise_latency_terms, q, write_links=write_link_shares(q, flows) if noc_bound else []),
        dram_read_bytes=elementwise_dram_read_bytes(q),
        flops=operations,
        work_cycles=work_cycles,
        l1_buffers=tuple(elementwise_buffers(q)),  # the shared constraint families cover the rest
    )


FAMILY = ModelFamily(
    name=ELEMENTWISE.name,
    build=build,
    work_cycles=lambda hw, problem: elementwise_work(hw, problem)[1],
)
