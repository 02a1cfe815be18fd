"""A flash-decoding schedule (the ``kv_split`` candidate, ``quantities.py``) as a TT-Lang kernel file.

Core ``c`` (numbered row by row) is share ``c % S`` of group block ``c // S`` (``S = kv_cores``): it holds the
``g = per_core_<groups>`` groups ``block*g .. block*g + g - 1`` and streams, for each, one contiguous run of
the group's ``n_k`` key chunks. Runs are ``RUN = ceil(n_k / S)`` chunks long; the group's first core (share
0) takes the last run (``n_k - (S-1)*RUN`` chunks, so it also holds the padded chunk of a ragged cache), share
``j > 0`` the run ``S - 1 - j``. A group's query heads are packed: its ``G*Sq`` query rows are one ``r x D``
block (``r`` tiles, zero rows padding it), so its keys and values are read once for all its heads.

Every core runs the online softmax of attention's kernel over its run (``families/attention/ttlang_kernel.py``:
its buffers, constants, steps and normalisation, and the file's head). A core other than the first then
hands its unnormalised output, row max and row sum to its writer, which sends them through three
``ttl.PipeNet`` s to the group's first core; that core's writer receives them (one buffer slot per sender),
and its compute combines them one after another (``families/flash_decoding/latency.py``):

    m' = max(m, m_i),  c = exp(m - m'),  c_i = exp(m_i - m'),  l = l c + l_i c_i,  acc = acc c + acc_i c_i

then writes ``o = acc / l``. A ragged cache (``Skv`` not a whole number of key chunks) is padded with zero
keys; the step of the last chunk adds the key mask (``KEY_MASK``: 0 for a key, -1e30 for padding, an
``r x kc`` block the host builds) to its scores, read by the first core with that chunk's keys.

The host pads the groups to whole cores (``ceil(N_g/g)*g``, zero queries and keys) and crops the output.
Traffic is the model's (``latency.py``), each core at its own run (``families/attention/work.py``: the first core of a
group streams ``n_k - (S-1)*RUN`` key chunks when ``S`` does not divide ``n_k``).
"""

from __future__ import annotations

import math
import textwrap

from loom_explorer.export.exporter import ExportError
from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.families.attention.program import Attention
from loom_explorer.families.attention.ttlang_kernel import (
    CONSTANTS,
    FILE_HEAD,
    NORMALISE,
    SCORES,
    STATE_DFBS,
    STEP,
    online_softmax,
)
from loom_explorer.targets.ttlang.common import SIM_ADAPTER, TO_DEVICE, footer, header
from loom_explorer.traffic.transfers import used_cores


