"""The contraction's NoC traffic as flows (``model/traffic.py`` says what a flow is and which NoC each
kind takes): both inputs once per K step, the auxiliary inputs (a bias) once, the output blocks written, or
under split-K the partial sums gathered to the first core along the gather axis and written from there.
An output in DRAM is written as a ``dram_write`` flow; an L1-interleaved one goes to the worker cores' L1
banks (``model/l1_banks.py``), which no flow kind draws, and a sharded one is not written at all."""

from __future__ import annotations

from loom_explorer.families.contraction.quantities import ContractionQuantities
from loom_explorer.mapping.candidate import Axis
from loom_explorer.model.expr import Expr, const, mul
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.model.traffic import WRITER_NOC, input_flows, write_flow
from loom_explorer.problem import Placement


def read_once_flows(q: ContractionQuantities, tensors: tuple[str, ...]) -> list[TrafficFlow]:
    """Inputs every core reads once (a bias), on the writer's NoC."""
    return [
        TrafficFlow(
            f"{t} read", t, "dram_read", "all", None, WRITER_NOC, mul(q.share_tiles(t), q.tile_bytes(t)), const(1)
        )
        for t in tensors
    ]


def gather_flow(tensor: str, axis: Axis, size: Expr) -> TrafficFlow:
    return TrafficFlow(f"{tensor} partials gather", tensor, "gather", "all", axis, WRITER_NOC, size, const(1))


def contraction_flows(q: ContractionQuantities) -> list[TrafficFlow]:
    """The NoC flows of a contraction: both inputs once per K step, the auxiliary
    inputs once, the output blocks written (or, split-K, gathered to the first core along the axis and
    written from there)."""
    steps = mul(q.out_blocks, q.k_blocks)
    flows = input_flows(q, {t: steps for t in q.inputs}) + read_once_flows(q, q.auxiliary_inputs)
    out = q.con.matmul.out
    to_dram = q.problem.placement(out) is Placement.dram
    axis = q.candidate.gather_axis
    if axis is not None:
        partial_tiles = mul(q.pb, q.pm, q.pn)
        flows.append(gather_flow(out, axis, mul(partial_tiles, q.acc_tile_bytes)))
        if to_dram:
            flows.append(write_flow(q, out, partial_tiles, const(1), "row_heads" if axis == "x" else "col_heads"))
    elif to_dram:
        flows.append(write_flow(q, out, mul(q.out_block_h, q.out_block_w), q.out_blocks))
    return flows
