"""The row-reduction family's latency (softmax, RMSNorm, LayerNorm; ``quantities.py`` for the notation):
the objective of one candidate, its named terms and a lower bound.

Per block, on the slowest core (``b_X`` bytes per tile; ``c_op`` an op's cycles per tile from the hardware
file, ``compute.eltwise_tile_cycles`` for an FPU op and for a reduction's tile, ``compute.sfpu_tile_cycles``
for an SFPU op; ``c_pack = compute.tile_pack_cycles``):

    compute = sum_ops tiles(op) * c_op + sum_runs tiles(T) * c_pack     a run: consecutive ops on one tensor
              (tiles(op): B for an op on a rows tensor or a reduction, block_h for an op on a column vector)

With the columns split over ``g > 1`` cores, each reduction also gathers the ``g - 1`` other cores'
partial column vectors to the first core along the axis, combines them there and multicasts the result
back (TTNN's sharded LayerNorm):

    round   = ceil((g-1)*block_h*b_acc / w_unicast) + h*(g-1) + L_tx        gather
            + (g-1)*block_h*c_fpu + block_h*c_pack                          combine
            + ceil(block_h*b / w_mcast) + h*(g-1) + L_handshake             multicast back
    rounds  = (number of reductions) * round

TTNN's group norm gathers one core at a time, a round trip each (``ttnn_reads.py``): its gather is
``(g-1)*L_tx + h*(g-1)``.

    read_X  = ceil(B_X*b_X / r_core) + L_read(depth_X) + mcast_X      each input read every block
    reads   = sum_X read_X;   writes = sum_Y max(ceil(B*b_Y / w_core), link_Y)
    chip    = ceil(sum_X readers_X * B_X*b_X / R_chip)
    step    = max(compute + rounds + sum_{X: depth_X = 1} read_X, reads, writes, chip, link_X...)

    T_total = launch + max(fill + n*step + drain, shared)
    shared  = ceil((all cores' DRAM reads + writes of the whole kernel) / R_chip)
    fill    = sum_{X read every block} (ceil(b_X / r_core) + L_read)
            + sum_{X read once} (ceil(tiles_X*b_X / r_core) + L_read [+ its multicast])
    drain   = sum_Y ceil(b_Y / w_core) + L_write

An L1-interleaved tensor's reads and writes take the L1 banks' rate and page latency instead of DRAM's
(``r_core``/``w_core`` -> ``noc.unicast_bytes_per_cycle``, ``L_read``/``L_write`` -> ``L_l1``:
``model/l1_banks.py``).

Within a block the passes stream: the reader pushes the block's tiles while the first pass consumes them
and the writer drains the last pass's tiles as they come (TTNN's norm and softmax kernels push and pop a
few tiles at a time), so a block costs the longest of its reads, passes and writes, and only the first
tile read and the last tile written are outside the blocks.

The per-block ``chip`` term shares the DRAM among the inputs read every block; ``shared`` also counts what
each core reads once (every core reads its own ``gamma``, as TTNN's interleaved norm readers do) and what
the cores write, as DRAM reads and writes draw on the same channels. It binds when many cores stream a
short row each (DeepSeek's RMS norms on 100 cores).

Named terms: ``launch``, ``fill``, ``compute = n*compute``, ``gather = n*rounds`` (split columns only),
``data_movement = n*(step - compute - rounds) + max(0, shared - (fill + n*step + drain))``,
``write_back = drain``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from loom_explorer.families.row_reduction.quantities import RowReductionQuantities
from loom_explorer.families.row_reduction.traffic import row_reduction_dram_read_bytes
from loom_explorer.families.row_reduction.ttnn_reads import serial_gather, tile_round_trip_reader
from loom_explorer.families.row_reduction.ttnn_softmax import mask_fill_cycles
from loom_explorer.families.row_reduction.work import passes
from loom_explorer.model.dram_reads import reads_dram
from loom_explorer.model.expr import Expr, ceil_rate, const, maximum, mul, total
from loom_explorer.model.l1_banks import reads_l1_banks
from loom_explorer.model.latency import (
    block_bytes,
    chip_read_cycles,
    multicast_cycles,
    once_read_cycles,
    one_reader_step,
    read_cycles,
    read_once_cycles,
    single_buffered,
    write_latency_cycles,
    write_transfer_cycles,
)
from loom_explorer.model.schedule import LatencyTerm
from loom_explorer.problem import Placement

if TYPE_CHECKING:
    from loom_explorer.model.noc_bound import LinkShare


def gather_round_cycles(q: RowReductionQuantities) -> Expr:
    """One reduction's gather, combine and multicast back (module docstring); 0 without split columns."""
    if q.candidate.gather_axis is None:
        return const(0)
    g, noc, c = q.split_cores, q.hw.noc, q.hw.compute
    gather = (
        mul(g - 1, noc.transaction_latency_cycles) + mul(noc.hop_latency_cycles, g - 1)
        if serial_gather(q)
        else ceil_rate(mul(g - 1, q.block_h, q.acc_tile_bytes), noc.unicast_bytes_per_cycle)
        + mul(noc.hop_latency_cycles, g - 1)
        + noc.transaction_latency_cycles
    )
    combine = mul(g - 1, q.block_h, c.eltwise_tile_cycles) + mul(q.block_h, c.tile_pack_cycles)
    back = (
        ceil_rate(mul(q.block_h, q.tile_bytes(q.st.reductions[0].out)), noc.multicast_bytes_per_cycle)
        + mul(noc.hop_latency_cycles, g - 1)
        + noc.multicast_handshake_cycles
    )
    return gather + combine + back


