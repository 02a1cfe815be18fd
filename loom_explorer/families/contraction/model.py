"""The contraction family's model: a blocked matmul with its epilogue (``quantities.py``, ``latency.py``,
``traffic.py``; L1 buffers in ``buffers.py``, the TT-Lang compiler's sub-blocking in ``subblocks.py``)."""

from __future__ import annotations

from functools import partial

from loom_explorer.families.contraction.buffers import l1_buffers
from loom_explorer.families.contraction.floors import gemm_core_cycles
from loom_explorer.families.contraction.latency import dram_read_bytes, latency_terms
from loom_explorer.families.contraction.program import CONTRACTION
from loom_explorer.families.contraction.quantities import ContractionQuantities, build_quantities
from loom_explorer.families.contraction.roofline import contraction_work
from loom_explorer.families.contraction.subblocks import ttlang_subblocks
from loom_explorer.families.contraction.traffic import contraction_flows
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.families.base import FamilyModel, ModelFamily
from loom_explorer.model.noc_bound import write_link_shares
from loom_explorer.model.schedule import Constraint
from loom_explorer.problem import KernelTarget, Problem


def build(hw: HardwareSpec, problem: Problem, candidate: Candidate, noc_bound: bool) -> FamilyModel:
    """The contraction's model of ``candidate``: every input streams per K step; the output write's
    link shares bound the write (when ``noc_bound``)."""
    q = build_quantities(hw, problem, candidate)
    flows = contraction_flows(q)
    flops, tile_matmuls = contraction_work(problem)
    return FamilyModel(
        quantities=q,
        flows=tuple(flows),
        step_tensors=q.inputs,
        latency=partial(latency_terms, q, write_links=write_link_shares(q, flows) if noc_bound else []),
        dram_read_bytes=dram_read_bytes(q),
        flops=flops,
        work_cycles=tile_matmuls * hw.compute.matmul_tile_cycles[problem.fidelity],
        l1_buffers=tuple(l1_buffers(q)),
        constraints=tuple(constraints(q)),
    )


def constraints(q: ContractionQuantities) -> list[Constraint]:
    """The TT-Lang compiler's sub-blocking of the GEMM output block (``subblocks.py``), for that target."""
    return ttlang_subblocks(q) if q.problem.target is KernelTarget.ttlang else []


FAMILY = ModelFamily(
    name=CONTRACTION.name,
    build=build,
    work_cycles=lambda hw, problem: contraction_work(problem)[1] * hw.compute.matmul_tile_cycles[problem.fidelity],
    core_floor_cycles=gemm_core_cycles,
)
