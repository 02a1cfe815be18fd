"""A FlashAttention schedule as a TT-Lang kernel file: the flattened split (TTNN's SDPA), plain or causal.

Core ``c`` (numbered row by row, ``y * grid_x + x``) takes the contiguous tasks ``c*P .. (c+1)*P - 1`` of
the flattened (batch, head, task) index, ``P = per_core_<dims>``. A task is one query chunk, or under the
causal mask a balanced pair of query chunks ``(j, n_q - 1 - j)`` (one chunk when they coincide), as the
model's causal load balancing has it. Each query chunk of a task reads its ``qc x D`` block, streams the
``kc x D`` key and value chunks of its head (of its key/value head under GQA) through an online softmax,
and writes its ``qc x D`` output chunk: exactly the flows the model counts (``attention_flows``: q once
per chunk, k and v once per step, o once per chunk; each core at its own tasks' chunks and steps,
``families/attention/work.py``, where causal tasks differ in length). A plain chunk takes all ``n_k`` key
chunks; a causal chunk ``i`` only the ``ceil((i+1)*qc/kc)`` that reach its last row (at most ``n_k``:
the solve for these kernels keeps the last chunk's padded rows within the keys,
``model/constraints/ttlang_export.py``). The host pads the task list to whole cores (``cores x P``) with
zero queries of padding heads, so every working core runs ``P`` tasks, as the model counts them; padded
query rows are cropped from the output.

Per step (FlashAttention-2): ``s = q k^T / sqrt(D)``, ``m' = max(m, rowmax(s))``, ``p = exp(s - m')``,
``l' = l exp(m - m') + rowsum(p)``, ``acc' = acc exp(m - m') + p v``; at the end ``o = acc / l``.

Causal mask: ``s`` gets -1e30 (or less) added where the key's position exceeds the query's. TT-Lang has
no in-tile index operation, so each core reads the mask index once (``MASK_INDEX`` in ``quantities.py``,
``2*(qc + kc)`` tiles, counted by the model): the tile index and in-tile index of a chunk's rows and of a key chunk's
columns, as ``qc x 1`` and ``1 x kc`` blocks, broadcast once into the
``qc x kc`` key - query tile gap ``T`` and in-tile gap ``E``. A step's key offset from the chunk's first
query row, ``d`` tiles, is a ``1 x 1`` block counted down from 0 by ``chunk * qc`` and up by ``kc`` a step
in ones; every step adds ``relu(32 * (d + T) + E) * -1e30`` to its scores: ``relu`` is 0 where the key is
not ahead and at least 1 where it is (every operand a small integer, exact in bf16, rounding never changes
the sum's sign), so steps wholly before the chunk's rows are unchanged.

The language is the one the TT-Lang compiler (tt-lang 1.1.1) takes, which the simulator (tt-lang-sim
1.1.6) also runs: no early ``return`` in a thread (a working-core guard ``if`` instead), loops over
``range`` only (a task's chunks and steps are arithmetic, not helper calls), one operation's result per
stored block where the compiler needs a block of its own (a reduce, a broadcast, a fill, a transpose),
constants filled once per core into buffers of their own (``fill`` takes only literals; ``where`` and
comparisons do not exist in the compiler), and intermediate buffers made like a never-read ``scratch``
tensor as large as any block (the simulator wants the tensor to hold the block). Where the two name or
sign an operation differently (the compiler's ``ttl.math.reduce_max(x, scaler, dims=)``,
``ttl.math.broadcast(x, out, dims=)``, ``ttl.math.fill(out, value)``, ``ttl.transpose``), the file's
simulator adapter gives the simulator the compiler's form. The file defines ``KERNEL`` (the operation)
and ``kernel_arguments()`` (its host tensors, in order): ``loom-explorer verify`` compiles it through them.

Not written yet: the 2-D layouts with key/value multicasts (``ExportError`` says so). Keys are padded with
zeros to whole key chunks only under the causal mask (``Sq = Skv``: every padded key lies after every query
row, so the mask removes it); without it ``Skv`` must be a whole number of key chunks (a constraint of the
solve for these kernels, as above).
"""

from __future__ import annotations

import math
import textwrap

from loom_explorer.export.exporter import ExportError
from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.families.attention.program import Attention
from loom_explorer.mapping.candidate import Comm
from loom_explorer.targets.ttlang.common import SIM_ADAPTER, TO_DEVICE, footer, header
from loom_explorer.traffic.transfers import used_cores


