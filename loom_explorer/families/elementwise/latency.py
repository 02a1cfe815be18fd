"""The element-wise family's latency (``quantities.py`` for the notation): the objective of one candidate,
its named terms and a lower bound.

Per block, on the slowest core (``b_X`` bytes per tile of ``X``, ``c_op`` each op's cycles per tile:
``compute.eltwise_tile_cycles`` on the FPU, on the SFPU 32 passes of the op's LLK loop body, ``sfpu.py``;
``c_pack = compute.tile_pack_cycles`` per output tile):

    reads   = sum_X ceil(B_X*b_X / r_core) + max_X L_read(depth_X)   the inputs each core reads itself
              + sum_{X multicast} (read_X + mcast_X)             (one reader: every read issued, one barrier;
                                                                  ``reader.py``)
    compute = B*(sum_op c_op + outputs*c_pack)
    writes  = sum_Y max(ceil(B*b_Y / w_core), link_Y)            each output written to DRAM
    chip    = ceil((sum_X readers_X * B_X*b_X + cores * sum_Y B*b_Y) / R_chip)
                                                                 (every reader and writer at once: reads and
                                                                  writes share the DRAM, ``dram_traffic_cycles``)
    step    = max(compute + exposed, reads, writes, chip, link_X...)

(``exposed``: the reads of the single-buffered inputs, ``reader.py``)
and the whole kernel, a pipeline of ``n`` blocks: the first block's reads, then ``n - 1`` steps that each
overlap the next block's reads with this block's compute and the last block's write, then the last block's
compute and its write

    T_total = launch + fill + (n - 1)*step + compute + drain
    fill    = max(reads, chip)                                    (the first block, every core at once; its
                                                                  own writes counted in chip: an upper bound)
              + sum_{scalar X} (ceil(b_X / r_core) + L_read [+ its multicast] + ceil(b_X / 4) * s_store)
              (a scalar's tile read, then filled word by word by a RISC-V: ``reader.py``)
    drain   = writes + L_write                                   (the last block's write-back)

The named terms (``launch``, ``fill``, ``compute = n*compute``, ``data_movement = (n - 1)*(step - compute)``,
``write_back = drain``) sum to the total, as for the other families. A one-block core (``n = 1``) reads,
computes and writes its block once: no step, no ``data_movement``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from loom_explorer.families.elementwise.quantities import ElementwiseQuantities
from loom_explorer.families.elementwise.reader import scalar_fill_cycles, step_reads
from loom_explorer.families.elementwise.work import tile_cycles
from loom_explorer.model.dram_reads import dram_readers
from loom_explorer.model.expr import Expr, ceil_rate, const, maximum, mul, total
from loom_explorer.model.l1_banks import in_l1_banks
from loom_explorer.model.latency import (
    block_bytes,
    chip_read_cycles,
    read_once_cycles,
    write_latency_cycles,
    write_transfer_cycles,
)
from loom_explorer.model.schedule import LatencyTerm

if TYPE_CHECKING:
    from loom_explorer.model.noc_bound import LinkShare


def dram_traffic_cycles(q: ElementwiseQuantities) -> Expr:
    """``ceil((sum_X readers_X * B_X*b_X + cores * sum_Y B*b_Y) / R_chip)``: one step's DRAM reads and the
    outputs' DRAM writes of every core at once. A GDDR6 channel moves reads and writes over one data bus, so
    they share the chip's bandwidth (the published chip figures are one total: 288 GB/s on Wormhole n150, 512
    GB/s on Blackhole p150, docs.tenstorrent.com specifications); the model's chip rate is the measured read
    rate (``dram.chip_read_bytes_per_cycle``), taken for the two together (an estimate: the read figure is
    within 10% of the published peak on both chips)."""
    reads = total(mul(dram_readers(q, t), block_bytes(q, t)) for t in q.per_block)
    writes = total(mul(q.cores, q.block, q.tile_bytes(t)) for t in q.dram_outputs if not in_l1_banks(q, t))
    return ceil_rate(reads + writes, q.hw.dram.chip_read_bytes_per_cycle)


def elementwise_latency_terms(
    q: ElementwiseQuantities, step_links: Sequence[LinkShare] = (), write_links: Sequence[LinkShare] = ()
) -> tuple[Expr, list[LatencyTerm], Expr]:
    """The objective, its named terms and a lower bound (module docstring). With ``once`` the scalars' part of
    ``fill``, the lower bound is ``launch + drain`` plus the larger of two floors, each at most
    ``fill + (n - 1) * step + compute`` on every schedule:

    * ``fill + T * c_tile``, the compute (``step >= compute``, so ``(n - 1) * step + compute >= n * compute``,
      and ``n * B >= T``, ``T`` the slowest core's tiles);
    * ``once + ceil((sum_X readers_X * T * b_X + cores * sum_Y T * b_Y) / R_chip)``, the chip's DRAM reads
      over the full-rank streamed inputs and the outputs' DRAM writes (``fill - once >= chip`` and ``step >=
      chip``, so ``fill + (n - 1) * step >= once + n * chip``; ``chip >= (sum_X readers_X * B * b_X + cores *
      sum_Y B * b_Y) / R_chip``, the other inputs' terms being >= 0, and ``n * B >= T``; ``ceil_rate`` rounds
      the same rational rate in both). Without it, a large DRAM-bound shape (65536x65536 on Blackhole) left
      CP-SAT unable to prove a candidate optimal within 30 s."""
    hw = q.hw
    c_tile = tile_cycles(hw, q.problem, q.st)
    compute = mul(q.block, c_tile)
    write_block = total(write_transfer_cycles(q, t, q.block, write_links) for t in q.dram_outputs)
    links = [link.cycles(q, block_bytes(q, link.tensor)) for link in step_links]
    reads = step_reads(q, q.per_block)
    chip = maximum(chip_read_cycles(q, q.per_block), dram_traffic_cycles(q))
    step = maximum(compute + reads.exposed, reads.cycles, write_block, chip, *links)
    once = read_once_cycles(q, q.st.scalars) + scalar_fill_cycles(q)
    fill = maximum(reads.cycles, chip) + once
    drain = write_block + (max(write_latency_cycles(q, t) for t in q.dram_outputs) if q.dram_outputs else 0)
    launch = const(hw.compute.kernel_launch_cycles)
    n = q.blocks
    objective = launch + fill + mul(n, step) - step + compute + drain
    terms = [
        LatencyTerm("launch", launch, "fixed per-op launch on the device"),
        LatencyTerm("fill", fill, "the first blocks, and any scalar input, loaded before any compute"),
        LatencyTerm("compute", mul(n, compute), "the ops on every output tile, and its pack"),
        LatencyTerm(
            "data_movement",
            mul(n, step) - mul(n, compute) - step + compute,
            "blocks after the first where reads, writes, shared DRAM bandwidth or a NoC link outlast compute",
        ),
        LatencyTerm("write_back", drain, "the last block written to DRAM"),
    ]
    full = [t for t in q.per_block if t in q.st.full]
    written = total(mul(q.cores, q.core_tiles, q.tile_bytes(t)) for t in q.dram_outputs if not in_l1_banks(q, t))
    chip_floor = ceil_rate(
        total(mul(dram_readers(q, t), q.core_tiles, q.tile_bytes(t)) for t in full) + written,
        hw.dram.chip_read_bytes_per_cycle,
    )
    lower = launch + maximum(fill + mul(q.core_tiles, c_tile), once + chip_floor) + drain
    return objective, terms, lower
