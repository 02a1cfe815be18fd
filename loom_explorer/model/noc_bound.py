"""The NoC bound: no schedule finishes before its busiest link or its busiest DRAM bank has moved its bytes.

For every flow ``f`` of the candidate (``model/traffic.py``) with ``B_f`` bytes per sender per repetition
and ``n_f`` repetitions, ``a_f(grid_x, grid_y)`` is the load of the busiest link of its NoC in the flow's
unit (``noc/tables.py``: DOR routes on the chip's real NoC coordinates, tabulated per grid shape):

    link_f = ceil(a_f * B_f * n_f / (u_f * W_link))       u_f = C for DRAM flows (pages interleaved over
                                                            the C channels), else 1
    links  = max_f link_f
    banks  = ceil(sum over DRAM flows of senders_f * B_f * n_f / (C * W_bank))
    noc    = max(links, banks)

``W_link`` is ``noc.link_bytes_per_cycle`` and ``W_bank`` ``dram.channel_peak_bytes_per_cycle``. Both are
lower bounds on the run time (a link or a bank cannot move more than its width per cycle), so the
latency becomes ``max(T, noc)``, with the difference reported as the term ``noc_bound``. ``links`` takes
each flow's busiest link on its own (flows that share a link are not added up), which keeps it a lower
bound and cheap: one table lookup and one product per flow. The traffic report (``traffic/``) routes the
concrete schedule and sums every flow on every link.
"""

from __future__ import annotations

from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.expr import Expr, ceil_rate, const, lookup, maximum, mul, total
from loom_explorer.model.latency import dram_readers
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.noc.tables import link_units


def senders(q: GridQuantities, flow: TrafficFlow) -> Expr:
    """How many cores send ``flow``."""
    if flow.kind == "dram_read" and flow.tensor in q.streamed and q.candidate.comm(flow.tensor) is not Comm.local:
        return dram_readers(q, flow.tensor)
    return {"all": q.cores, "row_heads": q.grid_y, "col_heads": q.grid_x, "origin": const(1)}[flow.senders]


def link_bound_cycles(q: GridQuantities, flows: list[TrafficFlow]) -> Expr:
    hw = q.hw
    terms = []
    for f in flows:
        axis = f.axis if f.kind in ("multicast", "gather") else None  # a DRAM flow's table needs no axis
        table = link_units(hw, f.kind, f.senders, axis, f.noc, one_d=q.candidate.is_1d)
        coeff = lookup((q.grid_x, q.grid_y), {(x, y): table[(x, y)] for x in q.grid_x.values for y in q.grid_y.values})
        unit = hw.dram.channels if f.kind in ("dram_read", "dram_write") else 1
        terms.append(ceil_rate(mul(coeff, f.bytes, f.count), unit * hw.noc.link_bytes_per_cycle))
    return maximum(0, *terms)


def bank_bound_cycles(q: GridQuantities, flows: list[TrafficFlow]) -> Expr:
    dram = total(mul(senders(q, f), f.bytes, f.count) for f in flows if f.kind in ("dram_read", "dram_write"))
    return ceil_rate(dram, q.hw.dram.channels * q.hw.dram.channel_peak_bytes_per_cycle)


def noc_bound_cycles(q: GridQuantities, flows: list[TrafficFlow]) -> Expr:
    return maximum(link_bound_cycles(q, flows), bank_bound_cycles(q, flows))
