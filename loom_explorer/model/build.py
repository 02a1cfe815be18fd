"""Build the symbolic schedule of a candidate: parameters, every constraint family, latency terms."""

from __future__ import annotations

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.constraints import FAMILIES, l1_buffers
from loom_explorer.model.expr import total
from loom_explorer.model.latency import dram_read_bytes, latency_terms
from loom_explorer.model.quantities import build_quantities
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Problem


def build_schedule(hw: HardwareSpec, problem: Problem, candidate: Candidate) -> SymbolicSchedule:
    q = build_quantities(hw, problem, candidate)
    constraints = tuple(c for family in FAMILIES for c in family(q))
    objective, terms, lower_bound = latency_terms(q)
    buffers = tuple(l1_buffers(q))
    con = q.con
    tile_matmuls = 1
    for d in (*con.batch_dims, con.m_dim, con.n_dim, con.k_dim):
        tile_matmuls *= problem.tiles(d)
    cycles_per_tile = hw.compute.matmul_tile_cycles[problem.fidelity]
    flops = 2
    for d in (*con.batch_dims, con.m_dim, con.n_dim, con.k_dim):
        flops *= problem.elements(d)
    return SymbolicSchedule(
        hardware=hw,
        problem=problem,
        candidate=candidate,
        params=q.params,
        constraints=constraints,
        latency=objective,
        latency_lower_bound=lower_bound,
        terms=tuple(terms),
        l1_buffers=buffers,
        l1_bytes=total(b.bytes_expr for b in buffers),
        dram_read_bytes=dram_read_bytes(q),
        flops=flops,
        ideal_cycles=-(-tile_matmuls * cycles_per_tile // hw.grid.cores),
    )
