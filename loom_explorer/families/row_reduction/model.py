"""The row-reduction family's model: blocks of whole tile rows per core, the reductions' partials gathered
and combined when the columns are split (``quantities.py``, ``traffic.py``, ``buffers.py``, ``latency.py``,
``work.py``, ``constraints.py``)."""

from __future__ import annotations

from functools import partial

from loom_explorer.families.row_reduction.buffers import row_reduction_buffers
from loom_explorer.families.row_reduction.constraints import row_reduction_constraints
from loom_explorer.families.row_reduction.latency import row_reduction_latency_terms
from loom_explorer.families.row_reduction.program import ROW_REDUCTION
from loom_explorer.families.row_reduction.quantities import build_row_reduction_quantities
from loom_explorer.families.row_reduction.traffic import row_reduction_dram_read_bytes, row_reduction_flows
from loom_explorer.families.row_reduction.work import row_reduction_work
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.families.base import FamilyModel, ModelFamily
from loom_explorer.model.noc_bound import write_link_shares
from loom_explorer.problem import Problem


def build(hw: HardwareSpec, problem: Problem, candidate: Candidate, noc_bound: bool) -> FamilyModel:
    """The row-reduction model of ``candidate``; the output writes' link shares bound the writes (when
    ``noc_bound``)."""
    q = build_row_reduction_quantities(hw, problem, candidate)
    flows = row_reduction_flows(q)
    operations, work_cycles = row_reduction_work(hw, problem)
    return FamilyModel(
        quantities=q,
        flows=tuple(flows),
        step_tensors=q.per_block,
        latency=partial(row_reduction_latency_terms, q, write_links=write_link_shares(q, flows) if noc_bound else []),
        dram_read_bytes=row_reduction_dram_read_bytes(q),
        flops=operations,
        work_cycles=work_cycles,
        l1_buffers=tuple(row_reduction_buffers(q)),  # the shared constraint families cover the rest
        constraints=tuple(row_reduction_constraints(q)),
    )


FAMILY = ModelFamily(
    name=ROW_REDUCTION.name,
    build=build,
    work_cycles=lambda hw, problem: row_reduction_work(hw, problem)[1],
)
