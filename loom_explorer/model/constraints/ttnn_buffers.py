"""TTNN's circular buffers: what L1 holds when TTNN's own op kernels run the schedule (``KernelTarget.ttnn``:
its matmul and SDPA program factories, what ``--format ttnn`` configures and the accuracy data measured).
``l1_capacity.py`` sums them (the exported TT-Lang kernels' buffers are in ``ttlang_buffers.py``).
Each family's are its own (the contraction's: ``families/contraction/buffers.py``).

Attention: the circular buffers of ttnn's SDPA kernel that runs (``model/attention.py``,
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

Flash-decoding, ttnn's ``sdpa_decode`` (``sdpa_decode_program_factory.cpp`` @91b3892f, L278-643; ``r`` the
padded query heads of a batch in tiles, ``s = kv_cores``; everything but q, k, v and the output in bf16):

    q  r * D_t (and its row-major copy r * D_t)     k, v  2 * kc * D_t each (double-buffered)
    mask, scores  r * kc each      identity, column identity, zero scalers  3
    P V, running output, a core's partial, the received partial  r * D_t each
    statistics  11 * r             partials landing  (s - 1) * r * (D_t + 2)        out  r * D_t
"""

from __future__ import annotations

from loom_explorer.hardware.schema import DataFormat
from loom_explorer.mapping.candidate import Comm
from loom_explorer.mapping.sharding import columns_split_over_x
from loom_explorer.model.attention import ACCURATE, AttentionQuantities
from loom_explorer.model.decode import DecodeQuantities
from loom_explorer.model.expr import Expr, const, mul
from loom_explorer.model.schedule import L1Buffer


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
            buffers += [buf(f"{scores}_mask", kc, bfp4, "causal edge mask: one row group (bfp4)"),
                        L1Buffer(f"{scores}_key_range", const(64 + 2880), "key-range control page, mask templates")]
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
        buf(f"{row_max}_{row_sum}", mul(5, qc), bf16,
            f"statistics: {row_max} and its previous value, two {row_sum}s, exp of the max difference"),
        buf(out, mul(qc, dt), q.tile_bytes(out), "output chunk"),
    ]
    return buffers


def ttnn_decode_buffers(q: DecodeQuantities) -> list[L1Buffer]:
    """The circular buffers of ttnn's ``sdpa_decode`` (module docstring), named after the program's tensors."""
    bf16 = q.hw.tile_bytes[DataFormat.bfloat16]
    r, kc, dt = q.qc, q.kc, const(q.head_tiles)
    q_in, k_in, v_in = q.st.streamed
    out = q.st.output
    row_max, row_sum = (t.name for t in q.problem.program.intermediates if q.st.kv_dim not in t.dims)

    def buf(name: str, tiles: Expr, text: str, tile_bytes: int = bf16) -> L1Buffer:
        return L1Buffer(name, mul(tiles, tile_bytes), text)

    return [
        buf(q_in, mul(q.depth[q_in], r, dt), "packed query heads (c_0)", q.tile_bytes(q_in)),
        *(buf(t, mul(q.depth[t], kc, dt), f"{t} chunks (c_{i})", q.tile_bytes(t)) for i, t in ((1, k_in), (2, v_in))),
        buf(f"{q_in}_row_major", mul(r, dt), "row-major query before tilize (c_10)", q.tile_bytes(q_in)),
        buf(f"{q.st.scores}_mask", mul(r, kc), "mask (c_3)"),
        buf("scalars", const(3), "identity scaler, column identity, zero scaler (c_5, c_11, c_12)"),
        buf(q.st.scores, mul(r, kc), "scores q k^T (c_24)"),
        buf(f"{out}_im", mul(r, dt), "this chunk's P V, running output (c_25, c_26)"),
        buf(f"{out}_acc", mul(r, dt), "running output (c_26)"),
        buf(f"{out}_partial", mul(r, dt, 2), "a core's partial output, the one received (c_16, c_23)"),
        buf(f"{row_max}_{row_sum}", mul(11, r),
            "statistics: current/previous max and sum, exp of the max difference, the partials' (c_6, c_7, "
            "c_17, c_18, c_21, c_22, c_27..c_31)"),
        buf(f"{out}_partials", mul(q.kv_cores - 1, q.partial_tiles), "partials landing from the other cores (c_19)"),
        buf(out, mul(r, dt), "output (c_20)", q.tile_bytes(out)),
    ]
