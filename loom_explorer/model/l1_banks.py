"""Reads and writes of an L1-interleaved tensor (``Placement.l1_interleaved``): its pages dealt round-robin
over the L1 banks of the worker cores, each page moved over the NoC by one transaction, as a DRAM-interleaved
tensor's are but with no DRAM bank or DRAM bandwidth on the way.

TTNN's kernels address both kinds of interleaved buffer the same way (``InterleavedAddrGen<DRAM>``, whose
flag picks the DRAM banks or the L1 banks of ``l1_bank_to_noc_xy``: ``tt_metal/hw/inc/dataflow_api.h``
@f5fd36ed), so a reader issues one NoC read per page and waits for the block, and a
writer one NoC write per page. With the hardware file's NoC figures (``noc``):

    hops     = mean over (reader, bank) pairs of worker cores of the DOR route length on NoC0
               ((x_b - x_r) mod W + (y_b - y_r) mod H on the W x H torus; NoC1's routes, reversed, have the
               same mean)
    L_l1     = transaction_latency_cycles + hop_latency_cycles * hops        (one page, request to data)
    read_X   = ceil(B_X / unicast_bytes_per_cycle) + L_l1                   (one block of B_X bytes)
    write_X  = ceil(B_X / unicast_bytes_per_cycle) + L_l1

The pages of every block are spread over all worker cores, so no bank or link is a funnel the way the DRAM
columns are: an L1-interleaved flow adds nothing to the chip's DRAM read rate (``chip``), the DRAM bank
bound or the DRAM link tables (``model/noc_bound.py``). ``model/latency.py`` calls these wherever a DRAM
read or write of the same block would be costed, so every family's interleaved default takes them.
"""

from __future__ import annotations

import math
from functools import lru_cache

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.expr import Expr, ceil_rate
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.problem import Placement


def in_l1_banks(q: GridQuantities, tensor: str) -> bool:
    """Whether ``tensor`` is L1-interleaved."""
    return q.problem.placement(tensor) is Placement.l1_interleaved


def reads_l1_banks(q: GridQuantities, tensor: str) -> bool:
    """Whether ``tensor`` is read page by page from the worker cores' L1 banks (an L1-interleaved input
    that is not local to each core)."""
    return in_l1_banks(q, tensor) and q.candidate.comm(tensor) is not Comm.local


def mean_bank_hops(hw: HardwareSpec) -> float:
    """The mean NoC0 route length, in hops, from a worker core to the L1 bank of a worker core (module
    docstring), over every ordered pair of the compute grid's cores (the pair of a core with itself
    included: a page of its own bank is read over the NoC too, with no hop)."""
    g = hw.grid
    return _mean_hops(tuple(g.noc_x[: g.columns]), tuple(g.noc_y[: g.rows]), g.noc_width, g.noc_height, hw.noc.topology)


@lru_cache(maxsize=16)
def _mean_hops(xs: tuple[int, ...], ys: tuple[int, ...], width: int, height: int, topology: str) -> float:
    if topology == "torus":  # one-way links: a route wraps around
        dx = sum((b - a) % width for a in xs for b in xs) / len(xs) ** 2
        dy = sum((b - a) % height for a in ys for b in ys) / len(ys) ** 2
    else:
        dx = sum(abs(b - a) for a in xs for b in xs) / len(xs) ** 2
        dy = sum(abs(b - a) for a in ys for b in ys) / len(ys) ** 2
    return dx + dy


def page_latency_cycles(hw: HardwareSpec) -> int:
    """``L_l1 = transaction_latency_cycles + hop_latency_cycles * hops``, rounded up (module docstring)."""
    return hw.noc.transaction_latency_cycles + math.ceil(hw.noc.hop_latency_cycles * mean_bank_hops(hw))


def transfer_cycles(q: GridQuantities, nbytes: Expr) -> Expr:
    """``ceil(B / unicast_bytes_per_cycle)``: one core moving ``nbytes`` to or from the L1 banks."""
    return ceil_rate(nbytes, q.hw.noc.unicast_bytes_per_cycle)
