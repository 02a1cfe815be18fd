"""NoC link loads in the model: a step cannot end before its busiest link has moved the step's bytes.

Every flow ``f`` of a candidate (``model/traffic.py``) moves ``B_f`` bytes per sender per repetition.
``a_f(grid_x, grid_y)`` is the load of the busiest link of its NoC in units of ``1/u_f`` of a sender's bytes
(``u_f = C`` for DRAM flows, whose pages are interleaved over the ``C`` channels; 1 for multicasts and
gathers), from DOR routes on the chip's real NoC coordinates tabulated per grid shape (``noc/tables.py``;
a table lookup on (grid_x, grid_y) in the model). Per streaming step, each flow of a streamed input adds

    link_f = ceil(a_f * B_f / (u_f * W_link))                  W_link = noc.link_bytes_per_cycle

as one more argument of the step's max (``model/latency.py``: ``step = max(compute + exposed, dm_X, chip,
link_f...)``), so a schedule that funnels its reads through one link is costed for it. For GEMM the same
link over the whole K loop also joins the redundant lower bound. Each flow's busiest link is taken on its
own (flows sharing a link are not added; in the shipped kernels the per-step flows of different inputs
use different NoCs). A contraction's output writes, all cores' blocks at once at the end of each output
block, load the links the same way: the busiest link's time is an argument of the block's write-back
(``write_link_shares``). Attention's writes are charged per query chunk at one core's write rate
(``families/attention/latency.py``) and are not link-costed.

``noc_bound_cycles`` (reported, not optimised) is the same for the whole run, per flow, and for the DRAM
banks (``ceil(sum of DRAM bytes / (C * W_bank))``, ``W_bank = dram.channel_peak_bytes_per_cycle``).

A write flow of an L1-interleaved output goes to the worker cores' L1 banks, not to DRAM: it loads no DRAM
bank and has no DRAM link table, so it is left out of all three (``model/l1_banks.py``); its reads make no
flow at all (``model/traffic.py`` lists the DRAM reads).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.dram_reads import dram_readers
from loom_explorer.model.expr import Expr, bounds, ceil_div, ceil_rate, const, lookup, maximum, mul, total
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.noc.tables import link_units
from loom_explorer.problem import Placement


def senders(q: GridQuantities, flow: TrafficFlow) -> Expr:
    """How many cores send ``flow``."""
    if flow.kind == "dram_read" and flow.tensor in q.streamed and q.candidate.comm(flow.tensor) is not Comm.local:
        return dram_readers(q, flow.tensor)
    if flow.senders == "group_heads":
        assert flow.group is not None
        return ceil_div(q.cores, flow.group)
    return {"all": q.cores, "row_heads": q.grid_y, "col_heads": q.grid_x, "origin": const(1)}[flow.senders]


def _dram_flow(q: GridQuantities, f: TrafficFlow) -> bool:
    """Whether ``f`` reads or writes DRAM (an L1-interleaved tensor's write flow does not)."""
    return f.kind in ("dram_read", "dram_write") and q.problem.placement(f.tensor) is not Placement.l1_interleaved


def _busiest_link(q: GridQuantities, f: TrafficFlow) -> tuple[Expr, int]:
    """(a_f(grid_x, grid_y) as a table lookup, u_f)."""
    axis = f.axis if f.kind in ("multicast", "gather") else None  # a DRAM flow's table needs no axis
    table = link_units(q.hw, f.kind, f.senders, axis, f.noc, one_d=q.candidate.is_1d)
    coeff = lookup((q.grid_x, q.grid_y), {(x, y): table[(x, y)] for x in q.grid_x.values for y in q.grid_y.values})
    return coeff, q.hw.dram.channels if f.kind in ("dram_read", "dram_write") else 1


@dataclass(frozen=True, slots=True)
class LinkShare:
    """The busiest link of one flow: it carries ``coeff / unit`` of each sender's bytes of ``tensor``."""

    tensor: str
    coeff: Expr
    unit: int

    def cycles(self, q: GridQuantities, nbytes: Expr) -> Expr:
        """Cycles that link needs for ``nbytes`` per sender: ``ceil(a_f * B / (u_f * W_link))``."""
        # the coefficient last, so that the product reuses the bytes' product the model already has
        return ceil_rate(mul(nbytes, self.coeff), self.unit * q.hw.noc.link_bytes_per_cycle)


def link_share(q: GridQuantities, f: TrafficFlow) -> LinkShare:
    coeff, unit = _busiest_link(q, f)
    return LinkShare(f.tensor, coeff, unit)


def step_link_shares(q: GridQuantities, flows: list[TrafficFlow], tensors: tuple[str, ...]) -> list[LinkShare]:
    """The link shares of the streamed reads and multicasts of ``tensors`` that can bind a step.

    A flow's own transfer is already an argument of the step's max (``s_X >= ceil(B/r)`` with ``r`` the
    core's DRAM read rate or the multicast rate, ``model/latency.py``), so its link time
    ``ceil(a_f*B/(u_f*W_link))`` can only matter where ``a_f/(u_f*W_link) > 1/r`` for some grid shape;
    the others are left out (the model's values are the same, the solver has fewer products). With the
    shipped chips every multicast link is left out: its busiest link carries the packet once, at a link
    rate above the multicast rate."""
    rates = {"multicast": q.hw.noc.multicast_bytes_per_cycle, "dram_read": q.hw.dram.core_read_bytes_per_cycle}
    return _binding(q, [f for f in flows if f.tensor in tensors and f.kind in rates], rates)


def write_link_shares(q: GridQuantities, flows: list[TrafficFlow]) -> list[LinkShare]:
    """The link shares of the output writes that can bind a block's write-back.

    Every core writes its output block at the same time, at the end of the block's K loop, so the busiest
    link of the write flow carries ``a_f/u_f`` of a core's block while each core writes its own at
    ``w_core``; the write-back is ``max(ceil(B/w_core), ceil(a_f*B/(u_f*W_link))) + L_write``
    (``model/latency.py``). Kept where the link time can be the larger, as for the step's links."""
    return _binding(
        q,
        [f for f in flows if f.kind == "dram_write" and _dram_flow(q, f)],
        {"dram_write": q.hw.dram.core_write_bytes_per_cycle},
    )


def _binding(q: GridQuantities, flows: list[TrafficFlow], rates: dict[str, float]) -> list[LinkShare]:
    """The shares of ``flows`` whose link time can exceed the flow's own transfer at ``rates[kind]``:
    ``max_g a_f(g) * r > u_f * W_link``."""
    out = []
    for f in flows:
        share = link_share(q, f)
        if Fraction(bounds(share.coeff)[1]) * Fraction(rates[f.kind]) > share.unit * Fraction(
            q.hw.noc.link_bytes_per_cycle
        ):
            out.append(share)
    return out


def link_bound_cycles(q: GridQuantities, flows: list[TrafficFlow]) -> Expr:
    """Each flow's busiest link over the whole run (reported, not optimised); a gather within groups of a
    1-D layout (flash-decoding's) is left out, its tables being to core 0."""
    return maximum(
        0,
        *(
            link_share(q, f).cycles(q, mul(f.bytes, f.count))
            for f in flows
            if not (f.kind == "gather" and f.group is not None) and (f.kind != "dram_write" or _dram_flow(q, f))
        ),
    )


def bank_bound_cycles(q: GridQuantities, flows: list[TrafficFlow]) -> Expr:
    dram = total(mul(senders(q, f), f.bytes, f.count) for f in flows if _dram_flow(q, f))
    return ceil_rate(dram, q.hw.dram.channels * q.hw.dram.channel_peak_bytes_per_cycle)


def noc_bound_cycles(q: GridQuantities, flows: list[TrafficFlow]) -> Expr:
    return maximum(link_bound_cycles(q, flows), bank_bound_cycles(q, flows))
