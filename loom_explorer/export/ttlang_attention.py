"""A FlashAttention schedule as a TT-Lang kernel file: the flattened split (TTNN's SDPA), plain or causal.

Core ``c`` (numbered row by row, ``y * grid_x + x``) takes the contiguous tasks ``c*P .. (c+1)*P - 1`` of
the flattened (batch, head, task) index, ``P = per_core_<dims>``. A task is one query chunk, or under the
causal mask a balanced pair of query chunks ``(j, n_q - 1 - j)`` (one chunk when they coincide), as the
model's causal load balancing has it. Each query chunk of a task reads its ``qc x D`` block, streams the
``kc x D`` key and value chunks of its head (of its key/value head under GQA) through an online softmax,
and writes its ``qc x D`` output chunk: exactly the flows the model counts (``attention_flows``: q once
per chunk, k and v once per step, o once per chunk). A plain chunk takes all ``n_k`` key chunks; a causal
chunk ``i`` only the ``min(ceil((i+1)*qc/kc), n_k)`` that reach its last row. The host pads the task list
to whole cores (``cores x P``) with zero queries of padding heads, so every working core runs ``P`` tasks,
as the model assumes; padded query rows are cropped from the output.

Per step (FlashAttention-2): ``s = q k^T / sqrt(D)``, ``m' = max(m, rowmax(s))``, ``p = exp(s - m')``,
``l' = l exp(m - m') + rowsum(p)``, ``acc' = acc exp(m - m') + p v``; at the end ``o = acc / l``.

Causal mask: on a step whose keys reach past the chunk's first query row, ``s`` is set to -1e30 where the
key's position exceeds the query's. TT-Lang has no in-tile index operation, so each core reads the mask
index once (``MASK_INDEX`` in ``model/attention.py``, ``2*(qc + kc)`` tiles, counted by the model): the
tile index and in-tile index of a chunk's rows and of a key chunk's columns, as ``qc x 1`` and ``1 x kc``
blocks that broadcast over the scores. With ``d`` the step's key offset minus the chunk's query offset in
tiles, a score is masked when ``32 * (d + key tile - query tile) + (key column - query row) > 0``; every
operand is a small integer, exact in bf16, and rounding the sum never changes its sign.

Not written yet: the 2-D layouts with key/value multicasts (``ExportError`` says so). Keys are not padded:
``Skv`` must be a whole number of key chunks.
"""

from __future__ import annotations

import inspect
import math
import textwrap

from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.export.ttlang_common import ExportError, footer, header
from loom_explorer.mapping.candidate import Comm
from loom_explorer.program.attention import Attention, analyse_attention
from loom_explorer.traffic.tiles import tile_traffic
from loom_explorer.traffic.transfers import schedule_transfers, used_cores


def attention_unsupported(st: Attention, candidate_name: str, flattened: bool, dram_only: bool) -> str | None:
    """Why this attention candidate cannot be written yet (None: it can)."""
    if not (flattened and dram_only):
        return (f"TT-Lang export of attention covers the flattened layout with DRAM reads (TTNN's SDPA split) "
                f"so far; {candidate_name} is not")
    return None


