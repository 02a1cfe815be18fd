"""One core's L1 buffers of a contraction, for the kernels of each target (``Problem.target``); the L1
capacity constraint (``model/constraints/l1_capacity.py``) sums them. Tile counts times the bytes per tile
of each tensor's data format.

Both targets:

    in0    in0_buffer_depth * out_block_h * in0_block_w
    in1    in1_buffer_depth * in0_block_w * out_block_w
    out    out_block_h * out_block_w              (per_core_B*per_core_M*per_core_N when out lives in L1)
    bias   the core's share of each other input: product of per_core_d over its dims (per_core_N for a bias)
    shard  product of per_core_d over the tensor's own dims (e.g. per_core_M*per_core_K for in0), for an
           input that already lives in L1; a block-sharded input whose columns are split over grid
           columns without being on them holds ceil(E_C/grid_x) of them (per_core_M*ceil(E_K/grid_x))

The exported TT-Lang GEMM kernel (``ttlang_buffers``), exactly its dataflow buffers (``families/contraction/
ttlang.py``: in0_dfb, in1_dfb, acc_dfb, out_dfb, partial_dfb), so ``l1_bytes`` is the circular-buffer total
the TT-Lang compiler allocates and checks for it:

    acc    2 * out_block_h * out_block_w partial-sum tiles (the running sum: the block read and the block
           written each K step; fp32 tiles with fp32 accumulation, else the output's format)
    gather (G_K - 1) * out_block_h * out_block_w partial-sum tiles (split-K, G_K the cores along K:
           one block per other core along K, each gather pipe having its own slot)

TTNN's matmul kernels (``ttnn_buffers``: what ``--format ttnn`` configures and the accuracy data measured):

    interm out_block_h * out_block_w fp32 tiles  (only with fp32 accumulation into a non-fp32 output;
                                                  otherwise partials share the out buffer, as in TTNN)
    gather out_block_h * out_block_w partial tiles (split-K: partials arriving from other cores)

Each list is in the order above: in0, in1, out, then acc (TT-Lang) or interm (TTNN), bias, shards, gather.
"""

from __future__ import annotations

from loom_explorer.families.contraction.quantities import ContractionQuantities
from loom_explorer.hardware.schema import DataFormat
from loom_explorer.mapping.candidate import Comm
from loom_explorer.mapping.sharding import columns_split_over_x
from loom_explorer.model.expr import Expr, mul
from loom_explorer.model.schedule import L1Buffer
from loom_explorer.problem import KernelTarget


def l1_buffers(q: ContractionQuantities) -> list[L1Buffer]:
    """TTNN's matmul kernels' buffers or the exported TT-Lang GEMM kernel's (``Problem.target``)."""
    return ttnn_buffers(q) if q.problem.target is KernelTarget.ttnn else ttlang_buffers(q)


def ttlang_buffers(q: ContractionQuantities) -> list[L1Buffer]:
    """The exported TT-Lang GEMM kernel's dataflow buffers (module docstring)."""
    buffers = _streams_and_output(q)
    buffers.append(
        L1Buffer(
            "acc",
            mul(2, q.out_block_h, q.out_block_w, q.acc_tile_bytes),
            "accumulator: the partial sum read and the one written each K step",
        )
    )
    buffers += _held_inputs(q)
    gather = q.candidate.gather_axis
    if gather:
        senders = (q.grid_x if gather == "x" else q.grid_y) - 1
        buffers.append(
            L1Buffer(
                "partials",
                mul(senders, q.out_block_h, q.out_block_w, q.acc_tile_bytes),
                "split-K partial sums received: one block per other core along K",
            )
        )
    return buffers


def ttnn_buffers(q: ContractionQuantities) -> list[L1Buffer]:
    """TTNN's matmul kernels' circular buffers (module docstring)."""
    buffers = _streams_and_output(q)
    out = q.con.matmul.out
    if q.problem.fp32_acc and q.fmt(out) is not DataFormat.float32:
        buffers.append(
            L1Buffer(
                "interm", mul(q.out_block_h, q.out_block_w, q.hw.tile_bytes[DataFormat.float32]), "fp32 partial sums"
            )
        )
    buffers += _held_inputs(q)
    if q.candidate.gather_axis:
        buffers.append(
            L1Buffer("partials", mul(q.out_block_h, q.out_block_w, q.acc_tile_bytes), "split-K partial sums received")
        )
    return buffers


def _streams_and_output(q: ContractionQuantities) -> list[L1Buffer]:
    """in0's and in1's circular buffers and the output's block (or its whole shard when it lives in L1)."""
    a, b = q.inputs
    out = q.con.matmul.out
    buffers = [
        L1Buffer(a, mul(q.depth[a], q.block_tiles(a), q.tile_bytes(a)), f"{a} circular buffer"),
        L1Buffer(b, mul(q.depth[b], q.block_tiles(b), q.tile_bytes(b)), f"{b} circular buffer"),
    ]
    if q.problem.placement(out).in_l1:
        out_tiles: Expr = mul(q.pb, q.pm, q.pn)
        out_text = "output shard (out lives in L1)"
    else:
        out_tiles = mul(q.out_block_h, q.out_block_w)
        out_text = "output block"
    buffers.append(L1Buffer(out, mul(out_tiles, q.tile_bytes(out)), out_text))
    return buffers


def _held_inputs(q: ContractionQuantities) -> list[L1Buffer]:
    """The core's share of each auxiliary input (a bias), then the resident shard of each matmul input that
    lives in L1 (or is read locally)."""
    buffers = [
        L1Buffer(t, mul(q.share_tiles(t), q.tile_bytes(t)), f"{t}, the core's share") for t in q.auxiliary_inputs
    ]
    for t in q.inputs:
        if q.problem.placement(t).in_l1 or q.candidate.comm(t) is Comm.local:
            shard = q.share_tiles(t, columns_split_over_x(q.problem, q.candidate.axes, t))
            buffers.append(L1Buffer(f"{t}_shard", mul(shard, q.tile_bytes(t)), f"{t} resident shard"))
    return buffers