def decode_source(built: RebuiltSchedule, doc: ScheduleDocument, st: Attention) -> str:
    """The kernel file of a flash-decoding schedule (module docstring)."""
    v, problem = built.solution.values(), built.problem
    if problem.fp32_acc:
        raise ExportError(
            "TT-Lang export of flash-decoding keeps its state in the output's format; fp32 accumulation is not written"
        )
    q_in, k_in, v_in = st.streamed
    names = {"q": q_in, "k": k_in, "v": v_in, "o": st.output}
    shape = dict(problem.shape)
    group_dim = built.schedule.candidate.dim_on("xy")
    assert group_dim is not None
    kc = v["k_chunk_size"] // 32
    qc, s, g = v["q_chunk_size"] // 32, v["kv_cores"], v[f"per_core_{group_dim}"]
    n_k = -(-problem.tiles(st.kv_dim) // kc)
    run = -(-n_k // s)
    groups = math.prod(shape[d] for d in st.kv_groups)
    ragged = shape[st.kv_dim] % v["k_chunk_size"] != 0
    return _TEMPLATE.format(
        header=header(built, doc),
        **names,
        gx=v["grid_x"],
        gy=v["grid_y"],
        working=len(used_cores(built.schedule, v)),
        groups_per_core=g,
        kv_cores=s,
        qc=qc,
        kc=kc,
        dt=problem.tiles(st.head_dim),
        n_k=n_k,
        run=run,
        dq=v[f"{q_in}_buffer_depth"],
        dk=v[f"{k_in}_buffer_depth"],
        dv=v[f"{v_in}_buffer_depth"],
        n_groups=groups,
        sq=shape[st.q_dim],
        skv=shape[st.kv_dim],
        d=shape[st.head_dim],
        ragged=ragged,
        group_size=_group_size(problem.program, st, shape),
        adapter=SIM_ADAPTER,
        footer=footer(doc),
        kernel=_kernel(names, ragged, s > 1, 1.0 / math.sqrt(shape[st.head_dim])),
        mask_arg=", key_mask" if ragged else "",
        mask_doc=", the key mask" if ragged else "",
        mask_host=_MASK_HOST if ragged else "",
        group=group_dim.replace("*", " x "),
    )


def _group_size(program, st: Attention, shape: dict[str, int]) -> int:  # type: ignore[no-untyped-def]
    """Query heads per key/value head (``E_H / E_Hkv``; 1 when the keys are indexed by the query heads)."""
    size = 1
    for d in st.batch_dims:
        grouped = program.grouped_by(st.qk.b, d)
        if grouped is not None:
            size *= shape[d] // shape[grouped]
    return size


def _step(names: dict[str, str], scores: str) -> str:
    """One key/value step of the online softmax (attention's ``STEP``) with ``scores``."""
    return STEP.format(
        **names,
        scores=scores,
        keep_max="step + 1 < steps or KV_CORES > 1",
        keep_why="the final max is combined or sent when the group is split",
    )


def _steps(names: dict[str, str], ragged: bool, split: bool) -> str:
    """A group's key/value steps on one core. Unsplit, the padded chunk of a ragged cache is told by its index.
    Split, the compiler's dataflow analysis proves which cores push and wait on each buffer only through the
    nets' ``is_dst``/``is_src`` guards (a condition on a core's share, ``core % KV_CORES``, is not one it can
    analyse, and it takes every wait under one for a deadlock): the group's first core (the net's destination),
    whose run ends with the padded chunk, takes that step apart; the others' runs have no padded chunk."""
    loop = "for step in range(steps):\n"
    if not (ragged and split):
        return loop + textwrap.indent(_step(names, _SCORES_RAGGED if ragged else SCORES), " " * 4)
    plain, masked = (textwrap.indent(_step(names, scores), " " * 8) for scores in (SCORES, _SCORES_MASKED))
    return (
        "if out_net.is_dst():  # the group's first core: its run ends with the padded chunk\n"
        f"    for step in range(steps - 1):\n{plain}"
        f"    for step in range(steps - 1, steps):  # the padded chunk: its padding keys masked\n{masked}"
        f"if out_net.is_src():\n    {loop}{plain}"
    )


def _kernel(names: dict[str, str], ragged: bool, split: bool, scale: float) -> str:
    """The operation: buffers, the pipes of the partials, reader, compute and writer."""
    o = names["o"]
    # a split group's first core is told by the partials' net, as the writer's pipes are (``_steps``)
    compute_group = _COMPUTE_GROUP.format(
        query_block=textwrap.indent(online_softmax(names, _steps(names, ragged, split)), " " * 4),
        first_core="out_net.is_dst()" if split else "share == 0",
        combine=textwrap.indent(_COMBINE.format(**names), " " * 8) if split else "",
        normalise=textwrap.indent(NORMALISE.format(**names), " " * 8),
        hand_over=_HAND_OVER.format(**names) if split else "",
    )
    return _KERNEL.format(
        **names,
        state_dfbs=STATE_DFBS.format(**names),
        arg=", key_mask" if ragged else "",
        constants=textwrap.indent(CONSTANTS.format(scale=repr(scale)), " " * 12),
        partial_dfbs=_PARTIAL_DFBS.format(**names) if split else "",
        mask_dfb=_MASK_DFB if ragged else "",
        nets=_NETS if split else "",
        mask_read=textwrap.indent(_MASK_READ, " " * 20) if ragged and not split else "",
        mask_read_after=textwrap.indent(_MASK_READ_SPLIT, " " * 16) if ragged and split else "",
        compute_group=textwrap.indent(compute_group, " " * 16),
        write_group=textwrap.indent((_WRITE_SPLIT if split else _WRITE_ONE).format(o=o), " " * 16),
    )


_SCORES_RAGGED = """\
with qk_dfb.wait() as qk, scores_dfb.reserve() as sc:
    if first + step == N_K - 1:  # the padded chunk: its padding keys masked
        with key_mask_dfb.wait() as key_mask:
            sc.store(qk * scale + key_mask)
    else:
        sc.store(qk * scale)
"""

_SCORES_MASKED = """\
with qk_dfb.wait() as qk, key_mask_dfb.wait() as key_mask, scores_dfb.reserve() as sc:
    sc.store(qk * scale + key_mask)
"""

_MASK_DFB = """\
    key_mask_dfb = ttl.make_dataflow_buffer_like(key_mask, shape=(QC, KC), block_count=1)  # the padded chunk's
"""

_MASK_READ = """\
if first + step == N_K - 1:
    with key_mask_dfb.reserve() as mask_blk:
        ttl.copy(key_mask[0:QC, 0:KC], mask_blk).wait()
"""

# a split group: the first core (the partials' destination) reads the mask after its run, whose last chunk is
# the padded one (``_steps``)
_MASK_READ_SPLIT = """\
if out_net.is_dst():
    with key_mask_dfb.reserve() as mask_blk:
        ttl.copy(key_mask[0:QC, 0:KC], mask_blk).wait()
"""

_PARTIAL_DFBS = """\
    # the group's other cores' partials (one slot per sender), their combination, a core's final statistics
    {o}_partial_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, DT), block_count=KV_CORES - 1)
    max_partial_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, 1), block_count=KV_CORES - 1)
    sum_partial_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, 1), block_count=KV_CORES - 1)
    correction_other_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, 1), block_count=1)
    correction_other_wide_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, DT), block_count=1)
    other_corrected_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, DT), block_count=1)
    max_send_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, 1), block_count=1)
    sum_send_dfb = ttl.make_dataflow_buffer_like(scratch, shape=(QC, 1), block_count=1)
"""

# core j > 0 of group block b (core b * KV_CORES + j, numbered row by row) sends to core b * KV_CORES; one net per
# partial tensor, each written out in full (the compiler reads a net's pipes from its own expression)
_NETS = """\
    out_net = ttl.PipeNet([ttl.Pipe(src=((b * KV_CORES + j) % GRID_X, (b * KV_CORES + j) // GRID_X),
                                    dst=((b * KV_CORES) % GRID_X, (b * KV_CORES) // GRID_X))
                           for b in range(WORKING_CORES // KV_CORES) for j in range(1, KV_CORES)])
    max_net = ttl.PipeNet([ttl.Pipe(src=((b * KV_CORES + j) % GRID_X, (b * KV_CORES + j) // GRID_X),
                                    dst=((b * KV_CORES) % GRID_X, (b * KV_CORES) // GRID_X))
                           for b in range(WORKING_CORES // KV_CORES) for j in range(1, KV_CORES)])
    sum_net = ttl.PipeNet([ttl.Pipe(src=((b * KV_CORES + j) % GRID_X, (b * KV_CORES + j) // GRID_X),
                                    dst=((b * KV_CORES) % GRID_X, (b * KV_CORES) // GRID_X))
                           for b in range(WORKING_CORES // KV_CORES) for j in range(1, KV_CORES)])
"""

_KERNEL = """\
@ttl.operation(grid=(GRID_X, GRID_Y))
def decode_kernel({q}, {k}, {v}, {o}, scratch{arg}):
    # rows of the 2-D host tensors: group major (a group's packed query rows, its key/value rows); columns D
{state_dfbs}{partial_dfbs}{mask_dfb}{nets}
    @ttl.datamovement()
    def read_{q}_{k}_{v}():
        x, y = ttl.node(dims=2)
        core = y * GRID_X + x  # cores are numbered row by row
        if core < WORKING_CORES:
            share = core % KV_CORES
            first = (KV_CORES - 1 - share) * RUN  # the group's first core takes the last run
            steps = LAST_RUN + (RUN - LAST_RUN) * ((share + KV_CORES - 1) // KV_CORES)
            for slot in range(GROUPS_PER_CORE):
                group = (core // KV_CORES) * GROUPS_PER_CORE + slot
                with {q}_dfb.reserve() as {q}_blk:
                    ttl.copy({q}[group * QC:(group + 1) * QC, 0:DT], {q}_blk).wait()
                for step in range(steps):
                    kv_row = (group * N_K + first + step) * KC
                    with {k}_dfb.reserve() as {k}_blk:
                        ttl.copy({k}[kv_row:kv_row + KC, 0:DT], {k}_blk).wait()
                    with {v}_dfb.reserve() as {v}_blk:
                        ttl.copy({v}[kv_row:kv_row + KC, 0:DT], {v}_blk).wait()
{mask_read}{mask_read_after}
    @ttl.compute()
    def compute():
        x, y = ttl.node(dims=2)
        core = y * GRID_X + x
        if core < WORKING_CORES:
            share = core % KV_CORES
            first = (KV_CORES - 1 - share) * RUN
            steps = LAST_RUN + (RUN - LAST_RUN) * ((share + KV_CORES - 1) // KV_CORES)
{constants}            with ones_dfb.wait() as ones, scale_dfb.wait() as scale:
{compute_group}
    @ttl.datamovement()
    def write_{o}():
        x, y = ttl.node(dims=2)
        core = y * GRID_X + x
        if core < WORKING_CORES:
            share = core % KV_CORES
            for slot in range(GROUPS_PER_CORE):
                group = (core // KV_CORES) * GROUPS_PER_CORE + slot
{write_group}"""

_COMPUTE_GROUP = """\
for slot in range(GROUPS_PER_CORE):
{query_block}    if {first_core}:  # the group's first core: combine the others' partials, normalise
{combine}{normalise}{hand_over}"""

_HAND_OVER = """\
    if out_net.is_src():  # the others: hand the partial to the writer, which sends it to the group's first core
        with acc_dfb.wait() as acc, {o}_dfb.reserve() as out_blk:
            out_blk.store(acc)
        with max_dfb.wait() as m, max_send_dfb.reserve() as ms:
            ms.store(m)
        with sum_dfb.wait() as l, sum_send_dfb.reserve() as ls:
            ls.store(l)
"""

_COMBINE = """\
for partial in range(KV_CORES - 1):
    with max_dfb.wait() as m_old, max_partial_dfb.wait() as m_i:
        with new_max_dfb.reserve() as mn:
            mn.store(ttl.math.max(m_old, m_i))
        with new_max_dfb.wait() as mn:
            with correction_dfb.reserve() as cr:
                cr.store(ttl.math.exp(m_old - mn))
            with correction_other_dfb.reserve() as cr:
                cr.store(ttl.math.exp(m_i - mn))
            if partial + 1 < KV_CORES - 1:  # the running max is not needed after the last partial
                with max_dfb.reserve() as m:
                    m.store(mn)
    with correction_dfb.wait() as cr, correction_other_dfb.wait() as cri:
        with sum_dfb.wait() as l_old, sum_partial_dfb.wait() as l_i, sum_dfb.reserve() as l_new:
            l_new.store(l_old * cr + l_i * cri)
        with correction_wide_dfb.reserve() as w:
            w.store(ttl.math.broadcast(cr, w, dims=[1]))
        with correction_other_wide_dfb.reserve() as w:
            w.store(ttl.math.broadcast(cri, w, dims=[1]))
    with correction_wide_dfb.wait() as cw, acc_dfb.wait() as acc_old, corrected_dfb.reserve() as co:
        co.store(acc_old * cw)
    with correction_other_wide_dfb.wait() as cw, {o}_partial_dfb.wait() as acc_i, other_corrected_dfb.reserve() as oc:
        oc.store(acc_i * cw)
    with corrected_dfb.wait() as co, other_corrected_dfb.wait() as oc, acc_dfb.reserve() as acc:
        acc.store(co + oc)
"""

_WRITE_ONE = """\
with {o}_dfb.wait() as out_blk:
    ttl.copy(out_blk, {o}[group * QC:(group + 1) * QC, 0:DT]).wait()
"""

# the pipe statements are guarded by the nets themselves (``is_dst``/``is_src``): the compiler must see which
# cores send and receive, and a core's share is not a constant it can analyse
_WRITE_SPLIT = """\
if out_net.is_dst():  # the group's first core: one partial from each other core of the group
    def receive_out(pipe):
        with {o}_partial_dfb.reserve() as blk:
            ttl.copy(pipe, blk).wait()

    def receive_max(pipe):
        with max_partial_dfb.reserve() as blk:
            ttl.copy(pipe, blk).wait()

    def receive_sum(pipe):
        with sum_partial_dfb.reserve() as blk:
            ttl.copy(pipe, blk).wait()

    out_net.if_dst(receive_out)
    max_net.if_dst(receive_max)
    sum_net.if_dst(receive_sum)
    with {o}_dfb.wait() as out_blk:
        ttl.copy(out_blk, {o}[group * QC:(group + 1) * QC, 0:DT]).wait()
if out_net.is_src():  # the others: their partial to the group's first core
    with {o}_dfb.wait() as out_blk:
        def send_out(pipe):
            ttl.copy(out_blk, pipe).wait()

        out_net.if_src(send_out)
    with max_send_dfb.wait() as max_blk:
        def send_max(pipe):
            ttl.copy(max_blk, pipe).wait()

        max_net.if_src(send_max)
    with sum_send_dfb.wait() as sum_blk:
        def send_sum(pipe):
            ttl.copy(sum_blk, pipe).wait()

        sum_net.if_src(send_sum)
"""

_MASK_HOST = """\
    # the padded chunk's key mask: 0 for its keys, -1e30 for the padding (every query row alike)
    key_mask = torch.zeros((QC * 32, KC * 32), dtype=torch.bfloat16)
    key_mask[:, SKV - (N_K - 1) * KC * 32:] = -1e30
"""

_TEMPLATE = (
    FILE_HEAD
    + """\
WORKING_CORES = {working}                # cores with work, numbered row by row
GROUPS_PER_CORE = {groups_per_core}              # ({group}) groups per core
KV_CORES = {kv_cores}                    # consecutive cores per group, splitting its key/value chunks
QC, KC, DT = {qc}, {kc}, {dt}            # packed query rows, key chunk, head dim (tiles)
N_K = {n_k}                              # key/value chunks per group
RUN = {run}                              # key chunks per core; the group's first core takes the rest
LAST_RUN = N_K - (KV_CORES - 1) * RUN
Q_BUFFER_DEPTH, K_BUFFER_DEPTH, V_BUFFER_DEPTH = {dq}, {dk}, {dv}

# the problem: groups (batch x key/value heads), query heads per group, lengths, head dim (elements)
N_GROUPS, GROUP, SQ, SKV, D = {n_groups}, {group_size}, {sq}, {skv}, {d}
RAGGED = {ragged}                        # SKV is not a whole number of key chunks: the last is padded
GROUPS_PAD = -(-N_GROUPS // GROUPS_PER_CORE) * GROUPS_PER_CORE

{adapter}

{kernel}
KERNEL = decode_kernel

"""
    + TO_DEVICE
    + '''

def rows(t, group_rows):
    """[groups, n, D] -> 2-D [(GROUPS_PAD * group_rows), D]: each group padded with zero rows."""
    flat = torch.zeros((GROUPS_PAD, group_rows, D), dtype=torch.bfloat16)
    flat[:t.shape[0], :t.shape[1]] = t
    return flat.reshape(-1, D)


def inputs():
    """q [groups x heads of a group, SQ, D] and k, v [groups, SKV, D], seeded."""
    torch.manual_seed(0)
    q = torch.randn((N_GROUPS * GROUP, SQ, D), dtype=torch.bfloat16)
    k = torch.randn((N_GROUPS, SKV, D), dtype=torch.bfloat16)
    v = torch.randn((N_GROUPS, SKV, D), dtype=torch.bfloat16)
    return q, k, v


def kernel_arguments():
    """The kernel's host tensors in argument order: the packed queries (a group's heads x SQ rows), the keys
    and values, the zero output, the never-read scratch tensor{mask_doc}."""
    q, k, v = inputs()
{mask_host}    out = torch.zeros((GROUPS_PAD * QC * 32, D), dtype=torch.bfloat16)
    scratch = torch.zeros((max(QC, DT) * 32, max(KC, DT) * 32), dtype=torch.bfloat16)
    packed = q.reshape(N_GROUPS, GROUP * SQ, D)
    return [rows(packed, QC * 32), rows(k, N_K * KC * 32), rows(v, N_K * KC * 32), out, scratch{mask_arg}]


def main():
    arguments = kernel_arguments()
    device = ttnn.open_device(device_id=0)
    try:
        on_device = [to_device(t, device) for t in arguments]
        KERNEL(*on_device)
        result = ttnn.to_torch(on_device[3]).float().reshape(GROUPS_PAD, QC * 32, D)[:N_GROUPS, :GROUP * SQ]
    finally:
        ttnn.close_device(device)
    q, k, v = inputs()
    expected = torch.nn.functional.scaled_dot_product_attention(
        q.float().reshape(N_GROUPS, GROUP, SQ, D), k.float()[:, None], v.float()[:, None])
    pcc = torch.corrcoef(torch.stack([result.flatten(), expected.flatten()]))[0, 1].item()
    print("LOOM_RESULT " + json.dumps({{"pcc": pcc}}))
    assert pcc >= 0.999, f"PCC {{pcc:.6f}} < 0.999"


{footer}'''
)
