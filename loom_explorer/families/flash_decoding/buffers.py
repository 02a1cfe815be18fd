"""One core's L1 buffers for a flash-decoding candidate, for each kernel target (``Problem.target``).

The exported TT-Lang flash-decoding kernel (``families/flash_decoding/ttlang_kernel.py``): the attention kernel's
buffers (``families/attention/buffers.py``) with ``qc = r`` (the packed query tiles), plus

    partials   (s - 1) * r * (D_t + 2)     output, row max and row sum received from the group's other cores
    combine    r + 2 * r * D_t             the other partial's correction, wide, and its corrected output
    send       2 * r                       a core's final row max and row sum handed to its writer
    (combine and send only when a group is split, ``s > 1``)
    key mask   r * kc                      a ragged cache only (in the scores' format)

ttnn's ``sdpa_decode`` (``sdpa_decode_program_factory.cpp`` @91b3892f, L278-643; ``r`` the
padded query heads of a batch in tiles, ``s = kv_cores``; everything but q, k, v and the output in bf16):

    q  r * D_t (and its row-major copy r * D_t)     k, v  2 * kc * D_t each (double-buffered)
    mask, scores  r * kc each      identity, column identity, zero scalers  3
    P V, running output, a core's partial, the received partial  r * D_t each
    statistics  11 * r             partials landing  (s - 1) * r * (D_t + 2)        out  r * D_t
"""

from __future__ import annotations

from loom_explorer.families.attention.buffers import attention_buffers
from loom_explorer.families.flash_decoding.quantities import KEY_MASK, DecodeQuantities
from loom_explorer.hardware.schema import DataFormat
from loom_explorer.model.expr import Expr, const, minimum, mul
from loom_explorer.model.schedule import L1Buffer
from loom_explorer.problem import KernelTarget


def decode_l1_buffers(q: DecodeQuantities) -> list[L1Buffer]:
    """Flash-decoding's buffers: ttnn's ``sdpa_decode`` or the exported TT-Lang flash-decoding kernel's."""
    return ttnn_decode_buffers(q) if q.problem.target is KernelTarget.ttnn else decode_buffers(q)


def decode_buffers(q: DecodeQuantities) -> list[L1Buffer]:
    """The exported TT-Lang flash-decoding kernel's buffers (module docstring), in its order."""
    out = q.st.output
    row_max, row_sum = (t.name for t in q.problem.program.intermediates if q.st.kv_dim not in t.dims)
    r, dt, tile, others = q.qc, const(q.head_tiles), q.tile_bytes(out), q.kv_cores - 1
    split = minimum(1, others)  # the kernel makes the combine's buffers only when a group is split
    buffers = attention_buffers(q) + [
        L1Buffer(f"{out}_partials", mul(others, r, dt, tile), "partial outputs of the group's other cores"),
        L1Buffer(f"{row_max}_partials", mul(others, r, tile), "their row maxima"),
        L1Buffer(f"{row_sum}_partials", mul(others, r, tile), "their row sums"),
        L1Buffer("correction_other", mul(split, r, tile), "exp(m_i - m') of the partial combined"),
        L1Buffer("correction_other_wide", mul(split, r, dt, tile), "exp(m_i - m'), broadcast over the head dim"),
        L1Buffer(f"{out}_other_corrected", mul(split, r, dt, tile), "the partial output times its correction"),
        L1Buffer(f"{row_max}_send", mul(split, r, tile), "final row max, handed to the writer"),
        L1Buffer(f"{row_sum}_send", mul(split, r, tile), "final row sum, handed to the writer"),
    ]
    if q.ragged:
        buffers.append(
            L1Buffer(KEY_MASK, mul(q.key_mask_tiles, q.tile_bytes(q.st.scores)), "the padded key chunk's additive mask")
        )
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
        buf(
            f"{row_max}_{row_sum}",
            mul(11, r),
            "statistics: current/previous max and sum, exp of the max difference, the partials' (c_6, c_7, "
            "c_17, c_18, c_21, c_22, c_27..c_31)",
        ),
        buf(f"{out}_partials", mul(q.kv_cores - 1, q.partial_tiles), "partials landing from the other cores (c_19)"),
        buf(out, mul(r, dt), "output (c_20)", q.tile_bytes(out)),
    ]
