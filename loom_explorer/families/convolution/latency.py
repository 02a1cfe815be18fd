"""The latency of ttnn's sharded conv on the TTNN target: the contraction family's blocked-matmul terms
(``families/contraction/latency.py``, docs/model.md) with the two ways the conv's movers differ from that
model's. The names and meaning of the terms are the GEMM's (``launch``, ``fill``, ``compute``,
``data_movement``, ``epilogue``, ``write_back``).

1. **The activation and the weights move on two RISC-Vs.** ttnn's sharded conv factory puts the activation
   reader on ``RISCV_1`` and the weights sender/receiver on ``RISCV_0`` (``CreateKernel`` with
   ``DataMovementProcessor::RISCV_1`` and ``RISCV_0`` in
   ``ttnn/cpp/ttnn/operations/conv/conv2d/device/conv2d_op_sharded_program_factory.cpp`` @
   003324fca537487796cab67d556354601d52ec88). A single-buffered input (``enable_act_double_buffer`` /
   ``enable_weights_double_buffer`` off) can only be refilled once the compute kernel has popped its block,
   so its load adds to the step; two such inputs are refilled at once, each by its own mover, so the step
   waits for the slower of the two, not for their sum:

       step = max(mm + sum_X stall_X + max_{X: depth_X = 1} dm_X,  s_in0,  s_in1,  chip,  link_f...)

   (the GEMM's ``step`` adds ``sum_{X: depth_X = 1} dm_X``).

2. **A single-buffered input's first block is the first step's load.** The GEMM's ``fill = max_X dm_X`` is the
   first blocks loaded before any compute; every step, the first included, already counts a single-buffered
   input's load (1.), so the fill counts the first block of the double-buffered inputs only:

       fill = max_{X: depth_X >= 2} dm_X + the bias read

   (no term for a single-buffered input: ``n_out*n_k`` steps each load one block of it, which is all of its
   blocks). A height-sharded conv's activation is local (``dm_in0 = 0``), so its fill is the weights' first
   block only when they are double buffered.

Everything else (``mm``, ``stall_X``, ``dm_X``, ``s_X``, the epilogue and the write-back) is the GEMM's, from
the same helpers. The lower bound is the GEMM's with this fill: ``step >= mm`` and ``step >= chip`` still hold.
"""

from __future__ import annotations

from collections.abc import Sequence

from loom_explorer.families.contraction.latency import (
    compute_step_cycles,
    epilogue_cycles,
    loop_tiles,
    read_stall_cycles,
    write_cycles,
    writes_dram,
)
from loom_explorer.families.contraction.quantities import ContractionQuantities
from loom_explorer.model.dram_reads import dram_readers
from loom_explorer.model.expr import Const, Expr, ceil_rate, const, maximum, mul, select, total
from loom_explorer.model.latency import (
    block_bytes,
    chip_read_cycles,
    data_movement_cycles,
    multicast_cycles,
    once_read_cycles,
    read_cycles,
    single_buffered,
)
from loom_explorer.model.noc_bound import LinkShare
from loom_explorer.model.schedule import LatencyTerm


def double_buffered(q: ContractionQuantities, tensor: str) -> Expr:
    """1 when ``tensor``'s circular buffer holds two blocks or more (its next block loads during the step)."""
    return select(q.depth[tensor], {v: int(v >= 2) for v in q.depth[tensor].values})


def step_cycles(q: ContractionQuantities, links: Sequence[LinkShare] = ()) -> Expr:
    """One K step (module docstring, 1.): the single-buffered inputs' loads overlap each other."""
    stall = total(read_stall_cycles(q, t) for t in q.inputs)
    exposed = maximum(*(mul(single_buffered(q, t), data_movement_cycles(q, t)) for t in q.inputs))
    streaming = [maximum(read_cycles(q, t), multicast_cycles(q, t)) for t in q.inputs]
    link_cycles = [link.cycles(q, block_bytes(q, link.tensor)) for link in links]
    return maximum(compute_step_cycles(q) + stall + exposed, *streaming, chip_read_cycles(q, q.inputs), *link_cycles)


def fill_cycles(q: ContractionQuantities) -> Expr:
    """The first blocks of the double-buffered inputs and the bias read, before the first step (module
    docstring, 2.)."""
    first = maximum(*(mul(double_buffered(q, t), data_movement_cycles(q, t)) for t in q.inputs))
    extra = total(once_read_cycles(q, t, mul(q.share_tiles(t), q.tile_bytes(t))) for t in q.auxiliary_inputs)
    return first + extra


def latency_terms(
    q: ContractionQuantities, step_links: Sequence[LinkShare] = (), write_links: Sequence[LinkShare] = ()
) -> tuple[Expr, list[LatencyTerm], Expr]:
    """The objective, its breakdown (terms that sum to it) and a lower bound, as the GEMM's
    (``families/contraction/latency.py``: ``latency_terms``, without split K, which ttnn's conv never runs)
    with this module's step and fill:

        T = launch + fill + n_out*(n_k*step + epilogue + write_back)"""
    c = q.hw.compute
    n_out, n_k = q.out_blocks, q.k_blocks
    step = step_cycles(q, step_links)
    mm = compute_step_cycles(q)
    epi = epilogue_cycles(q)
    wb_block = write_cycles(q, mul(q.out_block_h, q.out_block_w), write_links)
    fill = fill_cycles(q)
    objective = total([c.kernel_launch_cycles, fill, mul(n_out, mul(n_k, step) + epi + wb_block)])
    terms = [
        LatencyTerm("launch", const(c.kernel_launch_cycles), "fixed per-op launch on the device"),
        LatencyTerm("fill", fill, "first blocks of the double-buffered inputs loaded before any compute"),
        LatencyTerm("compute", mul(n_out, n_k, mm), "tile matmuls, packing and sub-block overhead"),
        LatencyTerm(
            "data_movement",
            mul(n_out, n_k, step - mm),
            "K steps where reads/multicasts (or shared DRAM bandwidth) outlast compute",
        ),
        LatencyTerm("epilogue", mul(n_out, epi), "bias and activation per output tile"),
        LatencyTerm("write_back", mul(n_out, wb_block), "output blocks written to DRAM"),
    ]
    common = total([c.kernel_launch_cycles, fill, mul(n_out, epi + wb_block)])
    floor = mul(q.pb, q.pm, q.pn, mul(q.pk, c.matmul_tile_cycles[q.problem.fidelity]) + c.tile_pack_cycles)
    lower_bound = common + floor
    chip = total(mul(dram_readers(q, t), loop_tiles(q, t), q.tile_bytes(t)) for t in q.inputs)
    if not isinstance(chip, Const):
        lower_bound = maximum(lower_bound, common + ceil_rate(chip, q.hw.dram.chip_read_bytes_per_cycle))
    for link in step_links:
        lower_bound = maximum(
            lower_bound, common + link.cycles(q, mul(loop_tiles(q, link.tensor), q.tile_bytes(link.tensor)))
        )
    if writes_dram(q):
        rest = total([c.kernel_launch_cycles, fill, mul(n_out, epi)])
        lower_bound = maximum(lower_bound, rest + floor + write_cycles(q, mul(q.pb, q.pm, q.pn), write_links))
    return objective, terms, lower_bound
