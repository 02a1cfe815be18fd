"""The NoC traffic of a candidate, as flows: who sends how many bytes where, how often, on which NoC.

A flow is one kind of transfer that each of its senders repeats ``count`` times with ``bytes`` each
(symbolic: both depend on the schedule's parameters; the slowest core's counts are used for every core):

* ``dram_read``: a core reads its block from DRAM, its pages interleaved over all channels;
* ``multicast``: the first core of a row / column (or the origin of the rectangle, or of a head group)
  sends the block it read to the other cores of the row / column / rectangle / group;
* ``dram_write``: a core writes its output block to DRAM, interleaved over all channels;
* ``gather``: split-K partial sums sent from every core to the first core along the gather axis.

NoC assignment, as TTNN's 2-D multicast matmul does it (``matmul_op_multi_core_reuse_mcast_2d_program_factory``:
``in0_noc = preferred_noc_for_dram_write`` = NOC_1, ``in1_noc = preferred_noc_for_dram_read`` = NOC_0 on
Wormhole and Blackhole): the streamed inputs alternate NoC1, NoC0, NoC1, ... in the order of the candidate
(``in0`` on NoC1 with its multicast, ``in1`` on NoC0; ``q``, ``v`` on NoC1 and ``k`` on NoC0); auxiliary
reads, output writes and gathers go with the in1 sender/writer kernel, on NoC0.
"""

from __future__ import annotations

from loom_explorer.mapping.candidate import Axis, Comm
from loom_explorer.model.dram_reads import reads_dram
from loom_explorer.model.expr import Expr, mul
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.model.latency import block_bytes
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.noc.tables import Senders

_SENDERS: dict[Comm, Senders] = {
    Comm.dram: "all",
    Comm.mcast_x: "row_heads",
    Comm.mcast_y: "col_heads",
    Comm.mcast_xy: "origin",
    Comm.local: "all",
}
WRITER_NOC = 0


def input_flows(q: GridQuantities, counts: dict[str, Expr]) -> list[TrafficFlow]:
    """Reads and multicasts of each streamed input, ``counts[tensor]`` times per core."""
    out: list[TrafficFlow] = []
    for index, tensor in enumerate(q.streamed):
        comm = q.candidate.comm(tensor)
        noc = 1 - index % 2
        size = block_bytes(q, tensor)
        group_axis, group = _group(q, tensor)
        if reads_dram(q, tensor):
            out.append(
                TrafficFlow(
                    f"{tensor} read",
                    tensor,
                    "dram_read",
                    _SENDERS[comm],
                    comm.axis,
                    noc,
                    size,
                    counts[tensor],
                    group,
                    group_axis,
                )
            )
        if comm.axis is not None:
            out.append(
                TrafficFlow(
                    f"{tensor} multicast",
                    tensor,
                    "multicast",
                    _SENDERS[comm],
                    comm.axis,
                    noc,
                    size,
                    counts[tensor],
                    group,
                    group_axis,
                )
            )
    return out


def _group(q: GridQuantities, tensor: str) -> tuple[Axis | None, Expr | None]:
    """(grid axis, cores per group along it) of a grouped (GQA) multicast: its senders are the first core
    of each group and it reaches only that group's cores (a row/column segment, or a band of the
    rectangle for mcast_xy); (None, None) when the multicast is not grouped."""
    grouped = q.grouped_axes(tensor)
    if not grouped:
        return None, None
    axis = grouped[0][0]
    return axis, q.axis_receivers(tensor, axis)


def write_flow(q: GridQuantities, tensor: str, tiles: Expr, count: Expr, senders: Senders = "all") -> TrafficFlow:
    return TrafficFlow(
        f"{tensor} write", tensor, "dram_write", senders, None, WRITER_NOC, mul(tiles, q.tile_bytes(tensor)), count
    )
