"""One core's L1 buffers for an attention candidate, for each kernel target (``Problem.target``): the exported
TT-Lang kernel's dataflow buffers and the circular buffers of ttnn's SDPA kernel that runs. The L1 capacity
constraint (``model/constraints/l1_capacity.py``) sums them.

Attention: exactly the dataflow buffers of the exported TT-Lang kernel (``families/attention/ttlang_kernel.py``),
so ``l1_bytes`` is the circular-buffer total the TT-Lang compiler allocates (``qc``, ``kc``, ``D_t`` in
tiles; x2: the old block is held while the new one is written):

    q      q_buffer_depth * qc * D_t          k, v   {k,v}_buffer_depth * kc * D_t
    out    qc * D_t                           k_t    D_t * kc (k transposed)
    qc x kc    scale, q k^T, scores, new max (wide), p                          5 * qc * kc
    qc x 1     step max, new max, correction, step sum; running max and sum x2  8 * qc
    qc x D_t   correction (wide), corrected, row sum (wide); accumulator x2    5 * qc * D_t
    ones   1 (the reduce scaler)
    mask   causal only: the index 2 * (qc + kc), two index gaps, 32 and -1e30, offset (wide), key - query
           position 6 * qc * kc, the offset 1 x2:  2 * (qc + kc) + 6 * qc * kc + 2

Attention: the circular buffers of ttnn's SDPA kernel that runs (``families/attention/quantities.py``,
``ttnn_sdpa_kernel``), tiles times bytes per tile (``qc``, ``kc``, ``D_t`` in tiles; bf16 2048 B, fp32
4096 B, the causal mask in bfp4 576 B), exactly as the program factories allocate them:

    streaming kernel (``sdpa_program_factory.cpp`` @000e7c05; intermediates, statistics and scalars in bf16)
      q  q_buffer_depth * qc * D_t      k, v  {k,v}_buffer_depth * kc * D_t      (their own formats)
      mask  2 * qc * kc (bfp4, causal only)    identity scalar and column 2    recip scratch 1 (not causal)
      qk_im  qc * kc      out_im, out_acc  qc * D_t each      statistics  5 * qc      out  qc * D_t
    ACCURATE recipe (``sdpa_recipe.cpp`` @be94c54b, fp32 state S = 4096 B)
      q  q_buffer_depth * qc * D_t (bf16)      k, v  {k,v}_buffer_depth * kc * D_t (one slot in ttnn)
      scalars 2 (bf16) + 1 (S)      scores  qc * kc (S)      O state, O scratch  qc * D_t (S) each
      row sums, l  qc (S) each      max, reference max  qc (bf16) each      state  qc (S)
      out  2 * D_t (bf16: the output streams)
      causal: the edge mask, one row group kc (bfp4), and the key-range pages 64 + 2,880 B (ttnn takes a
      second mask group when it fits; the model counts the one it needs)
"""

from __future__ import annotations

from loom_explorer.families.attention.quantities import ACCURATE, AttentionQuantities
from loom_explorer.hardware.schema import DataFormat
from loom_explorer.model.expr import Expr, const, mul
from loom_explorer.model.schedule import L1Buffer
from loom_explorer.problem import KernelTarget


def attention_l1_buffers(q: AttentionQuantities) -> list[L1Buffer]:
    """TTNN's SDPA kernel's buffers or the exported TT-Lang FlashAttention kernel's (``Problem.target``)."""
    return ttnn_attention_buffers(q) if q.problem.target is KernelTarget.ttnn else attention_buffers(q)