def reader_step(q: RowReductionQuantities, busy: Expr, write_block: Expr, links: Sequence[Expr]) -> Expr:
    """One block: ``one_reader_step`` for the model's streaming reader; with TTNN's tile-by-tile re-reading
    reader (``ttnn_reads.py``), its inputs' reads are ``p * B`` round trips and the output's read back ``B``
    more, all on the one reader thread and, as it pushes a block only once all of it is in, exposed when
    the input's buffer holds one block:

        reads = sum_X read_X + reread;   step = max(busy + exposed, reads, chip * p, write_block, link_X...)
    """
    reader = tile_round_trip_reader(q)
    if reader is None:
        return one_reader_step(q, busy, q.per_block, write_block, links)[0]
    dm = {
        t: reader.input_cycles(q, t) if t in reader.inputs else read_cycles(q, t) + multicast_cycles(q, t)
        for t in q.per_block
    }
    reread = reader.reread_cycles(q)
    exposed = total(mul(single_buffered(q, t), dm[t]) for t in q.per_block) + reread
    chip = mul(reader.passes, chip_read_cycles(q, reader.inputs))
    return maximum(busy + exposed, total(dm.values()) + reread, write_block, chip, *links)


def dram_floor_cycles(q: RowReductionQuantities) -> Expr:
    """``ceil((reads + writes) / R_chip)``: every core's DRAM reads (each input as often as the cores read it,
    ``traffic.py``) and writes of the whole kernel share the chip's DRAM rate (module docstring)."""
    writes = total(
        mul(q.cores, q.blocks, q.tiles(t), q.tile_bytes(t))
        for t in q.dram_outputs
        if q.problem.placement(t) is Placement.dram
    )
    return ceil_rate(row_reduction_dram_read_bytes(q) + writes, q.hw.dram.chip_read_bytes_per_cycle)


def row_reduction_latency_terms(
    q: RowReductionQuantities, step_links: Sequence[LinkShare] = (), write_links: Sequence[LinkShare] = ()
) -> tuple[Expr, list[LatencyTerm], Expr]:
    """The objective, its named terms and a lower bound (module docstring); the lower bound drops
    ``data_movement`` (``step >= compute + rounds``)."""
    hw = q.hw
    compute = total(mul(q.tiles(t), cycles) for t, cycles in passes(hw, q.problem, q.st))
    rounds = mul(len(q.st.reductions), gather_round_cycles(q))
    write_block = total(write_transfer_cycles(q, t, q.tiles(t), write_links) for t in q.dram_outputs)
    links = [link.cycles(q, block_bytes(q, link.tensor)) for link in step_links]
    step = reader_step(q, compute + rounds, write_block, links)
    held = read_once_cycles(q, q.once)
    first = total(
        once_read_cycles(q, t, const(q.tile_bytes(t))) for t in q.per_block if reads_dram(q, t) or reads_l1_banks(q, t)
    )
    fill = first + held
    mask = mask_fill_cycles(hw, q.problem, q.st)
    if mask:
        fill = maximum(fill, const(mask))  # TTNN's softmax waits for its writer's mask tile (ttnn_softmax.py)
    drain = total(write_transfer_cycles(q, t, const(1)) for t in q.dram_outputs) + (
        max(write_latency_cycles(q, t) for t in q.dram_outputs) if q.dram_outputs else 0
    )
    launch = const(hw.compute.kernel_launch_cycles)
    n = q.blocks
    steady = fill + mul(n, step) + drain
    shared = dram_floor_cycles(q)
    busy = maximum(steady, shared)
    objective = launch + busy
    terms = [
        LatencyTerm("launch", launch, "fixed per-op launch on the device"),
        LatencyTerm("fill", fill, "the first tiles, and the inputs read once, loaded before any compute"),
        LatencyTerm("compute", mul(n, compute), "the reductions and element-wise passes, and their packs"),
    ]
    if q.candidate.gather_axis is not None:
        terms.append(
            LatencyTerm("gather", mul(n, rounds), "each reduction's partials gathered, combined and multicast back")
        )
    terms += [
        LatencyTerm(
            "data_movement",
            mul(n, step) - mul(n, compute + rounds) + (busy - steady),
            "blocks where reads, writes, shared DRAM bandwidth or a NoC link outlast compute; the whole "
            "kernel's DRAM bytes at the chip's rate beyond that",
        ),
        LatencyTerm("write_back", drain, "the last tile written to DRAM"),
    ]
    lower = launch + fill + mul(n, compute + rounds) + drain
    return objective, terms, lower
