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

       step = max(mm + sum_{X: depth_X >= 2} stall_X + max_{X: depth_X = 1} dm_X,  s_in0,  s_in1,  chip,  link_f...)

   (the GEMM's ``step`` adds ``sum_{X: depth_X = 1} dm_X``). ``stall_X``, the GEMM's delay of a step by a
   DRAM read it does not hide, counts for a double-buffered input only: a single-buffered input's whole read
   is already in the step (``dm_X``), and the GEMM's sum would count it twice.

2. **A single-buffered input's first block is the first step's load.** The GEMM's ``fill = max_X dm_X`` is the
   first blocks loaded before any compute; every step, the first included, already counts a single-buffered
   input's load (1.), so the fill counts the first block of the double-buffered inputs only:

       fill = max_{X: depth_X >= 2} dm_X + the bias read

   (no term for a single-buffered input: ``n_out*n_k`` steps each load one block of it, which is all of its
   blocks). A height-sharded conv's activation is local (``dm_in0 = 0``), so its fill is the weights' first
   block only when they are double buffered.

3. **The height-sharded activation is tilized on the compute core, while the weights load.** The activation
   reader fills a row-major block from the halo'd shard; the compute kernel tilizes it (``tilize_in``,
   ``out_block_h x in0_block_w`` tiles) before each K step's tile matmuls, then waits for the weights block
   (``cb_wait_front(in1_cb_id)``) and pops both after the matmuls (``conv_bmm_tilize.cpp``, height-sharded
   branch, @ 00d16add974e74cd421deff11e1c6c77897ca1a6). The tilize is compute work in series with the matmuls,
   and a single-buffered weights block, whose load starts once the previous block is popped, loads during the
   next tilize: ttnn's own cost rule says the same, "time before matmul: max(activation_transfer + tilize,
   weight_transfer)" (``is_split_reader_viable`` in
   ``ttnn/cpp/ttnn/operations/conv/conv2d/conv2d_op_program_factory_common.cpp`` @
   f3c1ee7ec100a0a965df79edf9936c95734743ea). So, height sharded,

       step = max(mm + c_x + sum_{X: depth_X >= 2} stall_X + max(0, max_{X: depth_X = 1} dm_X - c_x),
                  s_X...,  chip,  link_f...)
       c_x  = out_block_h*in0_block_w*c_tilize

   ``c_tilize`` is ttnn's own cycles per tile of this tilize (``get_tilize_cycles_per_tile``, same file: by
   architecture, the row-major input's format, float32 or else bfloat16, the output's format and whether Dst
   accumulates in fp32; ``TILIZE_CYCLES``; no cost for a format the table has not). ``c_x`` counts in
   ``compute``. The activation reader's copies from the halo'd shard (one NoC read per output pixel and filter
   row) are not costed: no published figure gives the cost of such a local read as the reader issues them.
   Block sharded, each core tilizes its own block of the activation and multicasts it along its row in
   turn: the compute kernel tilizes once every ``in0_nblocks_w_tilize`` K steps, the cores the activation is
   multicast along (``in0_block_w_i % in0_nblocks_w_tilize == 0``, same kernel; "repeat tilize after all
   cores have done one round of MCAST", ``conv2d_op_sharded_program_factory.cpp`` @
   003324fca537487796cab67d556354601d52ec88), so ``c_x`` is spread over those ``c`` steps:
   ``ceil(out_block_h*in0_block_w*c_tilize / c)``.

Everything else (``mm``, ``stall_X``, ``dm_X``, ``s_X``, the epilogue and the write-back) is the GEMM's, from
the same helpers. The lower bound is the GEMM's with this fill: ``step >= mm`` and ``step >= chip`` still hold.
"""

from __future__ import annotations

from collections.abc import Sequence

from loom_explorer.families.contraction.latency import (
    compute_step_cycles,
    epilogue_cycles,
    k_loop_lower_bound,
    read_stall_cycles,
    write_cycles,
    writes_dram,
)
from loom_explorer.families.contraction.quantities import ContractionQuantities
from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.expr import Expr, ceil_div, const, maximum, mul, select, total
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

TILIZE_CYCLES: dict[tuple[str, str, str], tuple[int, int]] = {
    ("blackhole", "float32", "float32"): (132, 132),
    ("blackhole", "float32", "bfloat16"): (132, 80),
    ("blackhole", "float32", "bfloat8_b"): (132, 77),
    ("blackhole", "bfloat16", "float32"): (105, 128),
    ("blackhole", "bfloat16", "bfloat16"): (72, 72),
    ("blackhole", "bfloat16", "bfloat8_b"): (60, 60),
    ("wormhole_b0", "float32", "float32"): (107, 128),
    ("wormhole_b0", "float32", "bfloat16"): (74, 74),
    ("wormhole_b0", "float32", "bfloat8_b"): (74, 70),
    ("wormhole_b0", "bfloat16", "float32"): (92, 117),
    ("wormhole_b0", "bfloat16", "bfloat16"): (61, 68),
    ("wormhole_b0", "bfloat16", "bfloat8_b"): (40, 43),
}
"""``c_tilize``: (architecture, row-major input format, output format) -> (cycles per tile with Dst in 16 bits,
with Dst in fp32), ttnn's ``get_tilize_cycles_per_tile`` (module docstring, 3.)."""


