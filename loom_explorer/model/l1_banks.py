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
bound or the DRAM link tables (``model/noc_bound.py``). What it does load is the NoC as a whole: when every
core moves its block at once (a step's reads, a block's write-back), ``T`` bytes in all, each page crosses
``dx`` x-links then ``dy`` y-links on average (NoC0 goes along the source's row, then down the destination's
column), spread over the ``rows * W`` x-links of the worker rows and the ``columns * H`` y-links of the
worker columns:

    banks    = ceil(T * s / link_bytes_per_cycle),   s = max(dx / (rows * W), dy / (columns * H))

an argument of the step's (or write-back's) max beside the per-core transfer, as ``chip`` is for DRAM
(``bank_traffic_cycles``). ``model/latency.py`` calls these wherever a DRAM read or write of the same block
would be costed, so every family's interleaved default takes them.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.expr import Expr, ceil_rate, const
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
    return sum(_mean_hops(hw))


def _mean_hops(hw: HardwareSpec) -> tuple[float, float]:
    """(mean x hops, mean y hops) of ``mean_bank_hops``."""
    g = hw.grid
    xs, ys = tuple(g.noc_x[: g.columns]), tuple(g.noc_y[: g.rows])
    return _mean_axis_hops(xs, g.noc_width, hw.noc.topology), _mean_axis_hops(ys, g.noc_height, hw.noc.topology)


@lru_cache(maxsize=64)
def _mean_axis_hops(coords: tuple[int, ...], extent: int, topology: str) -> float:
    """Mean hops along one axis between two of ``coords`` (one-way links that wrap on a torus)."""
    if topology == "torus":
        return sum((b - a) % extent for a in coords for b in coords) / len(coords) ** 2
    return sum(abs(b - a) for a in coords for b in coords) / len(coords) ** 2


def link_share(hw: HardwareSpec) -> float:
    """``s = max(dx / (rows * W), dy / (columns * H))``: the share of all cores' bytes the average link of
    the busier kind carries (module docstring)."""
    g = hw.grid
    dx, dy = _mean_hops(hw)
    return max(dx / (g.rows * g.noc_width), dy / (g.columns * g.noc_height))


def bank_traffic_cycles(q: GridQuantities, total_bytes: Expr) -> Expr:
    """``ceil(T * s / link_bytes_per_cycle)``: the NoC's time for ``total_bytes`` moved to or from the L1
    banks by many cores at once (module docstring)."""
    return ceil_rate(total_bytes, Fraction(q.hw.noc.link_bytes_per_cycle) / Fraction(link_share(q.hw)))


def bank_readers(q: GridQuantities, tensor: str) -> Expr:
    """Cores that read ``tensor`` from the L1 banks at every step: every core (``Comm.dram``), or the
    senders of its multicast; none when it is not read from them."""
    if not reads_l1_banks(q, tensor):
        return const(0)
    if q.candidate.comm(tensor) is Comm.dram:
        return q.cores
    return q.mcast_readers(tensor)


def page_latency_cycles(hw: HardwareSpec) -> int:
    """``L_l1 = transaction_latency_cycles + hop_latency_cycles * hops``, rounded up (module docstring)."""
    return hw.noc.transaction_latency_cycles + math.ceil(hw.noc.hop_latency_cycles * mean_bank_hops(hw))


def transfer_cycles(q: GridQuantities, nbytes: Expr) -> Expr:
    """``ceil(B / unicast_bytes_per_cycle)``: one core moving ``nbytes`` to or from the L1 banks."""
    return ceil_rate(nbytes, q.hw.noc.unicast_bytes_per_cycle)
