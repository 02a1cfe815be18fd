"""Latency of a contraction candidate on its slowest core, in cycles, as named terms (the shared step, read
and write helpers: ``model/latency.py``).

Per input ``X`` and K step (one block, ``B_X`` bytes): ``read_X``, ``mcast_X``, ``dm_X = read_X + mcast_X``,
``s_X = max(read_X, mcast_X)`` and the chip's shared DRAM reads ``chip``, as ``model/latency.py`` defines them.

Compute of one K step of an output block (packer L1 accumulation, one pack per tile per step):

    mm = out_block_h*out_block_w*(in0_block_w*c_f + c_pack) + (out_block_h/sh)*(out_block_w/sw)*o_sub

Overlap: a double/triple-buffered input hides behind the step, a single-buffered one adds to it, and each
block a core or its sender reads from DRAM stalls the step by ``stall_X = ceil(B_X / r_stall)``
(``dram.step_read_bytes_per_cycle``; no stall when the hardware file leaves it out):

    step = max(mm + sum_X stall_X + sum_{X: depth_X = 1} dm_X,  s_in0,  s_in1,  chip)

On Blackhole a ttnn multicast sender waits for each block's multicast to leave before it reads the next
block (``flushed_sender_cycles``): where it multicasts to the whole grid (a 1-D config) the step is at least
``read_X + mcast'_X``, ``mcast'_X`` at the multicast rate of the grid's cores.

Whole kernel (n_out output blocks per core, n_k K steps per block):

    T = launch + fill + n_out*(n_k*step + epilogue + write_back) + gather + reduce + final_write

    fill        = max_X dm_X (+ the bias read), the first blocks before any compute

Inputs passed core to core (``minimal_matmul``, ``forwarding.py``) take ``hop_X`` in place of ``mcast_X`` in the
step and ``first_X = read_X + hops_X*hop_X`` in place of ``dm_X`` in the fill.
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

from loom_explorer.families.contraction.forwarding import first_block_cycles, forwarded, forwarded_step
from loom_explorer.families.contraction.quantities import ContractionQuantities
from loom_explorer.hardware.schema import Arch
from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.dram_reads import dram_readers, reads_dram
from loom_explorer.model.expr import Const, Expr, ceil_div, ceil_rate, const, floor_div, lookup, maximum, mul, total
from loom_explorer.model.latency import (
    block_bytes,
    data_movement_cycles,
    dram_write_cycles,
    matmul_cycles,
    once_read_cycles,
    op_tile_cycles,
    overlapped_step,
    read_cycles,
)
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import LatencyTerm
from loom_explorer.problem import KernelTarget

if TYPE_CHECKING:
    from loom_explorer.model.noc_bound import LinkShare


def compute_step_cycles(q: ContractionQuantities) -> Expr:
    in0, in1 = q.inputs
    return matmul_cycles(
        q,
        q.out_block_h,
        q.out_block_w,
        q.in0_block_w,
        q.out_subblock_h,
        q.out_subblock_w,
        q.tile_bytes(in0),
        q.tile_bytes(in1),
    )


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


def flushed_sender_cycles(q: ContractionQuantities) -> list[Expr]:
    """``read_X + mcast'_X`` for each input ``X`` that one sender reads and multicasts to the whole grid
    (``mcast_xy``: the 1-D configs) on Blackhole, for ttnn's kernels: the least time a K step takes while that
    sender reads a block and sends it (``mcast'_X``: ``grid_multicast_cycles``).

    Per K step ttnn's sender (``reader_bmm_tile_layout_in0_sender_padding.cpp`` @00878522 for in0, the in1
    half of ``reader_bmm_tile_layout_in1_sender_writer_padding.cpp`` @09519069 for in1, both in
    ``ttnn/cpp/ttnn/operations/matmul/device/kernels/dataflow/``) reads its block tile by tile, waits for every
    read (``noc_async_read_barrier``), waits for its receivers, issues the block's multicast and then, under
    ``#ifdef ARCH_BLACKHOLE``, waits for it to leave (``noc_async_writes_flushed()``: "NoC latency is higher
    than L1 <-> RISCV latency which means data could be changed before write is issued"; added for
    Blackhole in tt-metal PR 12682, 2024-09, so in every Blackhole capture) before it sets the receivers'
    flag and reads the next block. So on Blackhole a sender's read and its multicast do not overlap. On
    Wormhole the multicast is left in flight while the next reads go out: the step's ``max(read_X, mcast_X)``.

    Only a multicast to the whole grid is taken serial. A 2-D config's senders multicast along one row or
    column, for which no published rate exists (the two below are rectangles of 25 and 110 cores), and on
    the published p150 GEMM rows (2-D configs, DRAM inputs, held out) the serial sum over-predicts the
    small shapes by 25-70% with the all-grid rate: those keep the overlapped step. The TT-Lang kernels are
    the model's own (no flush)."""
    if q.hw.arch is not Arch.blackhole or q.problem.target is not KernelTarget.ttnn:
        return []
    return [read_cycles(q, t) + grid_multicast_cycles(q, t) for t in q.inputs if q.candidate.comm(t) is Comm.mcast_xy]


