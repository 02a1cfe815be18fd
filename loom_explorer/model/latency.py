"""Latency of a contraction candidate on its slowest core, in cycles, as named terms.

Per input ``X`` and K step (one block of ``t_X`` tiles, ``B_X = t_X * bytes_per_tile``):

    read_X  = ceil(B_X / r_core) + L_read(depth_X)     if X is read from DRAM (by this core or its sender)
    mcast_X = ceil(B_X / w_mcast) + h*(n_axis - 1) + o_mc   if X is multicast (n_axis cores on its axis;
                                                            (grid_x-1)+(grid_y-1) hops for a 2-D multicast)
    dm_X    = read_X + mcast_X        (one block: the sender reads, then multicasts; receivers wait)
    s_X     = max(read_X, mcast_X)    (streaming: a sender with two or more buffered blocks reads the next
                                       block while the current one is multicast, as TTNN's in1 sender does)

with ``L_read(1) = L_read(2) = L`` and ``L_read(3) = ceil(L/2)`` (two reads in flight hide half of it).
All DRAM readers share the chip: ``chip = ceil(sum_X readers_X * B_X / R_chip)`` per step, where
``readers_X`` is the number of cores reading ``X`` (all cores, one per row/column, or one).

Compute of one K step of an output block (packer L1 accumulation, one pack per tile per step):

    mm = out_block_h*out_block_w*(in0_block_w*c_f + c_pack) + (out_block_h/sh)*(out_block_w/sw)*o_sub

Overlap: a double/triple-buffered input hides behind the step, a single-buffered one adds to it, and each
block a core or its sender reads from DRAM stalls the step by ``stall_X = ceil(B_X / r_stall)``
(``dram.step_read_bytes_per_cycle``; no stall when the hardware file leaves it out):

    step = max(mm + sum_X stall_X + sum_{X: depth_X = 1} dm_X,  s_in0,  s_in1,  chip)

Whole kernel (n_out output blocks per core, n_k K steps per block):

    T = launch + fill + n_out*(n_k*step + epilogue + write_back) + gather + reduce + final_write

    fill        = max_X dm_X (+ the bias read), the first blocks before any compute
    epilogue    = out_block_h*out_block_w*(c_eltwise [bias] + c_sfpu(act) [activation])
    write_back  = max(ceil(B_out / w_core), link_out) + L_write     (out in DRAM, no split-K;
                  B_out = out_block_h*out_block_w*bytes_out, link_out = ceil(a_out*B_out/(C*W_link)): every
                  core writes its block at once, and the busiest link of the write flow carries a_out/C
                  of a block, ``model/noc_bound.py: write_link_shares``)
    gather      = ceil((s-1)*P / w_unicast) + h*(s-1) + L_tx     (split-K over s cores, P partial bytes)
    reduce      = (s-1)*per_core tiles*c_eltwise
    final_write = max(ceil(per_core tiles*bytes_out / w_core), link_out) + L_write   (split-K, out in DRAM)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from loom_explorer.model.dram_reads import dram_readers, reads_dram
from loom_explorer.model.expr import (
    Const,
    Expr,
    ceil_div,
    ceil_rate,
    const,
    floor_div,
    maximum,
    mul,
    select,
    total,
)
from loom_explorer.model.quantities import GridQuantities, Quantities
from loom_explorer.model.schedule import LatencyTerm

if TYPE_CHECKING:
    from loom_explorer.model.noc_bound import LinkShare
from loom_explorer.hardware.schema import Fidelity, HardwareSpec
from loom_explorer.problem import Problem, ProblemError
from loom_explorer.program.dsl import Eltwise


def _read_latency(q: GridQuantities, tensor: str) -> Expr:
    lat = q.hw.dram.read_latency_cycles
    return select(q.depth[tensor], {1: lat, 2: lat, 3: -(-lat // 2)})


def block_bytes(q: GridQuantities, tensor: str) -> Expr:
    return mul(q.block_tiles(tensor), q.tile_bytes(tensor))


def read_cycles(q: GridQuantities, tensor: str) -> Expr:
    if not reads_dram(q, tensor):
        return const(0)
    return ceil_rate(block_bytes(q, tensor), q.hw.dram.core_read_bytes_per_cycle) + _read_latency(q, tensor)


def multicast_cycles(q: GridQuantities, tensor: str) -> Expr:
    noc = q.hw.noc
    if q.candidate.comm(tensor).axis is None:
        return const(0)
    return (ceil_rate(block_bytes(q, tensor), noc.multicast_bytes_per_cycle)
            + mul(noc.hop_latency_cycles, q.mcast_hops(tensor)) + noc.multicast_handshake_cycles)


def data_movement_cycles(q: GridQuantities, tensor: str) -> Expr:
    return read_cycles(q, tensor) + multicast_cycles(q, tensor)


def matmul_cycles(q: GridQuantities, rows: Expr, cols: Expr, inner: Expr, sub_h: Expr, sub_w: Expr,
                  a_tile_bytes: int, b_tile_bytes: int, fidelity: Fidelity | None = None) -> Expr:
    """A ``rows x cols`` output block over ``inner`` tiles, accumulated in ``sub_h x sub_w`` Dst sub-blocks:

        inner*max(rows*cols*c_f, unpack) + rows*cols*c_pack + ceil(rows/sub_h)*ceil(cols/sub_w)*o_sub
        unpack = ceil((ceil(cols/sub_w)*rows*B_a + ceil(rows/sub_h)*cols*B_b) / U)

    Per inner tile each sub-block unpacks its ``sub_h`` tiles of the left operand (``B_a`` bytes each) and
    ``sub_w`` of the right one (``B_b``) into the source registers while the matrix unit works on the
    previous ones, so the slower of the two sets the pace. ``U = compute.unpack_bytes_per_cycle``; without
    it the unpackers are never the bottleneck (``unpack = 0``). ``fidelity``: the problem's unless a kernel fixes
    its own (ttnn's ACCURATE SDPA recipe runs HiFi4)."""
    c = q.hw.compute
    tile_math = mul(rows, cols, c.matmul_tile_cycles[fidelity or q.problem.fidelity])
    sub_rows, sub_cols = ceil_div(rows, sub_h), ceil_div(cols, sub_w)
    if c.unpack_bytes_per_cycle is not None:
        unpack = ceil_rate(mul(sub_cols, rows, a_tile_bytes) + mul(sub_rows, cols, b_tile_bytes),
                           c.unpack_bytes_per_cycle)
        tile_math = maximum(tile_math, unpack)
    return mul(inner, tile_math) + mul(rows, cols, c.tile_pack_cycles) + \
        mul(sub_rows, sub_cols, c.subblock_overhead_cycles)


def compute_step_cycles(q: Quantities) -> Expr:
    in0, in1 = q.inputs
    return matmul_cycles(q, q.out_block_h, q.out_block_w, q.in0_block_w, q.out_subblock_h, q.out_subblock_w,
                         q.tile_bytes(in0), q.tile_bytes(in1))


def _is_zero(e: Expr) -> bool:
    return isinstance(e, Const) and e.value == 0


def overlapped_step(q: GridQuantities, compute: Expr, tensors: tuple[str, ...], links: Sequence[Expr] = ()) -> Expr:
    """One streaming step: ``max(compute + sum of single-buffered dm_X, s_X..., chip, link_f...)`` over
    ``tensors`` (``s_X = max(read_X, mcast_X)``, module docstring); ``links`` are the step's NoC link times
    (``model/noc_bound.py``)."""
    dm = {t: data_movement_cycles(q, t) for t in tensors}
    exposed = total(mul(single_buffered(q, t), dm[t]) for t in tensors if not _is_zero(dm[t]))
    streaming = [maximum(read_cycles(q, t), multicast_cycles(q, t)) for t in tensors]
    return maximum(compute + exposed, *streaming, chip_read_cycles(q, tensors), *links)


def one_reader_step(q: GridQuantities, busy: Expr, tensors: Sequence[str], write_block: Expr,
                    links: Sequence[Expr] = ()) -> tuple[Expr, Expr]:
    """(one step, its reads) of a kernel whose one reader thread reads ``tensors`` one after the other every
    step (the element-wise and row-reduction families), while the compute is ``busy``:

        reads = sum_X (read_X + mcast_X)
        step  = max(busy + sum_{X: depth_X = 1} (read_X + mcast_X), reads, write_block, chip, link_f...)"""
    dm = {t: read_cycles(q, t) + multicast_cycles(q, t) for t in tensors}
    reads = total(dm.values())
    exposed = total(mul(single_buffered(q, t), dm[t]) for t in tensors)
    return maximum(busy + exposed, reads, write_block, chip_read_cycles(q, tensors), *links), reads


def read_once_cycles(q: GridQuantities, tensors: Sequence[str]) -> Expr:
    """``sum_X (ceil(B_X / r_core) + L_read + mcast_X)``: inputs each core reads once, before its first step
    (no DRAM term for an input the core does not read from DRAM)."""
    dram = q.hw.dram
    return total((ceil_rate(block_bytes(q, t), dram.core_read_bytes_per_cycle) + dram.read_latency_cycles
                  if reads_dram(q, t) else 0) + multicast_cycles(q, t) for t in tensors)


def streamed_dram_read_bytes(q: GridQuantities, steps: Expr, per_step: Sequence[str]) -> Expr:
    """Bytes read from DRAM by all cores: the inputs in ``per_step`` once per step, the others once."""
    return total(mul(dram_readers(q, t), steps if t in per_step else 1, block_bytes(q, t)) for t in q.streamed)


def single_buffered(q: GridQuantities, tensor: str) -> Expr:
    """1 when ``tensor``'s circular buffer holds one block (its transfer cannot overlap compute), else 0."""
    return select(q.depth[tensor], {v: int(v == 1) for v in q.depth[tensor].values})


def chip_read_cycles(q: GridQuantities, tensors: Sequence[str]) -> Expr:
    """``ceil(sum_X readers_X * B_X / R_chip)``: one step's DRAM reads of ``tensors`` by every reader at once."""
    chip_bytes = total(mul(dram_readers(q, t), block_bytes(q, t)) for t in tensors)
    return ceil_rate(chip_bytes, q.hw.dram.chip_read_bytes_per_cycle)


def read_stall_cycles(q: GridQuantities, tensor: str) -> Expr:
    """``ceil(B_X / r_stall)``: how long one K step's DRAM read of ``tensor``'s block delays the step, for a
    block the core or its sender reads from DRAM (0 otherwise, and when the hardware file gives no
    ``dram.step_read_bytes_per_cycle``).

    TTNN's matmul senders read a block tile by tile, wait for every read (``noc_async_read_barrier``), then
    wait for every receiver's semaphore before the multicast; on the published Wormhole rows the K steps of
    schedules that stream in0 from DRAM run slower than their compute by an amount proportional to the
    block bytes read, which ``max`` overlap does not produce. ``r_stall`` is an estimate that
    ``calibrate`` fits (docs/model.md, section 5)."""
    rate = q.hw.dram.step_read_bytes_per_cycle
    if rate is None or not reads_dram(q, tensor):
        return const(0)
    return ceil_rate(block_bytes(q, tensor), rate)


def step_cycles(q: Quantities, links: Sequence[LinkShare] = ()) -> Expr:
    stall = total(read_stall_cycles(q, t) for t in q.inputs)
    return overlapped_step(q, compute_step_cycles(q) + stall, q.inputs,
                           [link.cycles(q, block_bytes(q, link.tensor)) for link in links])


def op_tile_cycles(q: GridQuantities, op: Eltwise) -> int:
    """Cycles of ``op`` on one tile for ``q``'s problem (``eltwise_op_cycles``)."""
    return eltwise_op_cycles(q.hw, q.problem, op)


def eltwise_op_cycles(hw: HardwareSpec, problem: Problem, op: Eltwise) -> int:
    """Cycles of ``op`` on one tile: the FPU's eltwise cost, or the SFPU cost of the op (the problem's
    activation for the op ``activation``); 0 when the op is off (its optional operand is off, no
    activation was asked for, or it runs on the causal diagonal and the problem is not causal)."""
    c = hw.compute
    if op.operand is not None and not problem.is_enabled(op.operand):
        return 0
    if op.when == "diagonal" and not problem.has_option("causal"):
        return 0
    if op.unit == "fpu":
        return c.eltwise_tile_cycles
    name = problem.activation if op.op == "activation" else op.op
    if name is None:
        return 0
    if name not in c.sfpu_tile_cycles:
        raise ProblemError(f"hardware {hw.name} has no SFPU cost for op {name!r} "
                           f"(compute.sfpu_tile_cycles has {', '.join(sorted(c.sfpu_tile_cycles))})")
    return c.sfpu_tile_cycles[name]


def epilogue_cycles(q: Quantities) -> Expr:
    per_tile = sum(op_tile_cycles(q, op) for op in q.con.epilogue)
    return mul(q.out_block_h, q.out_block_w, per_tile)


def writes_dram(q: Quantities) -> bool:
    return not q.problem.placement(q.con.matmul.out).in_l1


def write_cycles(q: Quantities, tiles: Expr, links: Sequence[LinkShare] = ()) -> Expr:
    if not writes_dram(q):
        return const(0)
    return dram_write_cycles(q, q.con.matmul.out, tiles, links)


def dram_write_cycles(q: GridQuantities, tensor: str, tiles: Expr, links: Sequence[LinkShare] = ()) -> Expr:
    """Every core writing ``tiles`` of ``tensor`` to DRAM at once: ``max(ceil(B/w_core), link_f...) +
    L_write``, ``link_f`` the busiest links of ``tensor``'s write flow (``model/noc_bound.py``)."""
    return write_transfer_cycles(q, tensor, tiles, links) + q.hw.dram.write_latency_cycles


def write_transfer_cycles(q: GridQuantities, tensor: str, tiles: Expr, links: Sequence[LinkShare] = ()) -> Expr:
    """``max(ceil(B/w_core), link_f...)``: ``dram_write_cycles`` without the write latency (writes that stream
    one after another pay it once)."""
    nbytes = mul(tiles, q.tile_bytes(tensor))
    return maximum(ceil_rate(nbytes, q.hw.dram.core_write_bytes_per_cycle),
                   *(link.cycles(q, nbytes) for link in links if link.tensor == tensor))


def fill_cycles(q: Quantities) -> Expr:
    first = maximum(*(data_movement_cycles(q, t) for t in q.inputs))
    extra = total(ceil_rate(mul(q.share_tiles(t), q.tile_bytes(t)), q.hw.dram.core_read_bytes_per_cycle)
                  + q.hw.dram.read_latency_cycles for t in q.auxiliary_inputs)
    return first + extra


def latency_terms(q: Quantities, step_links: Sequence[LinkShare] = (),
                  write_links: Sequence[LinkShare] = ()) -> tuple[Expr, list[LatencyTerm], Expr]:
    """The objective (compact form for the solver), its breakdown (terms that sum to it) and a lower bound.

    The lower bound replaces the K-step loop ``n_out*n_k*step`` by its compute floor
    ``per_core_B*per_core_M*per_core_N*(per_core_K*c_f + c_pack)`` (valid because ``step >= mm`` and
    ``n_k >= 1``). It is redundant, but it tells the solver early what a grid/per-core choice costs at
    least, which is what makes proving optimality fast.
    """
    c = q.hw.compute
    n_out = q.out_blocks
    n_k = q.k_blocks
    step = step_cycles(q, step_links)
    mm = compute_step_cycles(q)
    epi = epilogue_cycles(q)
    gather_axis = q.candidate.gather_axis
    split = gather_axis is not None
    wb_block = const(0) if split else write_cycles(q, mul(q.out_block_h, q.out_block_w), write_links)
    fill = fill_cycles(q)
    tail: list[tuple[str, Expr, str]] = []
    if gather_axis is not None:
        s = q.axis_cores(gather_axis)
        partial_tiles = mul(q.pb, q.pm, q.pn)
        noc = q.hw.noc
        gather = (ceil_rate(mul(s - 1, partial_tiles, q.acc_tile_bytes), noc.unicast_bytes_per_cycle)
                  + mul(noc.hop_latency_cycles, s - 1) + noc.transaction_latency_cycles)
        tail = [
            ("gather", gather, "split-K partial sums sent L1-to-L1 to the reducing core"),
            ("reduce", mul(s - 1, partial_tiles, c.eltwise_tile_cycles), "adding the partial sums"),
            ("write_back", write_cycles(q, partial_tiles, write_links), "reduced output written to DRAM"),
        ]
    objective = total([
        c.kernel_launch_cycles, fill, mul(n_out, mul(n_k, step) + epi + wb_block), *(e for _, e, _ in tail)
    ])
    terms = [
        LatencyTerm("launch", const(c.kernel_launch_cycles), "fixed per-op launch on the device"),
        LatencyTerm("fill", fill, "first blocks loaded before any compute"),
        LatencyTerm("compute", mul(n_out, n_k, mm), "tile matmuls, packing and sub-block overhead"),
        LatencyTerm("data_movement", mul(n_out, n_k, step - mm),
                    "K steps where reads/multicasts (or shared DRAM bandwidth) outlast compute"),
        LatencyTerm("epilogue", mul(n_out, epi), "bias and activation per output tile"),
    ]
    if split:
        terms += [LatencyTerm(n, e, d) for n, e, d in tail]
    else:
        terms.append(LatencyTerm("write_back", mul(n_out, wb_block), "output blocks written to DRAM"))
    # everything but the K-step loop, common to both bounds
    common = total([c.kernel_launch_cycles, fill, mul(n_out, epi + wb_block), *(e for _, e, _ in tail)])
    floor = mul(q.pb, q.pm, q.pn,
                mul(q.pk, c.matmul_tile_cycles[q.problem.fidelity]) + c.tile_pack_cycles)
    lower_bound = common + floor
    # second redundant bound: the chip's DRAM bandwidth over the whole K loop. With the divisibility
    # constraints, n_out*n_k*out_block_h*in0_block_w = pb*pm*pk*(pn/out_block_w) (and likewise for in1),
    # and n*ceil(x/R) >= ceil(n*x/R).
    chip = total(mul(dram_readers(q, t), loop_tiles(q, t), q.tile_bytes(t)) for t in q.inputs)
    if not isinstance(chip, Const):
        lower_bound = maximum(lower_bound, common + ceil_rate(chip, q.hw.dram.chip_read_bytes_per_cycle))
    # third: each NoC link over the whole K loop (n*ceil(x/W) >= ceil(n*x/W) again)
    for link in step_links:
        lower_bound = maximum(lower_bound, common + link.cycles(q, mul(loop_tiles(q, link.tensor),
                                                                         q.tile_bytes(link.tensor))))
    # fourth: the compute floor plus every output block's write-back taken as one write of the whole per-core
    # output (n*max(ceil(x/w), link(x)) + n*L >= max(ceil(n*x/w), link(n*x)) + L), which depends on the
    # grid and per-core sizes only
    if not split and writes_dram(q):
        rest = total([c.kernel_launch_cycles, fill, mul(n_out, epi)])
        lower_bound = maximum(lower_bound, rest + floor + write_cycles(q, mul(q.pb, q.pm, q.pn), write_links))
    return objective, terms, lower_bound


def loop_tiles(q: Quantities, tensor: str) -> Expr:
    """Tiles of ``tensor`` one core streams over the whole K loop, ``n_out*n_k*block_tiles``, written as
    ``pb*pm*pk*(pn/out_block_w)`` for in0 (``pb*pn*pk*(pm/out_block_h)`` for in1): equal under the
    divisibility constraints, and cheaper for the solver (no product with the step counts)."""
    if tensor == q.inputs[0]:
        return mul(q.pb, q.pm, q.pk, floor_div(q.pn, q.out_block_w))
    return mul(q.pb, q.pn, q.pk, floor_div(q.pm, q.out_block_h))


def dram_read_bytes(q: Quantities) -> Expr:
    """Bytes one K step reads from DRAM over the whole chip, times the steps of the slowest core."""
    per_step = total(mul(dram_readers(q, t), block_bytes(q, t)) for t in q.inputs)
    return mul(q.out_blocks, q.k_blocks, per_step)

