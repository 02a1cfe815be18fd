"""Enumerate the mapping candidates of a contraction program on a grid.

Layouts: every ordered pair of distinct dimensions (rows, columns) with at most one reduction dimension,
and every parallel dimension alone on a 1-D layout; dimensions of extent 1 are not spread. For each
layout and each matmul input the options follow from the access maps only: ``dram`` always (or ``local``
for an L1-resident tensor no other core needs), and a multicast along every grid axis whose dimensions do
not index the tensor (it is shared there), plus the 2-D multicast when it is shared along both. Tensors
sharded in L1 keep only the layouts and options their sharding fits (``mapping/sharding.py``).
"""

from __future__ import annotations

from itertools import permutations, product

from loom_explorer.mapping.candidate import Axis, Candidate, Comm
from loom_explorer.mapping.sharding import shard_fits
from loom_explorer.problem import Problem
from loom_explorer.program.contraction import analyse_contraction


def enumerate_candidates(problem: Problem) -> list[Candidate]:
    program = problem.program
    con = analyse_contraction(program)
    dims = [d for d in (*con.batch_dims, con.m_dim, con.n_dim, con.k_dim) if problem.tiles(d) > 1]
    layouts: list[tuple[tuple[Axis, str], ...]] = []
    for dy, dx in permutations(dims, 2):
        if program.dim(dy).kind == "reduction" and program.dim(dx).kind == "reduction":
            continue
        layouts.append((("y", dy), ("x", dx)))
    for d in dims:
        if program.dim(d).kind == "parallel":
            layouts.append((("xy", d),))
    if not layouts:  # nothing worth spreading (every dimension fits one tile): one core does it all
        layouts.append(())
    out: list[Candidate] = []
    for axes in layouts:
        gather = next((a for a, d in axes if program.dim(d).kind == "reduction"), None)
        if not shard_fits(problem, axes, con.matmul.out, None):
            continue
        options = [_comm_options(problem, tensor, axes) for tensor in (con.matmul.a, con.matmul.b)]
        for combo in product(*options):
            out.append(Candidate(axes=axes, comms=tuple(zip((con.matmul.a, con.matmul.b), combo)),
                                 gather_axis=gather))
    return out


def _comm_options(problem: Problem, tensor: str, axes: tuple[tuple[Axis, str], ...]) -> list[Comm]:
    shared = [a for a, d in axes if problem.program.shared_along(tensor, d)]
    mcasts: list[Comm] = []
    if "xy" in shared:
        mcasts.append(Comm.mcast_xy)
    if "x" in shared:
        mcasts.append(Comm.mcast_x)
    if "y" in shared:
        mcasts.append(Comm.mcast_y)
    if "x" in shared and "y" in shared:
        mcasts.append(Comm.mcast_xy)
    if problem.placement(tensor).in_l1:
        # resident shards: no DRAM read; shared data still has to travel from the core that holds it
        options = [Comm.local] if not shared else [m for m in mcasts if _covers(m, shared)]
        return [c for c in options if shard_fits(problem, axes, tensor, c)]
    return [Comm.dram, *mcasts]


def _covers(comm: Comm, shared: list[Axis]) -> bool:
    return comm is Comm.mcast_xy or [comm.axis] == shared