def double_buffered(q: ContractionQuantities, tensor: str) -> Expr:
    """1 when ``tensor``'s circular buffer holds two blocks or more (its next block loads during the step)."""
    return select(q.depth[tensor], {v: int(v >= 2) for v in q.depth[tensor].values})


def height_sharded(q: ContractionQuantities) -> bool:
    """ttnn's height-sharded conv: the activation local to its core, the weights multicast to every core."""
    in0, in1 = q.inputs
    return q.candidate.comm(in0) is Comm.local and q.candidate.comm(in1) is Comm.mcast_xy


def tilize_tile_cycles(q: ContractionQuantities) -> int:
    """``c_tilize`` (module docstring, 3.): ``TILIZE_CYCLES`` for ``q``'s chip and formats, 0 for a format the
    table has not."""
    in0 = q.inputs[0]
    row_major = "float32" if q.problem.data_format(in0).value == "float32" else "bfloat16"
    out = q.problem.data_format(q.con.matmul.out).value
    entry = TILIZE_CYCLES.get((q.hw.arch.value, row_major, out))
    if entry is None:
        return 0
    return entry[1] if q.problem.fp32_acc else entry[0]


def tilize_cycles(q: ContractionQuantities) -> Expr:
    """``c_x`` (module docstring, 3.): ``out_block_h*in0_block_w*c_tilize`` height sharded; block sharded, that
    over the ``c`` cores the activation is multicast along, ``ceil(out_block_h*in0_block_w*c_tilize / c)``;
    0 for any other layout."""
    tiles = mul(q.out_block_h, q.in0_block_w, tilize_tile_cycles(q))
    if height_sharded(q):
        return tiles
    axis = q.candidate.comm(q.inputs[0]).axis
    if axis in ("x", "y"):
        return ceil_div(tiles, q.axis_cores(axis))
    return const(0)


def busy_cycles(q: ContractionQuantities) -> Expr:
    """The compute core's work in one K step: the tile matmuls and the activation's tilize."""
    return compute_step_cycles(q) + tilize_cycles(q)


def step_cycles(q: ContractionQuantities, links: Sequence[LinkShare] = ()) -> Expr:
    """One K step (module docstring, 1. and 3.): the single-buffered inputs' loads overlap each other and the
    activation's tilize."""
    stall = total(mul(double_buffered(q, t), read_stall_cycles(q, t)) for t in q.inputs)
    exposed = maximum(*(mul(single_buffered(q, t), data_movement_cycles(q, t)) for t in q.inputs))
    tilize = tilize_cycles(q)
    streaming = [maximum(read_cycles(q, t), multicast_cycles(q, t)) for t in q.inputs]
    link_cycles = [link.cycles(q, block_bytes(q, link.tensor)) for link in links]
    return maximum(
        compute_step_cycles(q) + stall + maximum(tilize, exposed),
        *streaming,
        chip_read_cycles(q, q.inputs),
        *link_cycles,
    )


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
    mm = busy_cycles(q)
    epi = epilogue_cycles(q)
    wb_block = write_cycles(q, mul(q.out_block_h, q.out_block_w), write_links)
    fill = fill_cycles(q)
    objective = total([c.kernel_launch_cycles, fill, mul(n_out, mul(n_k, step) + epi + wb_block)])
    terms = [
        LatencyTerm("launch", const(c.kernel_launch_cycles), "fixed per-op launch on the device"),
        LatencyTerm("fill", fill, "first blocks of the double-buffered inputs loaded before any compute"),
        LatencyTerm(
            "compute", mul(n_out, n_k, mm), "tile matmuls, packing, sub-block overhead and the activation's tilize"
        ),
        LatencyTerm(
            "data_movement",
            mul(n_out, n_k, step - mm),
            "K steps where reads/multicasts (or shared DRAM bandwidth) outlast compute",
        ),
        LatencyTerm("epilogue", mul(n_out, epi), "bias and activation per output tile"),
        LatencyTerm("write_back", mul(n_out, wb_block), "output blocks written to DRAM"),
    ]
    common = total([c.kernel_launch_cycles, fill, mul(n_out, epi + wb_block)])
    rest = total([c.kernel_launch_cycles, fill, mul(n_out, epi)]) if writes_dram(q) else None
    lower_bound = k_loop_lower_bound(q, common, rest, step_links, write_links)
    return objective, terms, lower_bound
