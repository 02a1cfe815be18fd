"""Latency helpers every kernel family's model shares, in cycles, on the slowest core.

Per input ``X`` and streaming step (one block of ``t_X`` tiles, ``B_X = t_X * bytes_per_tile``):

    read_X  = ceil(B_X / r_core) + L_read(depth_X)     if X is read from DRAM (by this core or its sender)
    mcast_X = ceil(B_X / w_mcast) + h*(n_axis - 1) + o_mc   if X is multicast (n_axis cores on its axis;
                                                            (grid_x-1)+(grid_y-1) hops for a 2-D multicast)
    dm_X    = read_X + mcast_X        (one block: the sender reads, then multicasts; receivers wait)
    s_X     = max(read_X, mcast_X)    (streaming: a sender with two or more buffered blocks reads the next
                                       block while the current one is multicast, as TTNN's in1 sender does)

with ``L_read(1) = L_read(2) = L`` and ``L_read(3) = ceil(L/2)`` (two reads in flight hide half of it).
An L1-interleaved input is read the same way from the worker cores' L1 banks, at the NoC's unicast rate
and page latency instead of DRAM's (``model/l1_banks.py``: ``r_core = unicast_bytes_per_cycle``,
``L = L_l1``), and an L1-interleaved output is written to them likewise; neither counts towards ``chip``,
but their bytes load the NoC: ``banks = ceil(sum_X readers_X * B_X * s / W_link)`` joins the step's max
beside ``chip``, and a write-back of every core's block at once takes at least ``ceil(cores * B * s /
W_link)`` (``model/l1_banks.py``).
All DRAM readers share the chip: ``chip = ceil(sum_X readers_X * B_X / R_chip)`` per step, where
``readers_X`` is the number of cores reading ``X`` (all cores, one per row/column, or one). A tile-matmul
block (``matmul_cycles``), an element-wise op on a tile (``eltwise_op_cycles``), an overlapped step
(``overlapped_step``, ``one_reader_step``) and DRAM writes (``dram_write_cycles``) are costed here; each
family's latency terms combine them (the contraction's: ``families/contraction/latency.py``).
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
    maximum,
    mul,
    select,
    total,
)
from loom_explorer.model.l1_banks import (
    bank_readers,
    bank_traffic_cycles,
    in_l1_banks,
    page_latency_cycles,
    reads_l1_banks,
    transfer_cycles,
)
from loom_explorer.model.quantities import GridQuantities

if TYPE_CHECKING:
    from loom_explorer.model.noc_bound import LinkShare
from loom_explorer.hardware.schema import Fidelity, HardwareSpec
from loom_explorer.problem import Problem, ProblemError
from loom_explorer.program.dsl import Eltwise


def _read_latency(q: GridQuantities, tensor: str, lat: int) -> Expr:
    return select(q.depth[tensor], {1: lat, 2: lat, 3: -(-lat // 2)})


def block_bytes(q: GridQuantities, tensor: str) -> Expr:
    return mul(q.block_tiles(tensor), q.tile_bytes(tensor))


def read_cycles(q: GridQuantities, tensor: str) -> Expr:
    """``read_X``: one block's transfer and its latency (module docstring)."""
    return read_transfer_cycles(q, tensor) + read_latency_cycles(q, tensor)


def read_transfer_cycles(q: GridQuantities, tensor: str) -> Expr:
    """``ceil(B_X / r_core)``: one block of ``tensor`` through one core's read port (0 when the core does not
    read it from DRAM or the L1 banks)."""
    if reads_l1_banks(q, tensor):
        return transfer_cycles(q, block_bytes(q, tensor))
    if not reads_dram(q, tensor):
        return const(0)
    return ceil_rate(block_bytes(q, tensor), q.hw.dram.core_read_bytes_per_cycle)


def read_latency_cycles(q: GridQuantities, tensor: str) -> Expr:
    """``L_read(depth_X)``: the latency a block read of ``tensor`` waits for (0 when the core does not read it
    from DRAM or the L1 banks)."""
    if reads_l1_banks(q, tensor):
        return _read_latency(q, tensor, page_latency_cycles(q.hw))
    if not reads_dram(q, tensor):
        return const(0)
    return _read_latency(q, tensor, q.hw.dram.read_latency_cycles)


def multicast_cycles(q: GridQuantities, tensor: str) -> Expr:
    noc = q.hw.noc
    if q.candidate.comm(tensor).axis is None:
        return const(0)
    return (
        ceil_rate(block_bytes(q, tensor), noc.multicast_bytes_per_cycle)
        + mul(noc.hop_latency_cycles, q.mcast_hops(tensor))
        + noc.multicast_handshake_cycles
    )


def data_movement_cycles(q: GridQuantities, tensor: str) -> Expr:
    return read_cycles(q, tensor) + multicast_cycles(q, tensor)


def matmul_cycles(
    q: GridQuantities,
    rows: Expr,
    cols: Expr,
    inner: Expr,
    sub_h: Expr,
    sub_w: Expr,
    a_tile_bytes: int,
    b_tile_bytes: int,
    fidelity: Fidelity | None = None,
) -> Expr:
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
        unpack = ceil_rate(
            mul(sub_cols, rows, a_tile_bytes) + mul(sub_rows, cols, b_tile_bytes), c.unpack_bytes_per_cycle
        )
        tile_math = maximum(tile_math, unpack)
    return (
        mul(inner, tile_math)
        + mul(rows, cols, c.tile_pack_cycles)
        + mul(sub_rows, sub_cols, c.subblock_overhead_cycles)
    )


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


