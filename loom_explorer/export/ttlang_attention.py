"""A FlashAttention schedule as a TT-Lang kernel file: the flattened split (TTNN's SDPA), not causal.

Core ``c`` (numbered row by row, ``y * grid_x + x``) takes the contiguous tasks ``c*P .. (c+1)*P - 1`` of
the flattened (batch, head, query chunk) index, ``P = per_core_<dims>``. A task reads its ``qc x D`` query
chunk, streams every ``kc x D`` key and value chunk of its head (of its key/value head under GQA) through
an online softmax, and writes its ``qc x D`` output chunk: exactly the flows the model counts
(``attention_flows``: q once per task, k and v once per step, o once per task). The host pads the task
list to whole cores (``cores x P``) with zero queries of padding heads, so every working core runs ``P``
tasks, as the model assumes; padded query rows are cropped from the output.

Per step (FlashAttention-2): ``s = q k^T / sqrt(D)``, ``m' = max(m, rowmax(s))``, ``p = exp(s - m')``,
``l' = l exp(m - m') + rowsum(p)``, ``acc' = acc exp(m - m') + p v``; at the end ``o = acc / l``.

Not written yet: causal masking and load balancing, and the 2-D layouts with key/value multicasts
(``ExportError`` says so). Keys are not padded: ``Skv`` must be a whole number of key chunks.
"""

from __future__ import annotations

import math

from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.export.ttlang_common import ExportError, footer, header
from loom_explorer.mapping.candidate import Comm
from loom_explorer.program.attention import Attention
from loom_explorer.traffic.transfers import used_cores


def attention_unsupported(st: Attention, candidate_name: str, flattened: bool, dram_only: bool,
                          causal: bool) -> str | None:
    """Why this attention candidate cannot be written yet (None: it can)."""
    if causal:
        return "TT-Lang export of causal attention is not written yet (non-causal only)"
    if not (flattened and dram_only):
        return (f"TT-Lang export of attention covers the flattened layout with DRAM reads (TTNN's SDPA split) "
                f"so far; {candidate_name} is not")
    return None