# Blackhole one-to-all multicast, the sender's bytes per cycle at 64 KiB x 256 transactions, by the size of
# the receivers' rectangle: tt-metal tests/tt_metal/tt_metal/data_movement/documentation/perf_plots/blackhole/
# "One to All Multicast 5x5 Packet Sizes without Loopback.md" @56194c30 (39.68 B/cycle, 25 cores) and
# "One to All Multicast 11x10 Packet Sizes without Loopback.md" @04981738 (24.71 B/cycle, 110 cores: the
# source of hw/blackhole_p150a.yaml noc.multicast_bytes_per_cycle)
_BH_MULTICAST_RATES: tuple[tuple[int, float], ...] = ((25, 39.68), (110, 24.71))


def multicast_rate(receivers: int) -> float:
    """Bytes per cycle of one Blackhole sender multicasting to a rectangle of ``receivers`` cores: linear in
    the receivers between the two published rectangles (``_BH_MULTICAST_RATES``), held beyond them. The
    line is an estimate: the tables give two points, the larger rectangle the lower rate."""
    (d0, r0), (d1, r1) = _BH_MULTICAST_RATES
    d = min(max(receivers, d0), d1)
    return r0 + (d - d0) * (r1 - r0) / (d1 - d0)


def grid_multicast_cycles(q: ContractionQuantities, tensor: str) -> Expr:
    """``mcast'_X = ceil(B_X / r(grid_x*grid_y)) + hops*h + o_hs``: ``mcast_X`` (``model/latency.py``) with the
    multicast rate of the grid's cores (``multicast_rate``) in place of the 110-core one, as
    ``ceil(B_X * c / 10000)`` with ``c = round(10000 / r)`` cycles per 10,000 bytes looked up by the grid."""
    noc = q.hw.noc
    keys = (q.grid_x, q.grid_y)
    cycles_per_10k_bytes: dict[tuple[int, ...], int] = {
        (x, y): round(10_000 / multicast_rate(x * y)) for x in q.grid_x.values for y in q.grid_y.values
    }
    transfer = ceil_div(mul(block_bytes(q, tensor), lookup(keys, cycles_per_10k_bytes)), 10_000)
    return transfer + mul(noc.hop_latency_cycles, q.mcast_hops(tensor)) + noc.multicast_handshake_cycles


def step_cycles(q: ContractionQuantities, links: Sequence[LinkShare] = ()) -> Expr:
    stall = total(read_stall_cycles(q, t) for t in q.inputs)
    link_cycles = [link.cycles(q, block_bytes(q, link.tensor)) for link in links]
    if forwarded(q):
        return forwarded_step(q, compute_step_cycles(q) + stall, q.inputs, link_cycles)
    step = overlapped_step(q, compute_step_cycles(q) + stall, q.inputs, link_cycles)
    flushed = flushed_sender_cycles(q)
    return maximum(step, *flushed) if flushed else step


def epilogue_cycles(q: ContractionQuantities) -> Expr:
    per_tile = sum(op_tile_cycles(q, op) for op in q.con.epilogue)
    return mul(q.out_block_h, q.out_block_w, per_tile)


def writes_dram(q: ContractionQuantities) -> bool:
    """Whether the output is written over the NoC: to DRAM, or to the L1 banks when L1-interleaved
    (``model/latency.py``: ``dram_write_cycles``); a sharded output stays where it is computed."""
    return not q.problem.placement(q.con.matmul.out).in_l1


def write_cycles(q: ContractionQuantities, tiles: Expr, links: Sequence[LinkShare] = ()) -> Expr:
    if not writes_dram(q):
        return const(0)
    return dram_write_cycles(q, q.con.matmul.out, tiles, links)


def fill_cycles(q: ContractionQuantities) -> Expr:
    first_block = first_block_cycles if forwarded(q) else data_movement_cycles
    first = maximum(*(first_block(q, t) for t in q.inputs))
    extra = total(once_read_cycles(q, t, mul(q.share_tiles(t), q.tile_bytes(t))) for t in q.auxiliary_inputs)
    return first + extra


