"""TTNN's circular buffers: what L1 holds when TTNN's own op kernels run the schedule (``KernelTarget.ttnn``:
its matmul and SDPA program factories, what ``--format ttnn`` configures and the accuracy data measured).
``l1_capacity.py`` sums them (the exported TT-Lang kernels' buffers are in ``ttlang_buffers.py``).
Tile counts times the bytes per tile of each tensor's data format:

    in0    in0_buffer_depth * out_block_h * in0_block_w
    in1    in1_buffer_depth * in0_block_w * out_block_w
    out    out_block_h * out_block_w              (per_core_B*per_core_M*per_core_N when out lives in L1)
    interm out_block_h * out_block_w fp32 tiles  (only with fp32 accumulation into a non-fp32 output;
                                                  otherwise partials share the out buffer, as in TTNN)
    bias   the core's share of each other input: product of per_core_d over its dims (per_core_N for a bias)
    shard  product of per_core_d over the tensor's own dims (e.g. per_core_M*per_core_K for in0), for an
           input that already lives in L1; a block-sharded input whose columns are split over grid
           columns without being on them holds ceil(E_C/grid_x) of them (per_core_M*ceil(E_K/grid_x))
    gather out_block_h * out_block_w partial tiles (split-K: partials arriving from other cores)

Attention (TTNN's SDPA circular buffers; ``qc``, ``kc``, ``D_t`` in tiles):

    q      q_buffer_depth * qc * D_t          k, v   {k,v}_buffer_depth * kc * D_t
    scores qc * kc                            mask   max(2 * qc * kc, qc * kc + 2 * (qc + kc))  (causal only:
                                                     TTNN's two mask blocks, or the exported kernels' mask
                                                     block and its index, ``model/attention.py``)
    stats  2 * qc for each statistic (running max and sum: current and previous)
    out    qc * D_t, and out_im qc * D_t (fp32 tiles with fp32 accumulation)
"""

from __future__ import annotations

from loom_explorer.hardware.schema import DataFormat
from loom_explorer.mapping.candidate import Comm
from loom_explorer.mapping.sharding import columns_split_over_x
from loom_explorer.model.attention import AttentionQuantities
from loom_explorer.model.expr import Expr, maximum, mul
from loom_explorer.model.quantities import Quantities
from loom_explorer.model.schedule import L1Buffer


def ttnn_attention_buffers(q: AttentionQuantities) -> list[L1Buffer]:
    def buf(name: str, count: Expr | int, tensor: str, text: str, tile_bytes: int | None = None) -> L1Buffer:
        return L1Buffer(name, mul(count, q.block_tiles(tensor), tile_bytes or q.tile_bytes(tensor)), text)

    buffers = [buf(t, q.depth[t], t, f"{t} chunks") for t in q.st.streamed]
    for t in q.problem.program.intermediates:
        if q.st.kv_dim in t.dims:
            buffers.append(buf(t.name, 1, t.name, f"{t.name}: one step's block"))
        else:
            buffers.append(buf(t.name, 2, t.name, f"{t.name}: current and previous"))
    masked = sorted({op.tensor for op in q.st.step_ops("diagonal")}) if q.causal else []
    for name in masked:
        tiles = maximum(mul(2, q.block_tiles(name)), q.block_tiles(name) + q.mask_index_tiles)
        buffers.append(L1Buffer(f"{name}_mask", mul(tiles, q.tile_bytes(name)),
                                f"causal mask for {name} (and its index)"))
    out = q.st.output
    buffers.append(buf(out, 1, out, "output chunk"))
    buffers.append(buf(f"{out}_im", 1, out, "output accumulator", q.acc_tile_bytes))
    return buffers


def ttnn_contraction_buffers(q: Quantities) -> list[L1Buffer]:
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
    if q.problem.fp32_acc and q.fmt(out) is not DataFormat.float32:
        buffers.append(L1Buffer("interm", mul(q.out_block_h, q.out_block_w, q.hw.tile_bytes[DataFormat.float32]),
                                "fp32 partial sums"))
    for t in q.auxiliary_inputs:
        buffers.append(L1Buffer(t, mul(q.share_tiles(t), q.tile_bytes(t)), f"{t}, the core's share"))
    for t in (a, b):
        if q.problem.placement(t).in_l1 or q.candidate.comm(t) is Comm.local:
            shard = q.share_tiles(t, columns_split_over_x(q.problem, q.candidate.axes, t))
            buffers.append(L1Buffer(f"{t}_shard", mul(shard, q.tile_bytes(t)), f"{t} resident shard"))
    if q.candidate.gather_axis:
        buffers.append(L1Buffer("partials", mul(q.out_block_h, q.out_block_w, q.acc_tile_bytes),
                                "split-K partial sums received"))
    return buffers