def attention_source(built: RebuiltSchedule, doc: ScheduleDocument, st: Attention) -> str:
    sch, v, problem = built.schedule, built.solution.values(), built.problem
    cand = sch.candidate
    why = attention_unsupported(st, cand.name, cand.flattened, all(c is Comm.dram for _, c in cand.comms),
                                problem.has_option("causal"))
    if why:
        raise ExportError(why)
    q_in, k_in, v_in = st.streamed
    out = st.output
    shape = dict(problem.shape)
    group = cand.dims_on("xy")
    outside = [d for d in st.batch_dims if d not in group and shape[d] > 1]
    if outside:
        raise ExportError(f"TT-Lang export of attention needs every batch/head dim on the flattened axis; "
                          f"{', '.join(outside)} is not")
    heads = [d for d in st.batch_dims if problem.program.dim(d).group_of is None]
    kv_heads = [d for d in st.batch_dims if problem.program.dim(d).group_of is not None]
    head_dim = st.head_dim
    qc, kc = v["q_chunk_size"] // 32, v["k_chunk_size"] // 32
    d_t = problem.tiles(head_dim)
    sq_t, skv_t = problem.tiles(st.q_dim), problem.tiles(st.kv_dim)
    if shape[st.kv_dim] % v["k_chunk_size"]:
        raise ExportError(f"{st.kv_dim}={shape[st.kv_dim]} is not a whole number of key chunks "
                          f"(k_chunk_size={v['k_chunk_size']}); padded keys would need a mask")
    n_q, n_k = -(-sq_t // qc), skv_t // kc
    per_core = v["per_core_" + "*".join(group)]
    working = len(used_cores(sch, v))
    b_dims = [d for d in heads if d != "H"]
    n_b = math.prod(shape[d] for d in b_dims)
    n_h = shape.get("H", 1)
    n_hkv = shape[kv_heads[0]] if kv_heads else n_h
    return _TEMPLATE.format(
        header=header(built, doc), q=q_in, k=k_in, v=v_in, o=out, gx=v["grid_x"], gy=v["grid_y"],
        working=working, per_core=per_core, qc=qc, kc=kc, dt=d_t, n_q=n_q, n_k=n_k,
        dq=v["q_buffer_depth"], dk=v["k_buffer_depth"], dv=v["v_buffer_depth"],
        b=n_b, h=n_h, hkv=n_hkv, sq=shape[st.q_dim], skv=shape[st.kv_dim], d=shape[head_dim],
        group=" x ".join(group), footer=footer(doc), kernel=_KERNEL.format(q=q_in, k=k_in, v=v_in, o=out),
    )


_KERNEL = '''\
@ttl.operation(grid=(GRID_X, GRID_Y))
def attention_kernel({q}, {k}, {v}, {o}):
    # rows of the 2-D host tensors: (head, chunk) major, tiles of the chunk minor; columns: the head dim
    {q}_dfb = ttl.make_dataflow_buffer_like({q}, shape=(QC, DT), block_count=Q_BUFFER_DEPTH)
    {k}_dfb = ttl.make_dataflow_buffer_like({k}, shape=(KC, DT), block_count=K_BUFFER_DEPTH)
    {v}_dfb = ttl.make_dataflow_buffer_like({v}, shape=(KC, DT), block_count=V_BUFFER_DEPTH)
    max_dfb = ttl.make_dataflow_buffer_like({o}, shape=(QC, 1), block_count=2)  # running row max m
    sum_dfb = ttl.make_dataflow_buffer_like({o}, shape=(QC, 1), block_count=2)  # running row sum l
    acc_dfb = ttl.make_dataflow_buffer_like({o}, shape=(QC, DT), block_count=2)  # unnormalised output
    {o}_dfb = ttl.make_dataflow_buffer_like({o}, shape=(QC, DT), block_count=1)

    @ttl.datamovement()
    def read_{q}_{k}_{v}():
        x, y = ttl.node(dims=2)
        core = y * GRID_X + x  # cores are numbered row by row
        if core >= WORKING_CORES:
            return
        for task in range(core * TASKS_PER_CORE, (core + 1) * TASKS_PER_CORE):
            head, chunk = task // N_Q, task % N_Q
            kv_row = kv_head(head) * N_K * KC
            with {q}_dfb.reserve() as {q}_blk:
                ttl.copy({q}[(head * N_Q + chunk) * QC:(head * N_Q + chunk + 1) * QC, 0:DT], {q}_blk).wait()
            for step in range(N_K):
                with {k}_dfb.reserve() as {k}_blk:
                    ttl.copy({k}[kv_row + step * KC:kv_row + (step + 1) * KC, 0:DT], {k}_blk).wait()
                with {v}_dfb.reserve() as {v}_blk:
                    ttl.copy({v}[kv_row + step * KC:kv_row + (step + 1) * KC, 0:DT], {v}_blk).wait()

    @ttl.compute()
    def compute():
        x, y = ttl.node(dims=2)
        if y * GRID_X + x >= WORKING_CORES:
            return
        for _ in range(TASKS_PER_CORE):
            with {q}_dfb.wait() as {q}_blk:
                with max_dfb.reserve() as m:
                    m.store(ttl.block.fill(-1e30, shape=(QC, 1)))
                with sum_dfb.reserve() as s:
                    s.store(ttl.block.fill(0, shape=(QC, 1)))
                with acc_dfb.reserve() as acc:
                    acc.store(ttl.block.fill(0, shape=(QC, DT)))
                for step in range(N_K):
                    with ({k}_dfb.wait() as {k}_blk, {v}_dfb.wait() as {v}_blk, max_dfb.wait() as m_old,
                          sum_dfb.wait() as l_old, acc_dfb.wait() as acc_old):
                        scores = ({q}_blk @ ttl.block.transpose({k}_blk)) * ttl.block.fill(SCALE, shape=(QC, KC))
                        m_new = ttl.math.max(m_old, ttl.math.reduce_max(scores, dims=[-1], shape=(QC, 1)))
                        p = ttl.math.exp(scores - ttl.block.broadcast(m_new, dims=[-1], shape=(QC, KC)))
                        correction = ttl.math.exp(m_old - m_new)
                        if step + 1 < N_K:  # the running max is not needed after the last step
                            with max_dfb.reserve() as m:
                                m.store(m_new)
                        with sum_dfb.reserve() as s:
                            s.store(l_old * correction + ttl.math.reduce_sum(p, dims=[-1], shape=(QC, 1)))
                        with acc_dfb.reserve() as acc:
                            acc.store(acc_old * ttl.block.broadcast(correction, dims=[-1], shape=(QC, DT))
                                      + p @ {v}_blk)
                with sum_dfb.wait() as s, acc_dfb.wait() as acc, {o}_dfb.reserve() as out_blk:
                    out_blk.store(acc * ttl.block.broadcast(ttl.math.recip(s), dims=[-1], shape=(QC, DT)))

    @ttl.datamovement()
    def write_{o}():
        x, y = ttl.node(dims=2)
        core = y * GRID_X + x
        if core >= WORKING_CORES:
            return
        for task in range(core * TASKS_PER_CORE, (core + 1) * TASKS_PER_CORE):
            with {o}_dfb.wait() as out_blk:
                ttl.copy(out_blk, {o}[task * QC:(task + 1) * QC, 0:DT]).wait()
'''

_TEMPLATE = '''\
{header}
import json
import math

import torch
import ttl
import ttnn

# ---------------------------------------------------------------- the schedule
GRID_X, GRID_Y = {gx}, {gy}              # cores used: columns, rows
WORKING_CORES = {working}                # cores with tasks, numbered row by row
TASKS_PER_CORE = {per_core}              # tasks ({group} query chunks) per core, contiguous
QC, KC, DT = {qc}, {kc}, {dt}            # query chunk, key chunk, head dim (tiles)
N_Q, N_K = {n_q}, {n_k}                  # query chunks, key/value chunks per head
Q_BUFFER_DEPTH, K_BUFFER_DEPTH, V_BUFFER_DEPTH = {dq}, {dk}, {dv}

# the problem: batch, query heads, key/value heads, sequence lengths, head dim (elements)
B, H, HKV, SQ, SKV, D = {b}, {h}, {hkv}, {sq}, {skv}, {d}
SCALE = 1.0 / math.sqrt(D)
HEADS_PAD = -(-WORKING_CORES * TASKS_PER_CORE // N_Q)  # (batch, head) rows, padded to whole cores
KV_HEADS_PAD = -(-HEADS_PAD // H) * HKV


def kv_head(head):
    """The (batch, key/value head) row that query row ``head`` reads (GQA: H/HKV query heads share one)."""
    return (head // H) * HKV + (head % H) // (H // HKV)


{kernel}''' + '''

def to_device(tensor, device):
    return ttnn.from_torch(tensor, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device,
                           memory_config=ttnn.DRAM_MEMORY_CONFIG)


def rows(t, heads_pad, chunk_rows):
    """[B, heads, S, D] -> 2-D [(heads_pad * chunk_rows), D]: each (batch, head) padded to chunk_rows rows."""
    flat = torch.zeros((heads_pad, chunk_rows, D), dtype=torch.bfloat16)
    flat[:t.shape[0] * t.shape[1], :t.shape[2]] = t.reshape(-1, t.shape[2], D)
    return flat.reshape(-1, D)


def main():
    torch.manual_seed(0)
    q = torch.randn((B, H, SQ, D), dtype=torch.bfloat16)
    k = torch.randn((B, HKV, SKV, D), dtype=torch.bfloat16)
    v = torch.randn((B, HKV, SKV, D), dtype=torch.bfloat16)
    device = ttnn.open_device(device_id=0)
    try:
        out_dev = to_device(torch.zeros((HEADS_PAD * N_Q * QC * 32, D), dtype=torch.bfloat16), device)
        attention_kernel(to_device(rows(q, HEADS_PAD, N_Q * QC * 32), device),
                         to_device(rows(k, KV_HEADS_PAD, N_K * KC * 32), device),
                         to_device(rows(v, KV_HEADS_PAD, N_K * KC * 32), device), out_dev)
        result = ttnn.to_torch(out_dev).float().reshape(HEADS_PAD, N_Q * QC * 32, D)[:B * H, :SQ]
    finally:
        ttnn.close_device(device)
    groups = H // HKV
    expected = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float().repeat_interleave(groups, dim=1), v.float().repeat_interleave(groups, dim=1))
    pcc = torch.corrcoef(torch.stack([result.flatten(), expected.reshape(B * H, SQ, D).flatten()]))[0, 1].item()
    print("LOOM_RESULT " + json.dumps({{"pcc": pcc}}))
    assert pcc >= 0.999, f"PCC {{pcc:.6f}} < 0.999"


{footer}'''