def latency_terms(
    q: ContractionQuantities, step_links: Sequence[LinkShare] = (), write_links: Sequence[LinkShare] = ()
) -> tuple[Expr, list[LatencyTerm], Expr]:
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
        gather = (
            ceil_rate(mul(s - 1, partial_tiles, q.acc_tile_bytes), noc.unicast_bytes_per_cycle)
            + mul(noc.hop_latency_cycles, s - 1)
            + noc.transaction_latency_cycles
        )
        tail = [
            ("gather", gather, "split-K partial sums sent L1-to-L1 to the reducing core"),
            ("reduce", mul(s - 1, partial_tiles, c.eltwise_tile_cycles), "adding the partial sums"),
            ("write_back", write_cycles(q, partial_tiles, write_links), "reduced output written to DRAM"),
        ]
    objective = total(
        [c.kernel_launch_cycles, fill, mul(n_out, mul(n_k, step) + epi + wb_block), *(e for _, e, _ in tail)]
    )
    terms = [
        LatencyTerm("launch", const(c.kernel_launch_cycles), "fixed per-op launch on the device"),
        LatencyTerm("fill", fill, "first blocks loaded before any compute"),
        LatencyTerm("compute", mul(n_out, n_k, mm), "tile matmuls, packing and sub-block overhead"),
        LatencyTerm(
            "data_movement",
            mul(n_out, n_k, step - mm),
            "K steps where reads/multicasts (or shared DRAM bandwidth) outlast compute",
        ),
        LatencyTerm("epilogue", mul(n_out, epi), "bias and activation per output tile"),
    ]
    if split:
        terms += [LatencyTerm(n, e, d) for n, e, d in tail]
    else:
        terms.append(LatencyTerm("write_back", mul(n_out, wb_block), "output blocks written to DRAM"))
    # everything but the K-step loop, common to both bounds
    common = total([c.kernel_launch_cycles, fill, mul(n_out, epi + wb_block), *(e for _, e, _ in tail)])
    rest = total([c.kernel_launch_cycles, fill, mul(n_out, epi)]) if not split and writes_dram(q) else None
    lower_bound = k_loop_lower_bound(q, common, rest, step_links, write_links)
    return objective, terms, lower_bound


def k_loop_lower_bound(
    q: ContractionQuantities,
    common: Expr,
    rest: Expr | None,
    step_links: Sequence[LinkShare],
    write_links: Sequence[LinkShare],
) -> Expr:
    """The redundant lower bound of a K loop, given ``common`` (everything but the K steps) and ``rest``
    (``common`` without the write-back, when every output block is written to DRAM; else None): the largest of

    * ``common`` + the compute floor ``pb*pm*pn*(pk*c_mm + c_pack)``;
    * ``common`` + the chip's DRAM reads over the whole K loop: with the divisibility constraints
      ``n_out*n_k*out_block_h*in0_block_w = pb*pm*pk*(pn/out_block_w)`` (and likewise for in1), and
      ``n*ceil(x/R) >= ceil(n*x/R)``;
    * ``common`` + each NoC link over the whole K loop (``n*ceil(x/W) >= ceil(n*x/W)`` again);
    * ``rest`` + the compute floor + every output block's write-back taken as one write of the whole per-core
      output (``n*max(ceil(x/w), link(x)) + n*L >= max(ceil(n*x/w), link(n*x)) + L``), which depends on the
      grid and per-core sizes only."""
    c = q.hw.compute
    floor = mul(q.pb, q.pm, q.pn, mul(q.pk, c.matmul_tile_cycles[q.problem.fidelity]) + c.tile_pack_cycles)
    lower_bound = common + floor
    chip = total(mul(dram_readers(q, t), loop_tiles(q, t), q.tile_bytes(t)) for t in q.inputs)
    if not isinstance(chip, Const):
        lower_bound = maximum(lower_bound, common + ceil_rate(chip, q.hw.dram.chip_read_bytes_per_cycle))
    for link in step_links:
        lower_bound = maximum(
            lower_bound, common + link.cycles(q, mul(loop_tiles(q, link.tensor), q.tile_bytes(link.tensor)))
        )
    if rest is not None:
        lower_bound = maximum(lower_bound, rest + floor + write_cycles(q, mul(q.pb, q.pm, q.pn), write_links))
    return lower_bound


def loop_tiles(q: ContractionQuantities, tensor: str) -> Expr:
    """Tiles of ``tensor`` one core streams over the whole K loop, ``n_out*n_k*block_tiles``, written as
    ``pb*pm*pk*(pn/out_block_w)`` for in0 (``pb*pn*pk*(pm/out_block_h)`` for in1): equal under the
    divisibility constraints, and cheaper for the solver (no product with the step counts)."""
    if tensor == q.inputs[0]:
        return mul(q.pb, q.pm, q.pk, floor_div(q.pn, q.out_block_w))
    return mul(q.pb, q.pn, q.pk, floor_div(q.pm, q.out_block_h))


def dram_read_bytes(q: ContractionQuantities) -> Expr:
    """Bytes one K step reads from DRAM over the whole chip, times the steps of the slowest core."""
    per_step = total(mul(dram_readers(q, t), block_bytes(q, t)) for t in q.inputs)
    return mul(q.out_blocks, q.k_blocks, per_step)
