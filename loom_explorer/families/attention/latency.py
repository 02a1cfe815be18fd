"""Latency of an attention candidate on its slowest core, in cycles, as named terms.

Per step (one ``qc``-tile query chunk against one ``kc``-tile key/value chunk; ``c_f`` a tile matmul at
the problem's fidelity (HiFi4 when ttnn routes the call to its ACCURATE recipe, ``families/attention/quantities.py``),
``c_p`` a tile pack, ``o_sub`` the per-sub-block overhead):

    qk   = qc*kc*(D_t*c_f + c_p) + (qc/qk_subblock_h)*(kc/qk_subblock_w)*o_sub
    pv   = qc*D_t*(kc*c_f + c_p) + (qc/out_subblock_h)*(D_t/out_subblock_w)*o_sub
    sm   = f_kernel * sum over the program's per-step eltwise ops of (tiles of the op's tensor in a step) *
           cost (scale, row max, exp, row sum on the scores; the max correction and sum update on the
           statistics; the output rescale and accumulate); f_kernel = compute.sdpa_softmax_scale of the
           ttnn kernel that runs (streaming or accurate, fitted to published SDPA times), 1 for TT-Lang
    step = max(qk + sm + pv + sum_{X in k, v: depth_X = 1} dm_X,  dm_k,  dm_v,  chip)

with ``dm_X`` = DRAM read (+ multicast) of one ``kc x D_t`` chunk and ``chip`` the chip's DRAM rate over
every core's reads of the step, exactly as for GEMM (``model/latency.py``). Per query chunk:

    q_read  = read of one qc x D_t chunk of q (exposed per chunk only when q_buffer_depth = 1)
    final   = sum over the final eltwise ops (1/l, o/l) of tiles * cost
    write   = qc*D_t*bytes_o / w_core + L_write   (one core's chunk at one core's write rate, added after the
              chunk and not overlapped with the next one; unlike GEMM's write-back, the NoC links of all
              cores' writes are not costed)

Whole kernel, with ``chunks``, ``steps`` and ``diag`` (steps crossing the causal diagonal) of the slowest
core from ``families/attention/quantities.py`` and ``mask`` the per-tile cost of the diagonal ops on a step's scores:

    T = launch + fill + (chunks - 1)*q_read*[q_buffer_depth = 1] + steps*step + diag*mask
        + chunks*(final + write),        fill = q_read + max(dm_k, dm_v)
"""

from __future__ import annotations

from collections.abc import Sequence

from loom_explorer.families.attention.quantities import ACCURATE, AttentionQuantities
from loom_explorer.hardware.schema import Fidelity
from loom_explorer.model.dram_reads import dram_readers
from loom_explorer.model.expr import Expr, const, maximum, mul, select, total
from loom_explorer.model.latency import (
    block_bytes,
    data_movement_cycles,
    dram_write_cycles,
    matmul_cycles,
    op_tile_cycles,
    overlapped_step,
)
from loom_explorer.model.noc_bound import LinkShare
from loom_explorer.model.schedule import LatencyTerm
from loom_explorer.problem import KernelTarget


def _ops_cycles(q: AttentionQuantities, when: str, scale: float = 1.0) -> Expr:
    return total(mul(q.block_tiles(op.tensor), round(op_tile_cycles(q, op) * scale)) for op in q.st.step_ops(when))


def softmax_scale(q: AttentionQuantities) -> float:
    """The factor on the per-step softmax ops of the ttnn kernel that runs (``compute.sdpa_softmax_scale``,
    fitted by ``calibrate --kernel flash_attention``); 1 for the exported TT-Lang kernel."""
    if q.problem.target is not KernelTarget.ttnn:
        return 1.0
    return q.hw.compute.sdpa_softmax_scale[q.ttnn_kernel]


def attention_latency_terms(
    q: AttentionQuantities, step_links: Sequence[LinkShare] = ()
) -> tuple[Expr, list[LatencyTerm], Expr]:
    """The objective, its breakdown (terms that sum to it) and a lower bound (steps at compute speed)."""
    c = q.hw.compute
    dt = const(q.head_tiles)
    q_in, k_in, v_in = q.st.streamed
    q_bytes = q.tile_bytes(q_in)  # the scores P are kept in q's format
    fidelity = Fidelity.hifi4 if q.ttnn_kernel == ACCURATE else None  # the recipe fixes HiFi4 for both
    qk = matmul_cycles(q, q.qc, q.kc, dt, q.qk_subblock_h, q.qk_subblock_w, q_bytes, q.tile_bytes(k_in), fidelity)
    pv = matmul_cycles(q, q.qc, dt, q.kc, q.out_subblock_h, q.out_subblock_w, q_bytes, q.tile_bytes(v_in), fidelity)
    sm = _ops_cycles(q, "step", softmax_scale(q))
    compute = qk + sm + pv
    step = overlapped_step(
        q, compute, (k_in, v_in), [link.cycles(q, block_bytes(q, link.tensor)) for link in step_links]
    )
    mask = _ops_cycles(q, "diagonal")
    q_read = data_movement_cycles(q, q_in)
    q_exposed = mul(select(q.depth[q_in], {v: int(v == 1) for v in q.depth[q_in].values}), q_read)
    final = _ops_cycles(q, "final")
    write = dram_write_cycles(q, q.st.output, q.block_tiles(q.st.output))
    fill = q_read + maximum(data_movement_cycles(q, k_in), data_movement_cycles(q, v_in))
    chunks, steps, diag = q.chunks, q.steps, q.diagonal_steps
    common = total(
        [c.kernel_launch_cycles, fill, mul(chunks - 1, q_exposed), mul(diag, mask), mul(chunks, final + write)]
    )
    objective = common + mul(steps, step)
    terms = [
        LatencyTerm("launch", const(c.kernel_launch_cycles), "fixed per-op launch on the device"),
        LatencyTerm("fill", fill, "first query chunk and first key/value chunks loaded before any compute"),
        LatencyTerm("q_load", mul(chunks - 1, q_exposed), "query chunk reads not hidden by prefetching"),
        LatencyTerm("qk_matmul", mul(steps, qk), "scores q @ k^T: tile matmuls, packing, sub-block overhead"),
        LatencyTerm(
            "softmax",
            mul(steps, sm) + mul(diag, mask),
            "online softmax on the FPU and SFPU (scale, max, exp, sum, rescale; causal mask)",
        ),
        LatencyTerm("pv_matmul", mul(steps, pv), "output s @ v: tile matmuls, packing, sub-block overhead"),
        LatencyTerm(
            "kv_streaming",
            mul(steps, step - compute),
            "steps where key/value reads/multicasts (or shared DRAM bandwidth) outlast compute",
        ),
        LatencyTerm("normalize", mul(chunks, final), "final 1/l and o/l per query chunk"),
        LatencyTerm("write_back", mul(chunks, write), "output chunks written to DRAM"),
    ]
    return objective, terms, common + mul(steps, compute)


def attention_dram_read_bytes(q: AttentionQuantities) -> Expr:
    """Key/value bytes one step reads over the chip times the slowest core's steps, plus every core's q
    chunks: ``steps * sum_{X in k, v} readers_X * B_X + chunks * cores * B_q``. Reported (not a latency
    input), an upper bound on the bytes moved where cores differ in work; the exact per-core count is
    ``families/attention/work.py``'s (docs/attention.md, section 5)."""
    q_in, k_in, v_in = q.st.streamed
    per_step = total(mul(dram_readers(q, t), block_bytes(q, t)) for t in (k_in, v_in))
    return mul(q.steps, per_step) + mul(q.chunks, q.cores, block_bytes(q, q_in))
