"""The contraction family's model: a blocked matmul with its epilogue (``model/quantities.py``,
``model/latency.py``, ``model/traffic.py``; L1 buffers in ``model/constraints/l1_capacity.py``)."""

from __future__ import annotations

from functools import partial

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.constraints.dst_capacity import ttlang_subblocks
from loom_explorer.model.constraints.l1_capacity import contraction_buffers
from loom_explorer.model.constraints.ttnn_buffers import ttnn_contraction_buffers
from loom_explorer.model.families.base import FamilyModel, ModelFamily
from loom_explorer.model.latency import dram_read_bytes, latency_terms
from loom_explorer.model.noc_bound import write_link_shares
from loom_explorer.model.quantities import Quantities, build_quantities
from loom_explorer.model.schedule import Constraint, L1Buffer
from loom_explorer.model.traffic import contraction_flows
from loom_explorer.problem import KernelTarget, Problem
from loom_explorer.program.contraction import CONTRACTION, analyse_contraction


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


def contraction_work(problem: Problem) -> tuple[int, int]:
    """(FLOPs, tile matmuls) of a contraction: 2*prod(extents), prod(tile counts)."""
    con = analyse_contraction(problem.program)
    flops, tile_matmuls = 2, 1
    for d in (*con.batch_dims, con.m_dim, con.n_dim, con.k_dim):
        flops *= problem.elements(d)
        tile_matmuls *= problem.tiles(d)
    return flops, tile_matmuls


def l1_buffers(q: Quantities) -> list[L1Buffer]:
    """TTNN's matmul kernels' buffers or the exported TT-Lang GEMM kernel's (``Problem.target``)."""
    return ttnn_contraction_buffers(q) if q.problem.target is KernelTarget.ttnn else contraction_buffers(q)


def constraints(q: Quantities) -> list[Constraint]:
    """The TT-Lang compiler's sub-blocking of the GEMM output block (``dst_capacity.py``), for that target."""
    return ttlang_subblocks(q) if q.problem.target is KernelTarget.ttlang else []


FAMILY = ModelFamily(
    name=CONTRACTION.name,
    build=build,
    work_cycles=lambda hw, problem: contraction_work(problem)[1] * hw.compute.matmul_tile_cycles[
        problem.fidelity],
)
