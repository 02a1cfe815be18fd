"""L1 capacity: the circular buffers of one core fit the usable L1.

    sum of buffers <= L1_usable

with the buffers of the candidate's kernel family (``FamilyModel.l1_buffers``: each family lists them for
the kernels of ``Problem.target``, e.g. the contraction's in ``families/contraction/buffers.py``).

Attention: exactly the dataflow buffers of the exported TT-Lang kernel (``export/ttlang_attention.py``),
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

Flash-decoding (``model/decode.py``; ``export/ttlang_decode.py``): the attention buffers above with
``qc = r`` (the packed query tiles), plus

    partials   (s - 1) * r * (D_t + 2)     output, row max and row sum received from the group's other cores
    combine    r + 2 * r * D_t             the other partial's correction, wide, and its corrected output
    send       2 * r                       a core's final row max and row sum handed to its writer
    (combine and send only when a group is split, ``s > 1``)
    key mask   r * kc                      a ragged cache only (in the scores' format)
"""

from __future__ import annotations

from collections.abc import Sequence

from loom_explorer.model.attention import AttentionQuantities
from loom_explorer.model.decode import KEY_MASK, DecodeQuantities
from loom_explorer.model.expr import Expr, const, minimum, mul, total
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import Constraint, L1Buffer


def attention_buffers(q: AttentionQuantities) -> list[L1Buffer]:
    """One buffer per dataflow buffer of the exported TT-Lang kernel (``export/ttlang_attention.py``), in its
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
            buf(f"{scores}_mask_index", q.mask_index_tiles, "mask index: row/column tile and in-tile index",
                1, index_tile),
            buf(f"{scores}_mask_gaps", mul(2, qc, kc), "key - query tile and in-tile index"),
            buf(f"{scores}_mask_constants", mul(2, qc, kc), "32 and -1e30"),
            buf(f"{scores}_mask_offset", const(1), "step's key tile offset: old and new", 2),
            buf(f"{scores}_mask_work", mul(2, qc, kc), "offset broadcast, key - query position"),
        ]
    return buffers


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
        buffers.append(L1Buffer(KEY_MASK, mul(q.key_mask_tiles, q.tile_bytes(q.st.scores)),
                                "the padded key chunk's additive mask"))
    return buffers


def l1_capacity(q: GridQuantities, buffers: Sequence[L1Buffer]) -> list[Constraint]:
    """One core's ``buffers`` (the kernel family's, ``FamilyModel.l1_buffers``: TTNN's kernels' or the
    exported TT-Lang kernels', as ``Problem.target`` says) fit its usable L1."""
    return [
        Constraint("l1_capacity", "l1_capacity", "le", total(b.bytes_expr for b in buffers),
                   const(q.hw.l1.usable_bytes), "needs {lhs:,} B of L1 per core, {rhs:,} B usable"),
    ]