def task_chunks(task: int, n_q: int, causal: bool) -> tuple[int, ...]:
    """Query chunks of task ``task`` of one head: one chunk, or the balanced pair ``(j, n_q - 1 - j)``."""
    if not causal:
        return (task % n_q,)
    j = task % -(-n_q // 2)
    return (j,) if j == n_q - 1 - j else (j, n_q - 1 - j)


def chunk_steps(chunk: int, qc: int, kc: int, n_k: int, causal: bool) -> int:
    """Key/value chunks query chunk ``chunk`` streams: all, or under the mask those up to its last row."""
    return min(-(-(chunk + 1) * qc // kc), n_k) if causal else n_k


def _overcount_note(built: RebuiltSchedule, kernel_kv_tiles: int) -> str:
    """A comment when the model predicts more key tiles than the kernel reads: causal tasks that differ in
    work (an odd n_q's middle chunk, padded tasks short of the slowest) while the model counts every core
    at its slowest core's steps."""
    st = analyse_attention(built.problem.program)
    values = built.solution.values()
    predicted = tile_traffic(built.hardware, built.problem,
                             schedule_transfers(built.hardware, built.schedule, values)).dram_read_tiles
    model = predicted.get(st.streamed[1], 0)
    if model == kernel_kv_tiles:
        return ""
    return ("# Note: the causal tasks differ in work here, and the model counts every core at its slowest\n"
            f"# core's steps: it predicts {model} tiles of {st.streamed[1]} read where this kernel reads "
            f"{kernel_kv_tiles}\n# (verify reports the difference).\n")


def attention_source(built: RebuiltSchedule, doc: ScheduleDocument, st: Attention) -> str:
    sch, v, problem = built.schedule, built.solution.values(), built.problem
    cand = sch.candidate
    why = attention_unsupported(st, cand.name, cand.flattened, all(c is Comm.dram for _, c in cand.comms))
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
    causal = problem.has_option("causal")
    qc, kc = v["q_chunk_size"] // 32, v["k_chunk_size"] // 32
    d_t = problem.tiles(st.head_dim)
    sq_t, skv_t = problem.tiles(st.q_dim), problem.tiles(st.kv_dim)
    if shape[st.kv_dim] % v["k_chunk_size"]:
        raise ExportError(f"{st.kv_dim}={shape[st.kv_dim]} is not a whole number of key chunks "
                          f"(k_chunk_size={v['k_chunk_size']}); padded keys would need a mask")
    n_q, n_k = -(-sq_t // qc), skv_t // kc
    slots = len(used_cores(sch, v)) * v["per_core_" + "*".join(group)]
    kv_tiles = kc * d_t * sum(chunk_steps(c, qc, kc, n_k, causal) for t in range(slots)
                              for c in task_chunks(t, n_q, causal))
    names = {"q": q_in, "k": k_in, "v": v_in, "o": out}
    mask = _MASK if causal else _NO_MASK
    return _TEMPLATE.format(
        header=header(built, doc), **names, gx=v["grid_x"], gy=v["grid_y"], working=len(used_cores(sch, v)),
        per_core=v["per_core_" + "*".join(group)], qc=qc, kc=kc, dt=d_t, n_q=n_q, n_k=n_k,
        dq=v["q_buffer_depth"], dk=v["k_buffer_depth"], dv=v["v_buffer_depth"],
        b=math.prod(shape[d] for d in heads if d != "H"), h=shape.get("H", 1),
        hkv=shape[kv_heads[0]] if kv_heads else shape.get("H", 1), sq=shape[st.q_dim], skv=shape[st.kv_dim],
        d=shape[st.head_dim], causal=causal, task="balanced query chunk pairs" if causal else "query chunks",
        group=" x ".join(group), note=_overcount_note(built, kv_tiles), footer=footer(doc),
        helpers=_source_of(task_chunks) + "\n\n" + _source_of(chunk_steps),
        kernel=_kernel(names, mask, causal), mask_host=mask["host"],
        mask_call=", to_device(mask_index, device)" if causal else "",
    )


def _kernel(names: dict[str, str], mask: dict[str, str], causal: bool) -> str:
    """The operation: its buffers, reader, compute (inside the held mask index when causal) and writer."""
    tasks = _COMPUTE_TASKS.format(**names, apply=textwrap.indent(mask["apply"], " " * 20))
    tasks = mask["wait"] + textwrap.indent(tasks, " " * 12) if causal else textwrap.indent(tasks, " " * 8)
    return _KERNEL.format(**names, arg=mask["arg"], dfbs=mask["dfbs"], read=mask["read"], tasks=tasks)


def _source_of(fn: object) -> str:
    """A helper's own source, so the exported file runs the very rule the model and the tests use."""
    return textwrap.dedent(inspect.getsource(fn))  # type: ignore[arg-type]


_MASK = {
    "arg": ", mask_index",
    "dfbs": """\
    # the causal mask index, read once per core (module docstring): tile and in-tile index of a query
    # chunk's rows (QC x 1: column 0 of each tile) and of a key chunk's columns (1 x KC: row 0 of each tile)
    row_tiles_dfb = ttl.make_dataflow_buffer_like(mask_index, shape=(QC, 1), block_count=1)
    row_elems_dfb = ttl.make_dataflow_buffer_like(mask_index, shape=(QC, 1), block_count=1)
    col_tiles_dfb = ttl.make_dataflow_buffer_like(mask_index, shape=(1, KC), block_count=1)
    col_elems_dfb = ttl.make_dataflow_buffer_like(mask_index, shape=(1, KC), block_count=1)
""",
    "read": """\
        for index_dfb, rows, cols in ((row_tiles_dfb, (0, QC), (0, 1)), (row_elems_dfb, (0, QC), (1, 2)),
                                      (col_tiles_dfb, (QC, QC + 1), (0, KC)),
                                      (col_elems_dfb, (QC + 1, QC + 2), (0, KC))):
            with index_dfb.reserve() as index_blk:
                ttl.copy(mask_index[rows[0]:rows[1], cols[0]:cols[1]], index_blk).wait()
""",
    "wait": """\
        with (row_tiles_dfb.wait() as row_tiles, row_elems_dfb.wait() as row_elems,
              col_tiles_dfb.wait() as col_tiles, col_elems_dfb.wait() as col_elems):
""",
    "apply": """\
if (step + 1) * KC > chunk * QC:  # keys past the chunk's first row: mask them
    # key - query position = 32 * (offset + key tile - query tile) + (key column - query row)
    tiles = (ttl.block.broadcast(col_tiles, dims=[0], shape=(QC, KC))
             - ttl.block.broadcast(row_tiles, dims=[-1], shape=(QC, KC))
             + ttl.block.fill(step * KC - chunk * QC, shape=(QC, KC)))
    ahead = (tiles * ttl.block.fill(32, shape=(QC, KC))
             + ttl.block.broadcast(col_elems, dims=[0], shape=(QC, KC))
             - ttl.block.broadcast(row_elems, dims=[-1], shape=(QC, KC)))
    scores = ttl.block.where(ttl.math.gt(ahead, ttl.block.fill(0, shape=(QC, KC))),
                             ttl.block.fill(-1e30, shape=(QC, KC)), scores)
""",
    "host": """\
    mask_index = torch.zeros(((QC + 2) * 32, max(KC, 2) * 32), dtype=torch.bfloat16)
    tile_rows = torch.arange(QC * 32) // 32
    mask_index[:QC * 32, :32] = tile_rows[:, None]  # row tile index, whole tiles
    mask_index[:QC * 32, 32:64] = (torch.arange(QC * 32) % 32)[:, None]  # in-tile row
    mask_index[QC * 32:(QC + 1) * 32, :KC * 32] = (torch.arange(KC * 32) // 32)[None, :]  # column tile index
    mask_index[(QC + 1) * 32:(QC + 2) * 32, :KC * 32] = (torch.arange(KC * 32) % 32)[None, :]  # in-tile column
""",
}
_NO_MASK = {"arg": "", "dfbs": "", "read": "", "wait": "", "apply": "", "host": ""}

_KERNEL = '''\
@ttl.operation(grid=(GRID_X, GRID_Y))
def attention_kernel({q}, {k}, {v}, {o}{arg}):
    # rows of the 2-D host tensors: (head, chunk) major, tiles of the chunk minor; columns: the head dim
    {q}_dfb = ttl.make_dataflow_buffer_like({q}, shape=(QC, DT), block_count=Q_BUFFER_DEPTH)
    {k}_dfb = ttl.make_dataflow_buffer_like({k}, shape=(KC, DT), block_count=K_BUFFER_DEPTH)
    {v}_dfb = ttl.make_dataflow_buffer_like({v}, shape=(KC, DT), block_count=V_BUFFER_DEPTH)
    max_dfb = ttl.make_dataflow_buffer_like({o}, shape=(QC, 1), block_count=2)  # running row max m
    sum_dfb = ttl.make_dataflow_buffer_like({o}, shape=(QC, 1), block_count=2)  # running row sum l
    acc_dfb = ttl.make_dataflow_buffer_like({o}, shape=(QC, DT), block_count=2)  # unnormalised output
    {o}_dfb = ttl.make_dataflow_buffer_like({o}, shape=(QC, DT), block_count=1)
{dfbs}
    @ttl.datamovement()
    def read_{q}_{k}_{v}():
        x, y = ttl.node(dims=2)
        core = y * GRID_X + x  # cores are numbered row by row
        if core >= WORKING_CORES:
            return
{read}        for task in range(core * TASKS_PER_CORE, (core + 1) * TASKS_PER_CORE):
            head = task // TASKS_PER_HEAD
            kv_row = kv_head(head) * N_K * KC
            for chunk in task_chunks(task, N_Q, CAUSAL):
                with {q}_dfb.reserve() as {q}_blk:
                    ttl.copy({q}[(head * N_Q + chunk) * QC:(head * N_Q + chunk + 1) * QC, 0:DT], {q}_blk).wait()
                for step in range(chunk_steps(chunk, QC, KC, N_K, CAUSAL)):
                    with {k}_dfb.reserve() as {k}_blk:
                        ttl.copy({k}[kv_row + step * KC:kv_row + (step + 1) * KC, 0:DT], {k}_blk).wait()
                    with {v}_dfb.reserve() as {v}_blk:
                        ttl.copy({v}[kv_row + step * KC:kv_row + (step + 1) * KC, 0:DT], {v}_blk).wait()

    @ttl.compute()
    def compute():
        x, y = ttl.node(dims=2)
        core = y * GRID_X + x
        if core >= WORKING_CORES:
            return
{tasks}
    @ttl.datamovement()
    def write_{o}():
        x, y = ttl.node(dims=2)
        core = y * GRID_X + x
        if core >= WORKING_CORES:
            return
        for task in range(core * TASKS_PER_CORE, (core + 1) * TASKS_PER_CORE):
            head = task // TASKS_PER_HEAD
            for chunk in task_chunks(task, N_Q, CAUSAL):
                with {o}_dfb.wait() as out_blk:
                    ttl.copy(out_blk, {o}[(head * N_Q + chunk) * QC:(head * N_Q + chunk + 1) * QC, 0:DT]).wait()
'''

_COMPUTE_TASKS = """\
for task in range(core * TASKS_PER_CORE, (core + 1) * TASKS_PER_CORE):
    for chunk in task_chunks(task, N_Q, CAUSAL):
        steps = chunk_steps(chunk, QC, KC, N_K, CAUSAL)
        with {q}_dfb.wait() as {q}_blk:
            with max_dfb.reserve() as m:
                m.store(ttl.block.fill(-1e30, shape=(QC, 1)))
            with sum_dfb.reserve() as s:
                s.store(ttl.block.fill(0, shape=(QC, 1)))
            with acc_dfb.reserve() as acc:
                acc.store(ttl.block.fill(0, shape=(QC, DT)))
            for step in range(steps):
                with ({k}_dfb.wait() as {k}_blk, {v}_dfb.wait() as {v}_blk, max_dfb.wait() as m_old,
                      sum_dfb.wait() as l_old, acc_dfb.wait() as acc_old):
                    scores = ({q}_blk @ ttl.block.transpose({k}_blk)) * ttl.block.fill(SCALE, shape=(QC, KC))
{apply}                    m_new = ttl.math.max(m_old, ttl.math.reduce_max(scores, dims=[-1], shape=(QC, 1)))
                    p = ttl.math.exp(scores - ttl.block.broadcast(m_new, dims=[-1], shape=(QC, KC)))
                    correction = ttl.math.exp(m_old - m_new)
                    if step + 1 < steps:  # the running max is not needed after the last step
                        with max_dfb.reserve() as m:
                            m.store(m_new)
                    with sum_dfb.reserve() as s:
                        s.store(l_old * correction + ttl.math.reduce_sum(p, dims=[-1], shape=(QC, 1)))
                    with acc_dfb.reserve() as acc:
                        acc.store(acc_old * ttl.block.broadcast(correction, dims=[-1], shape=(QC, DT))
                                  + p @ {v}_blk)
            with sum_dfb.wait() as s, acc_dfb.wait() as acc, {o}_dfb.reserve() as out_blk:
                out_blk.store(acc * ttl.block.broadcast(ttl.math.recip(s), dims=[-1], shape=(QC, DT)))
"""

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
TASKS_PER_CORE = {per_core}              # tasks ({group} {task}) per core, contiguous
QC, KC, DT = {qc}, {kc}, {dt}            # query chunk, key chunk, head dim (tiles)
N_Q, N_K = {n_q}, {n_k}                  # query chunks, key/value chunks per head
CAUSAL = {causal}
TASKS_PER_HEAD = -(-N_Q // 2) if CAUSAL else N_Q
Q_BUFFER_DEPTH, K_BUFFER_DEPTH, V_BUFFER_DEPTH = {dq}, {dk}, {dv}
{note}
# the problem: batch, query heads, key/value heads, sequence lengths, head dim (elements)
B, H, HKV, SQ, SKV, D = {b}, {h}, {hkv}, {sq}, {skv}, {d}
SCALE = 1.0 / math.sqrt(D)
HEADS_PAD = -(-WORKING_CORES * TASKS_PER_CORE // TASKS_PER_HEAD)  # (batch, head) rows, padded to whole cores
KV_HEADS_PAD = -(-HEADS_PAD // H) * HKV


def kv_head(head):
    """The (batch, key/value head) row that query row ``head`` reads (GQA: H/HKV query heads share one)."""
    return (head // H) * HKV + (head % H) // (H // HKV)


{helpers}

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
{mask_host}    device = ttnn.open_device(device_id=0)
    try:
        out_dev = to_device(torch.zeros((HEADS_PAD * N_Q * QC * 32, D), dtype=torch.bfloat16), device)
        attention_kernel(to_device(rows(q, HEADS_PAD, N_Q * QC * 32), device),
                         to_device(rows(k, KV_HEADS_PAD, N_K * KC * 32), device),
                         to_device(rows(v, KV_HEADS_PAD, N_K * KC * 32), device), out_dev{mask_call})
        result = ttnn.to_torch(out_dev).float().reshape(HEADS_PAD, N_Q * QC * 32, D)[:B * H, :SQ]
    finally:
        ttnn.close_device(device)
    groups = H // HKV
    expected = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float().repeat_interleave(groups, dim=1), v.float().repeat_interleave(groups, dim=1),
        is_causal=CAUSAL)
    pcc = torch.corrcoef(torch.stack([result.flatten(), expected.reshape(B * H, SQ, D).flatten()]))[0, 1].item()
    print("LOOM_RESULT " + json.dumps({{"pcc": pcc}}))
    assert pcc >= 0.999, f"PCC {{pcc:.6f}} < 0.999"


{footer}'''
