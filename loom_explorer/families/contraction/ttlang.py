"""The contraction's TT-Lang writer: a GEMM schedule as a self-contained TT-Lang kernel file (what every
such file holds and how it is verified: ``targets/ttlang/exporter.py``).

What the kernel does is what the model costs (``traffic.py``, ``latency.py``):

* grid ``(grid_x, grid_y)``; core ``(x, y)`` owns ``per_core_M x per_core_N`` output tiles (and a
  ``per_core_K`` slice of K under split-K), indexed by the grid axis each dimension is on (a 1-D layout
  numbers the cores row by row, ``y * grid_x + x``, and cores past the work stay idle);
* for each ``out_block_h x out_block_w`` output block, K in steps of ``in0_block_w``: an in0 block
  (``out_block_h x in0_block_w``) and an in1 block (``in0_block_w x out_block_w``) per step, through
  dataflow buffers of ``in0_buffer_depth`` / ``in1_buffer_depth`` blocks;
* an input on ``dram`` is read by every core; on ``mcast_x`` (``mcast_y``) the first core of each row
  (column) reads it and multicasts it along the row (column) through a ``ttl.PipeNet``; on ``mcast_xy``
  the first core reads it and multicasts it to every other working core (one pipe per rectangle of
  receivers);
* the sum of an output block runs through a two-block accumulator (``acc_dfb``): the first K step stores
  ``a @ b``, each later one ``pre + a @ b``;
* output blocks are written to DRAM by their core; under split-K each core sends its partial blocks to
  the first core along the gather axis, which buffers one block per sender (``partial_dfb``), adds them
  and writes.

Every core computes whole blocks, as the model assumes: the host pads the inputs with zeros to whole
per-core blocks (``M_PAD`` etc.) and crops the output, so a ragged shape moves exactly the tiles the
model counts. in0 and its multicast run on the first data-movement kernel, in1, the output and the
partials on the second (TTNN's reader/writer split, the NoC0/NoC1 assignment of the model).

The file is written in the language both the TT-Lang compiler and the simulator take (no ``slice``
objects, no ``return`` in a thread, no zero fill; docs/export.md), its dataflow buffers are exactly the
model's L1 buffers for the TT-Lang target (``buffers.py``), and it defines ``KERNEL`` (the operation) and
``kernel_arguments()`` (the host tensors in argument order), which the compile driver and ``main()`` use.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from loom_explorer.export.exporter import ExportError
from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.families.contraction.program import Contraction, analyse_contraction
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Problem
from loom_explorer.targets.ttlang.common import (
    HOST_HELPERS,
    footer,
    header,
    pipe_helpers,
    pipes,
    receive_send,
    thread_body,
)
from loom_explorer.targets.ttlang.exporter import _check_common
from loom_explorer.targets.ttlang.writer import HostTensor, HostTensors, TtlangWriter
from loom_explorer.traffic.transfers import used_cores


def _gemm_unsupported(schedule: SymbolicSchedule) -> str | None:
    try:
        _check_supported(schedule.problem)
    except ExportError as exc:
        return str(exc)
    return None


def _check_supported(problem: Problem) -> Contraction:
    _check_common(problem)
    structure = analyse_contraction(problem.program)
    if structure.batch_dims:
        raise ExportError(
            f"TT-Lang export covers plain GEMM (M, N, K) so far; {problem.program.name} has "
            f"batch dimensions {', '.join(structure.batch_dims)}"
        )
    extra = [
        t.name
        for t in problem.program.inputs
        if problem.is_enabled(t.name) and t.name not in (structure.matmul.a, structure.matmul.b)
    ]
    if extra or problem.activation:
        raise ExportError("TT-Lang export covers C = A @ B so far (no bias, no activation)")
    if problem.fp32_acc:
        raise ExportError(
            "TT-Lang GEMM export accumulates in the output's format (a dataflow buffer takes its "
            "tensor's data format); fp32 accumulation is not written"
        )
    return structure


def partial_block_count(cores_along_k: int) -> int:
    """Blocks of the split-K partials buffer on the first core along K: one per sending core (the compiler
    gives each gather pipe into a receiver its own slot of the buffer), 0 without split-K."""
    return max(0, cores_along_k - 1)


def _gemm_source(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    """The GEMM kernel file (module docstring)."""
    con = _check_supported(built.problem)
    sch, v = built.schedule, built.solution.values()
    cand, problem = sch.candidate, built.problem
    a, b, out = con.matmul.a, con.matmul.b, con.matmul.out
    m, n, k = con.m_dim, con.n_dim, con.k_dim
    gx, gy = v["grid_x"], v["grid_y"]
    pm, pn, pk = v[f"per_core_{m}"], v[f"per_core_{n}"], v[f"per_core_{k}"]
    obh, obw, ibw = v["out_block_h"], v["out_block_w"], v["in0_block_w"]
    working = used_cores(sch, v)
    one_d = cand.is_1d

    def cores_along(dim: str) -> int:
        axis = cand.axis_of(dim)
        return {"x": gx, "y": gy, "xy": len(working), None: 1}[axis]

    pad = {m: cores_along(m) * pm, n: cores_along(n) * pn, k: cores_along(k) * pk}
    gather = cand.gather_axis
    comm_a, comm_b = cand.comm(a), cand.comm(b)

    nets = []
    for t, c in ((a, comm_a), (b, comm_b)):
        if c.axis is not None:
            nets.append(f"{t}_net = {pipes(c, working, gx)}")
    if gather is not None:
        head = "(0, y)" if gather == "x" else "(x, 0)"
        rng = (
            "for x in range(1, GRID_X) for y in range(GRID_Y)"
            if gather == "x"
            else "for x in range(GRID_X) for y in range(1, GRID_Y)"
        )
        nets.append(f"partial_net = ttl.PipeNet([ttl.Pipe(src=(x, y), dst={head}) {rng}])")
    is_head = {"x": "x == 0", "y": "y == 0", None: "True"}[gather]

    mm, nn, kk = m.lower(), n.lower(), k.lower()
    # tile ranges as inline ``t[a:b, c:d]`` subscripts of int starts: the compiler takes no slice objects
    read_a = f"{a}[r0:r0 + OUT_BLOCK_H, s0:s0 + IN0_BLOCK_W]"
    read_b = f"{b}[s0:s0 + IN0_BLOCK_W, c0:c0 + OUT_BLOCK_W]"
    fill_a = pipe_helpers(a, f"{a}_blk", comm_a) + receive_send(a, comm_a, read_a, f"{a}_blk")
    fill_b = pipe_helpers(b, f"{b}_blk", comm_b) + receive_send(b, comm_b, read_b, f"{b}_blk")

    def origin(*dims: str) -> str:
        """First tile of this core's share of each dimension."""
        lines = []
        for d in dims:
            axis = cand.axis_of(d)
            where_on = {"x": "x", "y": "y", "xy": "(y * GRID_X + x)"}.get(axis or "")
            lines.append(
                f"{d.lower()}0 = {where_on} * PER_CORE_{d}"
                if where_on
                else f"{d.lower()}0 = 0  # {d} is not spread: every core takes all of it"
            )
        return "\n".join(lines) + "\n" if lines else ""

    if gather is None:
        finish_compute = f"""\
            with acc_dfb.wait() as acc, {out}_dfb.reserve() as out_blk:
                out_blk.store(acc)
            """
        write_out = f"""\
            with {out}_dfb.wait() as out_blk:
                ttl.copy(out_blk, {out}[r0:r0 + OUT_BLOCK_H, c0:c0 + OUT_BLOCK_W]).wait()
            """
    else:
        finish_compute = f"""\
            if {is_head}:
                for _ in range(CORES_ALONG_K - 1):  # partial sums of the other cores along K
                    with acc_dfb.wait() as pre, partial_dfb.wait() as part, acc_dfb.reserve() as acc:
                        acc.store(pre + part)
            with acc_dfb.wait() as acc, {out}_dfb.reserve() as out_blk:
                out_blk.store(acc)
            """
        write_out = f"""\
            if {is_head}:
                def receive_partial(pipe):  # once per other core along K
                    with partial_dfb.reserve() as part:
                        ttl.copy(pipe, part).wait()

                partial_net.if_dst(receive_partial)
                with {out}_dfb.wait() as out_blk:
                    ttl.copy(out_blk, {out}[r0:r0 + OUT_BLOCK_H, c0:c0 + OUT_BLOCK_W]).wait()
            else:
                with {out}_dfb.wait() as out_blk:
                    def send_partial(pipe):
                        ttl.copy(out_blk, pipe).wait()

                    partial_net.if_src(send_partial)
            """
    partial_dfb = (
        (
            f"\n    partial_dfb = ttl.make_dataflow_buffer_like({out}, shape=(OUT_BLOCK_H, OUT_BLOCK_W), "
            "block_count=PARTIAL_BLOCKS)"
        )
        if gather is not None
        else ""
    )
    row_start = f"r0 = {mm}0 + bm * OUT_BLOCK_H\n"
    col_start = f"c0 = {nn}0 + bn * OUT_BLOCK_W\n"

    def blocks(inner: str, per_bm: str = "", per_bn: str = "") -> str:
        """``inner`` inside the loops over this core's output blocks (``per_bm``/``per_bn``: their first tiles)."""
        return (
            f"for bm in range(PER_CORE_{m} // OUT_BLOCK_H):\n"
            + textwrap.indent(per_bm, "    ")
            + f"    for bn in range(PER_CORE_{n} // OUT_BLOCK_W):\n"
            + textwrap.indent(per_bn + inner, "        ")
        )

    def k_loop(tensor: str, fill: str) -> str:
        return (
            f"for ks in range(PER_CORE_{k} // IN0_BLOCK_W):\n    s0 = {kk}0 + ks * IN0_BLOCK_W\n"
            + f"    with {tensor}_dfb.reserve() as {tensor}_blk:\n"
            + textwrap.indent(fill, "        ")
        )

    def thread(work: str) -> str:
        return thread_body(work, one_d)

    compute_steps = textwrap.dedent(f"""\
        with {a}_dfb.wait() as {a}_blk, {b}_dfb.wait() as {b}_blk, acc_dfb.reserve() as acc:
            acc.store({a}_blk @ {b}_blk)  # the first K step starts the sum (no zero fill)
        for ks in range(1, PER_CORE_{k} // IN0_BLOCK_W):
            with {a}_dfb.wait() as {a}_blk, {b}_dfb.wait() as {b}_blk, acc_dfb.wait() as pre, acc_dfb.reserve() as acc:
                acc.store(pre + {a}_blk @ {b}_blk)
        """)
    read_a_kernel = thread(origin(m, k) + blocks(k_loop(a, fill_a), row_start))
    read_b_kernel = thread(
        origin(m, n, k) + blocks(k_loop(b, fill_b) + textwrap.dedent(write_out), row_start, col_start)
    )
    compute_kernel = thread(blocks(compute_steps + textwrap.dedent(finish_compute)))
    partial_blocks = partial_block_count(cores_along(k))
    elements = dict(problem.shape)
    return _TEMPLATE.format(
        header=header(built, doc),
        kernel=problem.program.name,
        footer=footer(doc),
        host_helpers=HOST_HELPERS,
        a=a,
        b=b,
        out=out,
        m=m,
        n=n,
        k=k,
        gx=gx,
        gy=gy,
        pm=pm,
        pn=pn,
        pk=pk,
        obh=obh,
        obw=obw,
        ibw=ibw,
        da=v[f"{a}_buffer_depth"],
        db=v[f"{b}_buffer_depth"],
        working=len(working),
        cores_k=cores_along(k),
        m_el=elements[m],
        n_el=elements[n],
        k_el=elements[k],
        m_pad=pad[m] * 32,
        n_pad=pad[n] * 32,
        k_pad=pad[k] * 32,
        nets="\n    ".join(nets) or "# no multicast: every core reads its own blocks",
        partial_dfb=partial_dfb,
        partial_blocks=partial_blocks,
        read_a=read_a_kernel,
        read_b=read_b_kernel,
        compute=compute_kernel,
        one_d="row by row (1-D layout)" if one_d else "by grid position",
    )