def attention_unsupported(st: Attention, candidate_name: str, flattened: bool, dram_only: bool) -> str | None:
    """Why this attention candidate cannot be written yet (None: it can)."""
    if not (flattened and dram_only):
        return (
            f"TT-Lang export of attention covers the flattened layout with DRAM reads (TTNN's SDPA split) "
            f"so far; {candidate_name} is not"
        )
    return None


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
        raise ExportError(
            f"TT-Lang export of attention needs every batch/head dim on the flattened axis; {', '.join(outside)} is not"
        )
    heads = [d for d in st.batch_dims if problem.program.dim(d).group_of is None]
    # the key/value heads: the dim through which the keys are indexed by the query heads (``Hkv`` for ``H``);
    # batch dims hold only the query side's dims, never a grouped one
    kv_heads = problem.program.grouped_by(k_in, "H") if "H" in shape else None
    causal = problem.has_option("causal")
    qc, kc = v["q_chunk_size"] // 32, v["k_chunk_size"] // 32
    d_t = problem.tiles(st.head_dim)
    sq_t, skv_t = problem.tiles(st.q_dim), problem.tiles(st.kv_dim)
    if shape[st.kv_dim] % v["k_chunk_size"] and not causal:  # causal: the mask removes every padded key
        raise ExportError(
            f"{st.kv_dim}={shape[st.kv_dim]} is not a whole number of key chunks "
            f"(k_chunk_size={v['k_chunk_size']}); padded keys would need a mask"
        )
    n_q, n_k = -(-sq_t // qc), -(-skv_t // kc)
    if causal and -(-n_q * qc // kc) > n_k:  # the model's ``ttlang_export`` constraints keep solves from this
        why = (
            f"more query than key tiles ({st.q_dim}={shape[st.q_dim]}, {st.kv_dim}={shape[st.kv_dim]})"
            if sq_t > skv_t
            else f"{st.q_dim}={shape[st.q_dim]} is not a whole number of query chunks "
            f"(q_chunk_size={v['q_chunk_size']}), and the last chunk's padded rows"
        )
        raise ExportError(
            f"under the causal mask {why} reach past the keys: {n_q} query chunks of {qc} tiles "
            f"need key chunk {-(-n_q * qc // kc)} of {n_k}, and the kernel does not clamp a chunk's "
            "key steps"
        )
    names = {"q": q_in, "k": k_in, "v": v_in, "o": out}
    return _TEMPLATE.format(
        header=header(built, doc),
        **names,
        gx=v["grid_x"],
        gy=v["grid_y"],
        working=len(used_cores(sch, v)),
        per_core=v["per_core_" + "*".join(group)],
        qc=qc,
        kc=kc,
        dt=d_t,
        n_q=n_q,
        n_k=n_k,
        dq=v["q_buffer_depth"],
        dk=v["k_buffer_depth"],
        dv=v["v_buffer_depth"],
        b=math.prod(shape[d] for d in heads if d != "H"),
        h=shape.get("H", 1),
        hkv=shape[kv_heads] if kv_heads else shape.get("H", 1),
        sq=shape[st.q_dim],
        skv=shape[st.kv_dim],
        d=shape[st.head_dim],
        causal=causal,
        task="balanced query chunk pairs" if causal else "query chunks",
        group=" x ".join(group),
        footer=footer(doc),
        adapter=SIM_ADAPTER,
        kernel=_kernel(names, causal, 1.0 / math.sqrt(shape[st.head_dim])),
        mask_host=_MASK_HOST if causal else "",
        mask_arg=", mask_index" if causal else "",
        mask_doc=", the causal mask index" if causal else "",
    )


def _kernel(names: dict[str, str], causal: bool, scale: float) -> str:
    """The operation: its buffers, reader, compute (every op's result stored in its own buffer) and writer;
    ``scale`` (1/sqrt(D)) goes in as a literal, the only value ``fill`` takes."""
    step = STEP.format(
        **names,
        scores=_SCORES_CAUSAL if causal else SCORES,
        keep_max="step + 1 < steps",
        keep_why="the running max is not needed after the last step",
    )
    chunk = " " * (8 if causal else 4)  # a query chunk's indentation in its task
    tasks = (_COMPUTE_TASKS_CAUSAL if causal else _COMPUTE_TASKS).format(
        query_block=textwrap.indent(
            online_softmax(names, "for step in range(steps):\n" + textwrap.indent(step, " " * 4)), chunk
        ),
        normalise=textwrap.indent(NORMALISE.format(**names), chunk),
    )
    return _KERNEL.format(
        **names,
        state_dfbs=STATE_DFBS.format(**names),
        arg=", mask_index" if causal else "",
        dfbs=_MASK_DFBS.format(**names) if causal else "",
        read=_MASK_READ if causal else "",
        read_tasks=(_READ_CAUSAL if causal else _READ).format(**names),
        write_tasks=(_WRITE_CAUSAL if causal else _WRITE).format(**names),
        constants=textwrap.indent(CONSTANTS.format(scale=repr(scale)), " " * 12) + (_MASK_CONSTANTS if causal else ""),
        held=_MASK_HELD if causal else "",
        tasks=textwrap.indent(tasks, " " * 16),
    )


def online_softmax(names: dict[str, str], steps: str) -> str:
    """A query block's online softmax (FlashAttention-2, module docstring), at indentation 0: ``QUERY_BLOCK``
    around ``steps``, the loop over the block's key/value steps (at indentation 0). ``NORMALISE`` then writes
    the block's output (flash-decoding first combines the other cores' partials into the state)."""
    return QUERY_BLOCK.format(**names, steps=textwrap.indent(steps, " " * 4))


_MASK_HOST = """\
    # the causal mask index (module docstring): row tile / in-tile row in column tiles 0 / 1 of the first
    # QC tile rows, column tile / in-tile column in tile rows QC / QC + 1
    mask_index = torch.zeros(((QC + 2) * 32, max(KC, 2) * 32), dtype=torch.bfloat16)
    mask_index[:QC * 32, :32] = (torch.arange(QC * 32) // 32)[:, None]
    mask_index[:QC * 32, 32:64] = (torch.arange(QC * 32) % 32)[:, None]
    mask_index[QC * 32:(QC + 1) * 32, :KC * 32] = (torch.arange(KC * 32) // 32)[None, :]
    mask_index[(QC + 1) * 32:(QC + 2) * 32, :KC * 32] = (torch.arange(KC * 32) % 32)[None, :]
"""


_MASK_DFBS = """\
    # the causal mask index, read once per core (module docstring): tile and in-tile index of a query
    # chunk's rows (QC x 1: column 0 of each tile) and of a key chunk's columns (1 x KC: row 0 of each tile)
    row_tiles_dfb = ttl.make_dataflow_buffer_like(mask_index, shape=(QC, 1), block_count=1)
    row_elems_dfb = ttl.make_dataflow_buffer_like(mask_index, shape=(QC, 1), block_count=1)
    col_tiles_dfb = ttl.make_dataflow_buffer_like(mask_index, shape=(1, KC), block_count=1)
    col_elems_dfb = ttl.make_dataflow_buffer_like(mask_index, shape=(1, KC), block_count=1)
    tile_gap_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, KC), block_count=1)  # key - query tile
    elem_gap_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, KC), block_count=1)  # key - query in-tile
    thirty_two_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, KC), block_count=1)
    minus_inf_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, KC), block_count=1)
    offset_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(1, 1), block_count=2)  # step's key - chunk's query tile
    # (both also hold the broadcast index blocks once, before the first task)
    offset_wide_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, KC), block_count=1)
    ahead_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, KC), block_count=1)  # key - query position
"""

_MASK_READ = """\
            with row_tiles_dfb.reserve() as index_blk:
                ttl.copy(mask_index[0:QC, 0:1], index_blk).wait()
            with row_elems_dfb.reserve() as index_blk:
                ttl.copy(mask_index[0:QC, 1:2], index_blk).wait()
            with col_tiles_dfb.reserve() as index_blk:
                ttl.copy(mask_index[QC:QC + 1, 0:KC], index_blk).wait()
            with col_elems_dfb.reserve() as index_blk:
                ttl.copy(mask_index[QC + 1:QC + 2, 0:KC], index_blk).wait()
"""

_MASK_CONSTANTS = """\
            with thirty_two_dfb.reserve() as c:
                c.store(ttl.math.fill(c, 32.0))
            with minus_inf_dfb.reserve() as c:
                c.store(ttl.math.fill(c, -1e30))
            # key tile - query tile and key column - query row of every score of a step at offset 0
            with row_tiles_dfb.wait() as row_tiles, col_tiles_dfb.wait() as col_tiles:
                with ahead_dfb.reserve() as w:
                    w.store(ttl.math.broadcast(col_tiles, w, dims=[0]))
                with offset_wide_dfb.reserve() as w:
                    w.store(ttl.math.broadcast(row_tiles, w, dims=[1]))
            with ahead_dfb.wait() as cols, offset_wide_dfb.wait() as rows, tile_gap_dfb.reserve() as gap:
                gap.store(cols - rows)
            with row_elems_dfb.wait() as row_elems, col_elems_dfb.wait() as col_elems:
                with ahead_dfb.reserve() as w:
                    w.store(ttl.math.broadcast(col_elems, w, dims=[0]))
                with offset_wide_dfb.reserve() as w:
                    w.store(ttl.math.broadcast(row_elems, w, dims=[1]))
            with ahead_dfb.wait() as cols, offset_wide_dfb.wait() as rows, elem_gap_dfb.reserve() as gap:
                gap.store(cols - rows)
"""

_MASK_HELD = (
    ",\n                  tile_gap_dfb.wait() as tile_gap, elem_gap_dfb.wait() as elem_gap,\n"
    "                  thirty_two_dfb.wait() as thirty_two, minus_inf_dfb.wait() as minus_inf"
)

# the buffers of q, k, v, o and of the online softmax, as both attention kernels make them (flash-decoding's
# too, ``families/flash_decoding/ttlang_kernel.py``): formatted with the tensor names
STATE_DFBS = """\
    {q}_dfb = ttl.make_dataflow_buffer_like({q}, shape=(QC, DT), block_count=Q_BUFFER_DEPTH)
    {k}_dfb = ttl.make_dataflow_buffer_like({k}, shape=(KC, DT), block_count=K_BUFFER_DEPTH)
    {v}_dfb = ttl.make_dataflow_buffer_like({v}, shape=(KC, DT), block_count=V_BUFFER_DEPTH)
    {o}_dfb = ttl.make_dataflow_buffer_like({o}, shape=(QC, DT), block_count=1)
    # (intermediate buffers are made like ``scratch``, a never-read tensor as large as any block: the
    # simulator wants the tensor to hold the block)
    # constants, filled once per core: the reduce scaler (ones) and the score scale 1/sqrt(D)
    ones_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(1, 1), block_count=1)
    scale_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, KC), block_count=1)
    # one step: k^T, q k^T, its scaled scores, the step's row max, the new running max (and wide), p
    {k}t_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(DT, KC), block_count=1)
    qk_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, KC), block_count=1)
    scores_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, KC), block_count=1)
    step_max_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, 1), block_count=1)
    new_max_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, 1), block_count=1)
    new_max_wide_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, KC), block_count=1)
    p_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, KC), block_count=1)
    # the correction exp(m - m'), its row sum and wide form, the corrected accumulator
    correction_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, 1), block_count=1)
    step_sum_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, 1), block_count=1)
    correction_wide_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, DT), block_count=1)
    corrected_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, DT), block_count=1)
    # running state across a chunk's steps (the old block is held while the new one is written)
    max_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, 1), block_count=2)  # running row max m
    sum_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, 1), block_count=2)  # running row sum l
    acc_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, DT), block_count=2)  # unnormalised output
    sum_wide_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, DT), block_count=1)  # l, for o = acc / l
"""

# the constants both attention kernels fill once per core (``STATE_DFBS``), formatted with the scale's literal
CONSTANTS = """\
with ones_dfb.reserve() as c:
    c.store(ttl.math.fill(c, 1.0))
with scale_dfb.reserve() as c:
    c.store(ttl.math.fill(c, {scale}))  # 1/sqrt(D): fill takes a literal
"""

# a query block's online softmax (``online_softmax``): the block waited on, the running state started, then the
# loop over its key/value steps (``{steps}``)
QUERY_BLOCK = """\
with {q}_dfb.wait() as {q}_blk:
    with max_dfb.reserve() as m:
        m.store(ttl.math.fill(m, -1e30))
    with sum_dfb.reserve() as s:
        s.store(ttl.math.fill(s, 0.0))
    with acc_dfb.reserve() as acc:
        acc.store(ttl.math.fill(acc, 0.0))
{steps}"""

# the output of a query block once its state is final: o = acc / l
NORMALISE = """\
with sum_dfb.wait() as l_final, sum_wide_dfb.reserve() as w:
    w.store(ttl.math.broadcast(l_final, w, dims=[1]))
with acc_dfb.wait() as acc, sum_wide_dfb.wait() as l_wide, {o}_dfb.reserve() as out_blk:
    out_blk.store(acc / l_wide)
"""

_KERNEL = """\
@ttl.operation(grid=(GRID_X, GRID_Y))
def attention_kernel({q}, {k}, {v}, {o}, scratch{arg}):
    # rows of the 2-D host tensors: (head, chunk) major, tiles of the chunk minor; columns: the head dim
{state_dfbs}{dfbs}
    @ttl.datamovement()
    def read_{q}_{k}_{v}():
        x, y = ttl.node(dims=2)
        core = y * GRID_X + x  # cores are numbered row by row
        if core < WORKING_CORES:
{read}{read_tasks}
    @ttl.compute()
    def compute():
        x, y = ttl.node(dims=2)
        core = y * GRID_X + x
        if core < WORKING_CORES:
{constants}            with (ones_dfb.wait() as ones, scale_dfb.wait() as scale{held}):
{tasks}
    @ttl.datamovement()
    def write_{o}():
        x, y = ttl.node(dims=2)
        core = y * GRID_X + x
        if core < WORKING_CORES:
{write_tasks}"""

# plain: task t is query chunk t % N_Q of (batch, head) row t // N_Q
_READ = """\
            for task in range(core * TASKS_PER_CORE, (core + 1) * TASKS_PER_CORE):
                head = task // TASKS_PER_HEAD
                chunk = task % TASKS_PER_HEAD
                kv_row = ((head // H) * HKV + (head % H) // GROUP) * N_K * KC
                with {q}_dfb.reserve() as {q}_blk:
                    ttl.copy({q}[(head * N_Q + chunk) * QC:(head * N_Q + chunk + 1) * QC, 0:DT], {q}_blk).wait()
                for step in range(N_K):
                    with {k}_dfb.reserve() as {k}_blk:
                        ttl.copy({k}[kv_row + step * KC:kv_row + (step + 1) * KC, 0:DT], {k}_blk).wait()
                    with {v}_dfb.reserve() as {v}_blk:
                        ttl.copy({v}[kv_row + step * KC:kv_row + (step + 1) * KC, 0:DT], {v}_blk).wait()
"""

_WRITE = """\
            for task in range(core * TASKS_PER_CORE, (core + 1) * TASKS_PER_CORE):
                head = task // TASKS_PER_HEAD
                chunk = task % TASKS_PER_HEAD
                with {o}_dfb.wait() as out_blk:
                    ttl.copy(out_blk, {o}[(head * N_Q + chunk) * QC:(head * N_Q + chunk + 1) * QC, 0:DT]).wait()
"""

# causal: task t is the pair (j, N_Q - 1 - j), j = t % TASKS_PER_HEAD, one chunk when they coincide
# (2 * j + 1 == N_Q); chunk c streams ceil((c + 1) * QC / KC) key chunks (at most N_K: checked on export)
_READ_CAUSAL = """\
            for task in range(core * TASKS_PER_CORE, (core + 1) * TASKS_PER_CORE):
                head = task // TASKS_PER_HEAD
                j = task % TASKS_PER_HEAD
                kv_row = ((head // H) * HKV + (head % H) // GROUP) * N_K * KC
                for half in range(2 - (2 * j + 1) // N_Q):
                    chunk = j + half * (N_Q - 1 - 2 * j)
                    with {q}_dfb.reserve() as {q}_blk:
                        ttl.copy({q}[(head * N_Q + chunk) * QC:(head * N_Q + chunk + 1) * QC, 0:DT], {q}_blk).wait()
                    for step in range(((chunk + 1) * QC + KC - 1) // KC):
                        with {k}_dfb.reserve() as {k}_blk:
                            ttl.copy({k}[kv_row + step * KC:kv_row + (step + 1) * KC, 0:DT], {k}_blk).wait()
                        with {v}_dfb.reserve() as {v}_blk:
                            ttl.copy({v}[kv_row + step * KC:kv_row + (step + 1) * KC, 0:DT], {v}_blk).wait()
"""

_WRITE_CAUSAL = """\
            for task in range(core * TASKS_PER_CORE, (core + 1) * TASKS_PER_CORE):
                head = task // TASKS_PER_HEAD
                j = task % TASKS_PER_HEAD
                for half in range(2 - (2 * j + 1) // N_Q):
                    chunk = j + half * (N_Q - 1 - 2 * j)
                    with {o}_dfb.wait() as out_blk:
                        ttl.copy(out_blk, {o}[(head * N_Q + chunk) * QC:(head * N_Q + chunk + 1) * QC, 0:DT]).wait()
"""

_COMPUTE_TASKS = """\
for task in range(core * TASKS_PER_CORE, (core + 1) * TASKS_PER_CORE):
    steps = N_K
{query_block}{normalise}"""

_COMPUTE_TASKS_CAUSAL = """\
for task in range(core * TASKS_PER_CORE, (core + 1) * TASKS_PER_CORE):
    j = task % TASKS_PER_HEAD
    for half in range(2 - (2 * j + 1) // N_Q):
        chunk = j + half * (N_Q - 1 - 2 * j)
        steps = ((chunk + 1) * QC + KC - 1) // KC
        # the offset (in tiles) of step 0's keys from the chunk's first query row: -chunk * QC
        with offset_dfb.reserve() as off:
            off.store(ttl.math.fill(off, 0.0))
        for _ in range(chunk * QC):  # (fill takes only literals: count the offset down in ones)
            with offset_dfb.wait() as off_old, offset_dfb.reserve() as off:
                off.store(off_old - ones)
{query_block}{normalise}"""

SCORES = """\
with qk_dfb.wait() as qk, scores_dfb.reserve() as sc:
    sc.store(qk * scale)
"""

# key - query position = 32 * (offset + key tile - query tile) + (key column - query row); a score is masked
# (-1e30 or less added) where it is positive: relu of it is then >= 1, and 0 elsewhere
_SCORES_CAUSAL = """\
with offset_dfb.wait() as off, offset_wide_dfb.reserve() as w:
    w.store(ttl.math.broadcast(off, w, dims=[0, 1]))
    if step + 1 < steps:  # the next step's offset: KC tiles further
        with offset_dfb.reserve() as off_next:
            off_next.store(off + ones)
for _ in range(KC - 1):
    if step + 1 < steps:
        with offset_dfb.wait() as off, offset_dfb.reserve() as off_next:
            off_next.store(off + ones)
with offset_wide_dfb.wait() as off_wide, ahead_dfb.reserve() as ahead:
    ahead.store((off_wide + tile_gap) * thirty_two + elem_gap)
with qk_dfb.wait() as qk, ahead_dfb.wait() as ahead, scores_dfb.reserve() as sc:
    sc.store(qk * scale + ttl.math.relu(ahead) * minus_inf)
"""

STEP = """\
with {k}_dfb.wait() as {k}_blk, {k}t_dfb.reserve() as kt:
    kt.store(ttl.transpose({k}_blk))
with {k}t_dfb.wait() as kt, qk_dfb.reserve() as qk:
    qk.store({q}_blk @ kt)
{scores}with scores_dfb.wait() as sc:
    with step_max_dfb.reserve() as sm:
        sm.store(ttl.math.reduce_max(sc, ones, dims=[1]))
    with max_dfb.wait() as m_old:
        with step_max_dfb.wait() as sm, new_max_dfb.reserve() as mn:
            mn.store(ttl.math.max(m_old, sm))
        with new_max_dfb.wait() as mn:
            with correction_dfb.reserve() as cr:
                cr.store(ttl.math.exp(m_old - mn))
            with new_max_wide_dfb.reserve() as w:
                w.store(ttl.math.broadcast(mn, w, dims=[1]))
            if {keep_max}:  # {keep_why}
                with max_dfb.reserve() as m:
                    m.store(mn)
    with new_max_wide_dfb.wait() as mw, p_dfb.reserve() as p:
        p.store(ttl.math.exp(sc - mw))
with p_dfb.wait() as p:
    with step_sum_dfb.reserve() as ss:
        ss.store(ttl.math.reduce_sum(p, ones, dims=[1]))
    with correction_dfb.wait() as cr:
        with sum_dfb.wait() as l_old, step_sum_dfb.wait() as ss, sum_dfb.reserve() as l_new:
            l_new.store(l_old * cr + ss)
        with correction_wide_dfb.reserve() as w:
            w.store(ttl.math.broadcast(cr, w, dims=[1]))
    with correction_wide_dfb.wait() as cw, acc_dfb.wait() as acc_old, corrected_dfb.reserve() as co:
        co.store(acc_old * cw)
    with corrected_dfb.wait() as co, {v}_dfb.wait() as {v}_blk, acc_dfb.reserve() as acc:
        acc.store(co + p @ {v}_blk)
"""

# the head of both attention kernel files: the export's header, the imports, the grid
FILE_HEAD = """\
{header}
import json
import math

import torch
import ttl
import ttnn

# ---------------------------------------------------------------- the schedule
GRID_X, GRID_Y = {gx}, {gy}              # cores used: columns, rows
"""

_TEMPLATE = (
    FILE_HEAD
    + """\
WORKING_CORES = {working}                # cores with tasks, numbered row by row
TASKS_PER_CORE = {per_core}              # tasks ({group} {task}) per core, contiguous
QC, KC, DT = {qc}, {kc}, {dt}            # query chunk, key chunk, head dim (tiles)
N_Q, N_K = {n_q}, {n_k}                  # query chunks, key/value chunks per head
CAUSAL = {causal}
TASKS_PER_HEAD = -(-N_Q // 2) if CAUSAL else N_Q
Q_BUFFER_DEPTH, K_BUFFER_DEPTH, V_BUFFER_DEPTH = {dq}, {dk}, {dv}

# the problem: batch, query heads, key/value heads, sequence lengths, head dim (elements)
B, H, HKV, SQ, SKV, D = {b}, {h}, {hkv}, {sq}, {skv}, {d}
SCALE = 1.0 / math.sqrt(D)
HEADS_PAD = -(-WORKING_CORES * TASKS_PER_CORE // TASKS_PER_HEAD)  # (batch, head) rows, padded to whole cores
KV_HEADS_PAD = -(-HEADS_PAD // H) * HKV


GROUP = H // HKV                         # query heads per key/value head (GQA)

{adapter}

{kernel}
KERNEL = attention_kernel

"""
    + TO_DEVICE
    + '''

def rows(t, heads_pad, chunk_rows):
    """[B, heads, S, D] -> 2-D [(heads_pad * chunk_rows), D]: each (batch, head) padded to chunk_rows rows."""
    flat = torch.zeros((heads_pad, chunk_rows, D), dtype=torch.bfloat16)
    flat[:t.shape[0] * t.shape[1], :t.shape[2]] = t.reshape(-1, t.shape[2], D)
    return flat.reshape(-1, D)


def kernel_arguments():
    """The kernel's host tensors in argument order: q, k, v (seeded, laid out by ``rows``), the zero
    output, the never-read scratch tensor{mask_doc}."""
    torch.manual_seed(0)
    q = torch.randn((B, H, SQ, D), dtype=torch.bfloat16)
    k = torch.randn((B, HKV, SKV, D), dtype=torch.bfloat16)
    v = torch.randn((B, HKV, SKV, D), dtype=torch.bfloat16)
{mask_host}    out = torch.zeros((HEADS_PAD * N_Q * QC * 32, D), dtype=torch.bfloat16)
    scratch = torch.zeros((max(QC, DT) * 32, max(KC, DT) * 32), dtype=torch.bfloat16)
    return [rows(q, HEADS_PAD, N_Q * QC * 32), rows(k, KV_HEADS_PAD, N_K * KC * 32),
            rows(v, KV_HEADS_PAD, N_K * KC * 32), out, scratch{mask_arg}]


def main():
    arguments = kernel_arguments()
    device = ttnn.open_device(device_id=0)
    try:
        on_device = [to_device(t, device) for t in arguments]
        KERNEL(*on_device)
        result = ttnn.to_torch(on_device[3]).float().reshape(HEADS_PAD, N_Q * QC * 32, D)[:B * H, :SQ]
    finally:
        ttnn.close_device(device)
    torch.manual_seed(0)  # the same inputs, for the reference
    q = torch.randn((B, H, SQ, D), dtype=torch.bfloat16)
    k = torch.randn((B, HKV, SKV, D), dtype=torch.bfloat16)
    v = torch.randn((B, HKV, SKV, D), dtype=torch.bfloat16)
    groups = H // HKV
    expected = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float().repeat_interleave(groups, dim=1), v.float().repeat_interleave(groups, dim=1),
        is_causal=CAUSAL)
    pcc = torch.corrcoef(torch.stack([result.flatten(), expected.reshape(B * H, SQ, D).flatten()]))[0, 1].item()
    print("LOOM_RESULT " + json.dumps({{"pcc": pcc}}))
    assert pcc >= 0.999, f"PCC {{pcc:.6f}} < 0.999"


{footer}'''
)
