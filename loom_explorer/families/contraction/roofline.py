"""A contraction's work: its FLOPs and tile matmuls (the compute roofline and the busiest core's floor count them)."""

from __future__ import annotations

from loom_explorer.families.contraction.program import analyse_contraction
from loom_explorer.problem import Problem


def contraction_work(problem: Problem) -> tuple[int, int]:
    """(FLOPs, tile matmuls) of a contraction: 2*prod(extents), prod(tile counts)."""
    con = analyse_contraction(problem.program)
    flops, tile_matmuls = 2, 1
    for d in (*con.batch_dims, con.m_dim, con.n_dim, con.k_dim):
        flops *= problem.elements(d)
        tile_matmuls *= problem.tiles(d)
    return flops, tile_matmuls