def one_reader_step(
    q: GridQuantities, busy: Expr, tensors: Sequence[str], write_block: Expr, links: Sequence[Expr] = ()
) -> tuple[Expr, Expr]:
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
    (no read term for an input the core does not read from DRAM or the L1 banks)."""
    dram = q.hw.dram
    return total(
        (
            ceil_rate(block_bytes(q, t), dram.core_read_bytes_per_cycle) + dram.read_latency_cycles
            if reads_dram(q, t)
            else transfer_cycles(q, block_bytes(q, t)) + page_latency_cycles(q.hw)
            if reads_l1_banks(q, t)
            else 0
        )
        + multicast_cycles(q, t)
        for t in tensors
    )


def streamed_dram_read_bytes(q: GridQuantities, steps: Expr, per_step: Sequence[str]) -> Expr:
    """Bytes read from DRAM by all cores: the inputs in ``per_step`` once per step, the others once."""
    return total(mul(dram_readers(q, t), steps if t in per_step else 1, block_bytes(q, t)) for t in q.streamed)


def single_buffered(q: GridQuantities, tensor: str) -> Expr:
    """1 when ``tensor``'s circular buffer holds one block (its transfer cannot overlap compute), else 0."""
    return select(q.depth[tensor], {v: int(v == 1) for v in q.depth[tensor].values})


def chip_read_cycles(q: GridQuantities, tensors: Sequence[str]) -> Expr:
    """``ceil(sum_X readers_X * B_X / R_chip)``: one step's DRAM reads of ``tensors`` by every reader at once;
    with L1-interleaved inputs among them, also their load on the NoC (``banks``, module docstring)."""
    chip_bytes = total(mul(dram_readers(q, t), block_bytes(q, t)) for t in tensors)
    chip = ceil_rate(chip_bytes, q.hw.dram.chip_read_bytes_per_cycle)
    in_banks = [t for t in tensors if reads_l1_banks(q, t)]
    if not in_banks:
        return chip
    return maximum(chip, bank_traffic_cycles(q, total(mul(bank_readers(q, t), block_bytes(q, t)) for t in in_banks)))


def op_tile_cycles(q: GridQuantities, op: Eltwise) -> int:
    """Cycles of ``op`` on one tile for ``q``'s problem (``eltwise_op_cycles``)."""
    return eltwise_op_cycles(q.hw, q.problem, op)


def eltwise_op_cycles(hw: HardwareSpec, problem: Problem, op: Eltwise) -> int:
    """Cycles of ``op`` on one tile: the FPU's eltwise cost, or the SFPU cost of the op (the problem's
    activation for the op ``activation``; an activation that chains SFPU ops one after another on the same
    tile, ``neg+exp+recip``, costs the sum of theirs); 0 when the op is off (its optional operand is off, no
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
    unknown = [part for part in name.split("+") if part not in c.sfpu_tile_cycles]
    if unknown:
        raise ProblemError(
            f"hardware {hw.name} has no SFPU cost for op {unknown[0]!r} "
            f"(compute.sfpu_tile_cycles has {', '.join(sorted(c.sfpu_tile_cycles))})"
        )
    return sum(c.sfpu_tile_cycles[part] for part in name.split("+"))


def dram_write_cycles(q: GridQuantities, tensor: str, tiles: Expr, links: Sequence[LinkShare] = ()) -> Expr:
    """Every core writing ``tiles`` of ``tensor`` to DRAM at once: ``max(ceil(B/w_core), link_f...) +
    L_write``, ``link_f`` the busiest links of ``tensor``'s write flow (``model/noc_bound.py``); to the L1
    banks for an L1-interleaved ``tensor``: ``ceil(B/w_unicast) + L_l1`` (``model/l1_banks.py``)."""
    if in_l1_banks(q, tensor):
        return write_transfer_cycles(q, tensor, tiles) + page_latency_cycles(q.hw)
    return write_transfer_cycles(q, tensor, tiles, links) + q.hw.dram.write_latency_cycles


def write_latency_cycles(q: GridQuantities, tensor: str) -> int:
    """The latency of ``tensor``'s last write: ``L_write`` to DRAM, ``L_l1`` to the L1 banks."""
    return page_latency_cycles(q.hw) if in_l1_banks(q, tensor) else q.hw.dram.write_latency_cycles


def once_read_cycles(q: GridQuantities, tensor: str, nbytes: Expr) -> Expr:
    """One read of ``nbytes`` of ``tensor`` with its latency: ``ceil(B / r_core) + L`` from DRAM, from the L1
    banks for an L1-interleaved ``tensor`` (``model/l1_banks.py``)."""
    if in_l1_banks(q, tensor):
        return transfer_cycles(q, nbytes) + page_latency_cycles(q.hw)
    return ceil_rate(nbytes, q.hw.dram.core_read_bytes_per_cycle) + q.hw.dram.read_latency_cycles


def write_transfer_cycles(q: GridQuantities, tensor: str, tiles: Expr, links: Sequence[LinkShare] = ()) -> Expr:
    """``max(ceil(B/w_core), link_f...)``: ``dram_write_cycles`` without the write latency (writes that stream
        one after another pay it once); ``max(ceil(B/w_unicast), banks)`` for an L1-interleaved ``tensor``, every
    core writing at once (``model/l1_banks.py``)."""
    nbytes = mul(tiles, q.tile_bytes(tensor))
    if in_l1_banks(q, tensor):
        return maximum(transfer_cycles(q, nbytes), bank_traffic_cycles(q, mul(q.cores, nbytes)))
    return maximum(
        ceil_rate(nbytes, q.hw.dram.core_write_bytes_per_cycle),
        *(link.cycles(q, nbytes) for link in links if link.tensor == tensor),
    )