def attention_buffers(q: AttentionQuantities) -> list[L1Buffer]:
    """One buffer per dataflow buffer of the exported TT-Lang kernel (``families/attention/ttlang_kernel.py``), in its
    order: the module docstring's attention table. The streamed inputs and the output in their own formats,
    everything else (made like the kernel's ``scratch`` tensor) in the output's, the mask index in the
    scores'."""
    out = q.st.output
    inter = q.problem.program.intermediates
    scores = next(t.name for t in inter if q.st.kv_dim in t.dims)
    row_max, row_sum = (t.name for t in inter if q.st.kv_dim not in t.dims)
    qc, kc, dt = q.qc, q.kc, const(q.head_tiles)
    tile = q.tile_bytes(out)

    def buf(name: str, tiles: Expr, text: str, count: int = 1, tile_bytes: int = tile) -> L1Buffer:
        return L1Buffer(name, mul(count, tiles, tile_bytes), text)

    buffers = [L1Buffer(t, mul(q.depth[t], q.block_tiles(t), q.tile_bytes(t)), f"{t} chunks") for t in q.st.streamed]
    k_in = q.st.streamed[1]
    buffers += [
        buf(out, mul(qc, dt), "output chunk"),
        buf("ones", const(1), "reduce scaler (ones)"),
        buf("scale", mul(qc, kc), "score scale 1/sqrt(D)"),
        buf(f"{k_in}_t", mul(dt, kc), f"{k_in} chunk transposed"),
        buf(f"{scores}_qk", mul(qc, kc), "q k^T"),
        buf(scores, mul(qc, kc), "scaled (masked) scores"),
        buf(f"{scores}_max", qc, "the step's row max"),
        buf(f"{row_max}_new", qc, "new running max"),
        buf(f"{row_max}_wide", mul(qc, kc), "new running max, broadcast over the keys"),
        buf(f"{scores}_p", mul(qc, kc), "p = exp(s - m')"),
        buf("correction", qc, "exp(m - m')"),
        buf(f"{scores}_sum", qc, "the step's row sum"),
        buf("correction_wide", mul(qc, dt), "exp(m - m'), broadcast over the head dim"),
        buf(f"{out}_corrected", mul(qc, dt), "accumulator times the correction"),
        buf(row_max, qc, "running row max: old and new", 2),
        buf(row_sum, qc, "running row sum: old and new", 2),
        buf(f"{out}_acc", mul(qc, dt), "unnormalised output: old and new", 2),
        buf(f"{row_sum}_wide", mul(qc, dt), "row sum, broadcast over the head dim"),
    ]
    if q.causal:
        index_tile = q.tile_bytes(scores)
        buffers += [
            buf(
                f"{scores}_mask_index",
                q.mask_index_tiles,
                "mask index: row/column tile and in-tile index",
                1,
                index_tile,
            ),
            buf(f"{scores}_mask_gaps", mul(2, qc, kc), "key - query tile and in-tile index"),
            buf(f"{scores}_mask_constants", mul(2, qc, kc), "32 and -1e30"),
            buf(f"{scores}_mask_offset", const(1), "step's key tile offset: old and new", 2),
            buf(f"{scores}_mask_work", mul(2, qc, kc), "offset broadcast, key - query position"),
        ]
    return buffers


def ttnn_attention_buffers(q: AttentionQuantities) -> list[L1Buffer]:
    """The SDPA circular buffers of the kernel ttnn runs (module docstring), named after the program's tensors
    (``<scores>``, ``<out>_acc``, ...) where a tensor plays the buffer's role."""
    hw = q.hw
    qc, kc, dt = q.qc, q.kc, const(q.head_tiles)
    bf16, fp32, bfp4 = (hw.tile_bytes[f] for f in (DataFormat.bfloat16, DataFormat.float32, DataFormat.bfloat4_b))
    q_in, k_in, v_in = q.st.streamed
    out = q.st.output
    inter = q.problem.program.intermediates
    scores = next(t.name for t in inter if q.st.kv_dim in t.dims)
    row_max, row_sum = (t.name for t in inter if q.st.kv_dim not in t.dims)

    def buf(name: str, tiles: Expr, tile_bytes: int, text: str) -> L1Buffer:
        return L1Buffer(name, mul(tiles, tile_bytes), text)

    accurate = q.ttnn_kernel == ACCURATE
    buffers = [buf(q_in, mul(q.depth[q_in], qc, dt), bf16 if accurate else q.tile_bytes(q_in), f"{q_in} chunks")]
    buffers += [buf(t, mul(q.depth[t], kc, dt), q.tile_bytes(t), f"{t} chunks") for t in (k_in, v_in)]
    if accurate:
        buffers += [
            buf("scalars", const(2), bf16, "scale and identity tiles"),
            buf("state_scalar", const(1), fp32, "one fp32 state tile"),
            buf(scores, mul(qc, kc), fp32, "scores S and P (fp32)"),
            buf(f"{out}_acc", mul(qc, dt), fp32, "running numerator O (fp32)"),
            buf(f"{out}_im", mul(qc, dt), fp32, "this chunk's P V (fp32)"),
            buf(f"{scores}_sum", qc, fp32, "this chunk's row sums (fp32)"),
            buf(row_sum, qc, fp32, "running denominator l (fp32)"),
            buf(row_max, mul(2, qc), bf16, "row max and reference max"),
            buf(f"{row_max}_state", qc, fp32, "per-row state (fp32)"),
            buf(out, mul(2, dt), bf16, "output rows, streamed"),
        ]
        if q.causal:
            buffers += [
                buf(f"{scores}_mask", kc, bfp4, "causal edge mask: one row group (bfp4)"),
                L1Buffer(f"{scores}_key_range", const(64 + 2880), "key-range control page, mask templates"),
            ]
        return buffers
    if q.causal:
        buffers.append(buf(f"{scores}_mask", mul(2, qc, kc), bfp4, "causal mask (bfp4), two blocks"))
    else:
        buffers.append(buf("recip_scratch", const(1), bf16, "streaming reciprocal scratch"))
    buffers += [
        buf("identity", const(2), bf16, "identity scalar and column"),
        buf(scores, mul(qc, kc), bf16, "scores q k^T"),
        buf(f"{out}_im", mul(qc, dt), bf16, "this chunk's P V"),
        buf(f"{out}_acc", mul(qc, dt), bf16, "running output"),
        buf(
            f"{row_max}_{row_sum}",
            mul(5, qc),
            bf16,
            f"statistics: {row_max} and its previous value, two {row_sum}s, exp of the max difference",
        ),
        buf(out, mul(qc, dt), q.tile_bytes(out), "output chunk"),
    ]
    return buffers