def _gemm_host_tensors(built: RebuiltSchedule) -> HostTensors:
    """a, b, out: arguments 0..2, ``[M, K]``, ``[K, N]``, ``[M, N]``, one block each."""
    p, con = built.problem, analyse_contraction(built.problem.program)
    m, n, k = (p.elements(d) for d in (con.m_dim, con.n_dim, con.k_dim))
    mm = con.matmul
    return ((HostTensor(mm.a, 0, 1, 0, m, k), HostTensor(mm.b, 1, 1, 0, k, n)), (HostTensor(mm.out, 2, 1, 0, m, n),))


def _gemm_reference(built: RebuiltSchedule, inputs: Mapping[str, Any]) -> dict[str, Any]:
    mm = analyse_contraction(built.problem.program).matmul
    return {mm.out: inputs[mm.a] @ inputs[mm.b]}


WRITER = TtlangWriter("contraction", _gemm_unsupported, _gemm_source, _gemm_host_tensors, _gemm_reference)


_TEMPLATE = '''\
{header}
import json

import torch
import ttl
import ttnn

# ---------------------------------------------------------------- the schedule
GRID_X, GRID_Y = {gx}, {gy}              # cores used: columns, rows
WORKING_CORES = {working}                # cores with work, numbered {one_d}
PER_CORE_{m}, PER_CORE_{n}, PER_CORE_{k} = {pm}, {pn}, {pk}   # tiles of {m}, {n}, {k} per core
OUT_BLOCK_H, OUT_BLOCK_W = {obh}, {obw}      # output block (tiles)
IN0_BLOCK_W = {ibw}                      # K tiles per step
IN0_BUFFER_DEPTH, IN1_BUFFER_DEPTH = {da}, {db}   # blocks per input dataflow buffer
CORES_ALONG_K = {cores_k}                # > 1: split-K, partial sums gathered to the first core
PARTIAL_BLOCKS = {partial_blocks}               # partial-sum blocks the first core along K buffers (split-K)

# the problem, and the padded extents every core's whole blocks cover (elements)
{m}, {n}, {k} = {m_el}, {n_el}, {k_el}
{m}_PAD, {n}_PAD, {k}_PAD = {m_pad}, {n_pad}, {k_pad}


@ttl.operation(grid=(GRID_X, GRID_Y))
def {kernel}_kernel({a}, {b}, {out}):
    {a}_dfb = ttl.make_dataflow_buffer_like({a}, shape=(OUT_BLOCK_H, IN0_BLOCK_W), block_count=IN0_BUFFER_DEPTH)
    {b}_dfb = ttl.make_dataflow_buffer_like({b}, shape=(IN0_BLOCK_W, OUT_BLOCK_W), block_count=IN1_BUFFER_DEPTH)
    acc_dfb = ttl.make_dataflow_buffer_like({out}, shape=(OUT_BLOCK_H, OUT_BLOCK_W), block_count=2)
    {out}_dfb = ttl.make_dataflow_buffer_like({out}, shape=(OUT_BLOCK_H, OUT_BLOCK_W), block_count=1){partial_dfb}
    {nets}

    @ttl.datamovement()
    def read_{a}():  # {a} and its multicast (NoC0 in the model)
{read_a}
    @ttl.compute()
    def compute():
{compute}
    @ttl.datamovement()
    def read_{b}_write_{out}():  # {b}, its multicast, the output and partial sums (NoC1 in the model)
{read_b}


KERNEL = {kernel}_kernel


{host_helpers}def kernel_arguments():
    """The host tensors KERNEL takes, in order: {a} and {b} (seeded random values in the problem's part,
    zeros in the padding) and {out} (zeros)."""
    torch.manual_seed(0)
    {a}_host = normal({m}_PAD, {k}_PAD, {m}, {k})
    {b}_host = normal({k}_PAD, {n}_PAD, {k}, {n})
    return [{a}_host, {b}_host, torch.zeros(({m}_PAD, {n}_PAD), dtype=torch.bfloat16)]


def main():
    {a}_host, {b}_host, {out}_host = kernel_arguments()
    device = ttnn.open_device(device_id=0)
    try:
        arguments = [to_device(t, device) for t in ({a}_host, {b}_host, {out}_host)]
        KERNEL(*arguments)
        result = ttnn.to_torch(arguments[2]).float()[:{m}, :{n}]
    finally:
        ttnn.close_device(device)
    expected = ({a}_host.float() @ {b}_host.float())[:{m}, :{n}]
    pcc = torch.corrcoef(torch.stack([result.flatten(), expected.flatten()]))[0, 1].item()
    print("LOOM_RESULT " + json.dumps({{"pcc": pcc}}))
    assert pcc >= 0.999, f"PCC {{pcc:.6f}} < 0.999"


{footer}'''
