"""Which cores read an input from DRAM at every K step; the latency terms (``model/latency.py``) and the NoC
link loads (``model/noc_bound.py``) both count them.

An input ``X`` is read from DRAM unless it is local to each core or placed in L1, sharded or interleaved
(``reads_dram``; an L1-interleaved input is read from the L1 banks, ``model/l1_banks.py``). Its
readers per step (``dram_readers``):

    readers_X = cores                     every core reads its own block (``Comm.dram``)
              = senders of its multicast  one core per row, column or the grid (``GridQuantities.mcast_readers``)
              = 0                         not read from DRAM
"""

from __future__ import annotations

from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.expr import Expr, const
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.problem import Placement


def reads_dram(q: GridQuantities, tensor: str) -> bool:
    """Whether ``tensor`` is read from DRAM: it is DRAM-interleaved and not local to each core."""
    return q.candidate.comm(tensor) is not Comm.local and q.problem.placement(tensor) is Placement.dram


def dram_readers(q: GridQuantities, tensor: str) -> Expr:
    """Cores that read ``tensor`` from DRAM at every K step."""
    if not reads_dram(q, tensor):
        return const(0)
    if q.candidate.comm(tensor) is Comm.dram:
        return q.cores
    return q.mcast_readers(tensor)
