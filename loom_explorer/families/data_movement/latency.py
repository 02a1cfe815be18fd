"""The data-movement family's latency (``quantities.py`` for the notation): the objective of one candidate,
its named terms and a lower bound.

Per block of ``B`` tiles on the slowest core, each source ``X`` moves ``B * b_X * f_X`` bytes (``b_X`` its
tile bytes, ``f_X`` the share of the iteration's elements it really moves, ``quantities.py``: below 1 for a
padded source, and for a row-major tensor whose rows are not whole tiles) and the output ``Y``
``B * b_Y * f_Y`` (a sliced output writes less), each at its page rate (``pages.py``: a row-major tensor's
page is one row of its last dimension; a tiled tensor's reads and writes run at the hardware file's
``dram.core_read_bytes_per_cycle`` / ``core_write_bytes_per_cycle``, as every family's tiles do):

    read_X  = ceil(B*b_X*f_X / r(p_X)) + L_read(depth_X)         (0 for a source in L1)
    reads   = sum_X read_X                                       (one reader, one source after another)
    write   = max(ceil(B*b_Y*f_Y / w(p_Y)), link_Y)              (0 for an output in L1)
    compute = B * c_tile                                         (work.py: 0 for a plain copy)
    chip    = ceil(sum_X readers_X * B*b_X / R_chip)
    step    = max(compute + sum_{X: depth_X = 1} read_X, reads + gather + walk_r, write + walk_w, chip, link_f...)

    T_total = launch + fill + n*step + local + drain,   fill = reads,   drain = write + L_write

(a tiled copy into L1 shards has no fill, one out of L1 shards no ``write`` in its drain: ``stages.py``)

A tensor whose pages the kernel waits for one by one (``barriers.py``: a padded tilize's source, an unpadded
untilize's output, a strided slice's source, a ``waited`` copy's tiles) moves at the waited page rate
``p / (L + p / r(p))`` (``pages.py``) and adds no ``L_read``
to its block, nor ``L_write`` to the drain: every page has paid its latency. An L1-interleaved output is written
at the NoC's unicast rate (tiles) and drained with the L1 banks' page latency (``model/latency.py::
write_latency_cycles``, ``model/l1_banks.py``).

A strided slice (the program option ``strided``, ``gather.py``) adds to its reader's block the cycles its
RISC-V spends gathering the kept elements byte by byte, ``gather = ceil(B * 32 * f_Y) * g_elem``, after the
block's read; its source rows are waited one by one (``barriers.py``). The gather is in the step only, not in
the fill: the reader's steps are every block's read and gather, the first's included (the fill stands for the
first read before the pipeline's other stages start; a gather-bound core's time is ``n`` gathers and reads,
then the last write).

A row-major slice with the program option ``stick_walk`` (``stick_walk.py``: ttnn's ``padded_slice`` reader and
``slice_write`` writer) adds to the block of the RISC-V moving its DRAM side the cycles that RISC-V spends
finding every stick's address, ``walk = ceil(B*b_X*f_X/p_X * w_stick)``: to the reads (a DRAM source) or the
write (a DRAM output), in the step only, as the gather.

A shard copied from one L1 buffer into another on each core (``local_copy.py``: ttnn's sharded move, tiled
or row-major) adds ``local = ceil(T*b_X*f_X / r_noc)`` for the core's whole shard to the steady state (in
``data_movement``) and its last chunk's round trip ``L_noc`` to the drain.

A row-major reshape run by two RISC-Vs a core (the program option ``two_riscs``, ``reshape_split.py``: no
compute, ``c_tile = 0``) works its ``n`` blocks on both at once, ``ceil(n / 2)`` each, while the core's blocks
still pass its share of the chip's DRAM bandwidth and its NoC links one after another:

    steady = max(ceil(n/2) * max(reads + gather, write), n * chip, n * link_f...)    (else n * step)

A page-by-page reader with no compute (``page_pipelined``: a waited source, ``c_tile = 0``) hands each page to
the writer as it lands: ``fill`` is then its first page, ``p / (rate * f)`` (``page_cycles``), and the drain the
last page's write, not a whole block's; the steps still move every block.

The named terms (``launch``, ``fill``, ``compute = n*compute``, ``data_movement = steady - n*compute + local``,
``write_back = drain``) sum to the total. The lower bound takes for ``n*step`` the larger of the compute
``T*c_tile`` and the chip's reads ``ceil(sum_X readers_X*T*b_X / R_chip)`` (``n*B >= T``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from loom_explorer.families.data_movement.barriers import waits_each_page
from loom_explorer.families.data_movement.gather import element_gather_cycles, gathers, tile_gather_elements
from loom_explorer.families.data_movement.local_copy import local_copy_cycles, local_copy_latency_cycles
from loom_explorer.families.data_movement.pages import Direction, page_bytes_per_cycle, waited_page_bytes_per_cycle
from loom_explorer.families.data_movement.quantities import DataMovementQuantities
from loom_explorer.families.data_movement.reshape_split import riscs_sharing_rows
from loom_explorer.families.data_movement.stages import reads_alone, writes_alone
from loom_explorer.families.data_movement.stick_walk import walk_cycles
from loom_explorer.families.data_movement.work import tile_cycles
from loom_explorer.model.dram_reads import dram_readers, reads_dram
from loom_explorer.model.expr import Expr, ceil_div, ceil_rate, const, maximum, mul, select, total
from loom_explorer.model.l1_banks import in_l1_banks
from loom_explorer.model.latency import block_bytes, chip_read_cycles, single_buffered, write_latency_cycles
from loom_explorer.model.schedule import LatencyTerm

if TYPE_CHECKING:
    from loom_explorer.model.noc_bound import LinkShare


def _page_latency(q: DataMovementQuantities, tensor: str, direction: str) -> int:
    """``L``: one page's round trip, to or from DRAM, or the worker cores' L1 banks for an L1-interleaved
    ``tensor`` (``model/l1_banks.py``)."""
    if direction == "write":
        return write_latency_cycles(q, tensor)
    return q.hw.dram.read_latency_cycles


def rate(q: DataMovementQuantities, tensor: str, direction: str) -> Fraction:
    """Bytes of the iteration's tiles per cycle at which one core moves ``tensor``: its page rate over the share
    ``f`` of the iteration it holds (moving ``B*b*f`` bytes at ``r`` takes as long as ``B*b`` at ``r/f``)."""
    hw, dram = q.hw, q.hw.dram
    if q.problem.program.tensor(tensor).layout == "tile":
        if in_l1_banks(q, tensor):
            r = Fraction(hw.noc.unicast_bytes_per_cycle)
        else:
            r = Fraction(dram.core_read_bytes_per_cycle if direction == "read" else dram.core_write_bytes_per_cycle)
        if waits_each_page(q.problem, q.st, tensor, q.hw.arch):  # a tile's round trip each: p / (L + p / r)
            page = q.page_bytes(tensor)
            r = Fraction(page) / (_page_latency(q, tensor, direction) + Fraction(page) / r)
    else:
        way: Direction = "read" if direction == "read" else "write"
        if waits_each_page(q.problem, q.st, tensor, q.hw.arch):
            r = waited_page_bytes_per_cycle(hw, q.page_bytes(tensor), way, _page_latency(q, tensor, direction))
        else:
            r = page_bytes_per_cycle(hw, q.page_bytes(tensor), way)
    return q.iteration_rate(tensor, r)


def read_cycles(q: DataMovementQuantities, tensor: str) -> Expr:
    """``read_X`` (module docstring)."""
    if not reads_dram(q, tensor):
        return const(0)
    lat = 0 if waits_each_page(q.problem, q.st, tensor, q.hw.arch) else _page_latency(q, tensor, "read")
    latency = select(q.depth[tensor], {1: lat, 2: lat, 3: -(-lat // 2)})
    return ceil_rate(mul(q.block, q.tile_bytes(tensor)), rate(q, tensor, "read")) + latency


def write_cycles(q: DataMovementQuantities, links: Sequence[LinkShare] = ()) -> Expr:
    """``write`` (module docstring)."""
    out = q.output
    if q.problem.placement(out).in_l1:
        return const(0)
    nbytes = mul(q.block, q.tile_bytes(out))
    return maximum(
        ceil_rate(nbytes, rate(q, out, "write")),
        *(link.cycles(q, nbytes) for link in links if link.tensor == out),
    )


def gather_cycles(q: DataMovementQuantities) -> Expr:
    """``gather`` of one block (module docstring, ``gather.py``): 0 unless the reader gathers elements."""
    if not gathers(q.problem):
        return const(0)
    out = q.output
    per_element = element_gather_cycles(q.hw, math.ceil(q.element_bytes(out)))
    per_tile = tile_gather_elements(q.problem, q.st) * per_element
    if per_tile == 0:
        return const(0)
    return ceil_rate(mul(q.block, per_tile), 1 / q.fraction(out))


def page_pipelined(q: DataMovementQuantities, c_tile: int) -> frozenset[str]:
    """The sources read page by page with a wait for each, when the compute core takes no part (``c_tile = 0``):
    the writer takes each page as it lands (one page a buffer slot, as the waited readers push them), so the
    pipeline fills with one page and drains with one page's write, not a whole block's (module docstring)."""
    if c_tile:
        return frozenset()
    return frozenset(t for t in q.streamed if reads_dram(q, t) and waits_each_page(q.problem, q.st, t, q.hw.arch))


def page_cycles(q: DataMovementQuantities, tensor: str, direction: str) -> int:
    """Cycles of one page of ``tensor`` (a tile, or a row-major row) at its rate: ``p / (rate * f)``."""
    real = rate(q, tensor, direction) * q.fraction(tensor)
    return math.ceil(Fraction(q.page_bytes(tensor)) / real)


def drain_latency_cycles(q: DataMovementQuantities) -> int:
    """``L_write`` after the last block: the output's write latency for its placement (DRAM, or the L1 banks
    of an L1-interleaved output); 0 for an output in L1, or written page by page with a wait for each (its
    latency is in every page's time already, ``barriers.py``)."""
    out = q.output
    if q.problem.placement(out).in_l1 or waits_each_page(q.problem, q.st, out, q.hw.arch):
        return 0
    return write_latency_cycles(q, out)


def data_movement_latency_terms(
    q: DataMovementQuantities, step_links: Sequence[LinkShare] = (), write_links: Sequence[LinkShare] = ()
) -> tuple[Expr, list[LatencyTerm], Expr]:
    """The objective, its named terms and a lower bound (module docstring); ``step_links`` (the reads' busiest
    NoC links, ``model/noc_bound.py``) bound the step as the other terms do."""
    hw = q.hw
    c_tile = tile_cycles(hw, q.problem, q.st)
    compute = mul(q.block, c_tile)
    reads_of = {t: read_cycles(q, t) for t in q.streamed}
    gather = gather_cycles(q)
    reads = total(reads_of.values())
    paged = page_pipelined(q, c_tile)
    fill = total(const(page_cycles(q, t, "read")) if t in paged else r for t, r in reads_of.items())
    if reads_alone(q, c_tile):  # one stage: the first read is one of the steps (stages.py)
        fill = const(0)
    exposed = total(mul(single_buffered(q, t), r) for t, r in reads_of.items())
    write = write_cycles(q, write_links)
    walk_read = total(walk_cycles(q, t, "read") for t in q.streamed)  # the slice kernels' index walk (stick_walk.py)
    walk_write = walk_cycles(q, q.output, "write")
    links = [link.cycles(q, block_bytes(q, link.tensor)) for link in step_links]
    local = local_copy_cycles(q, c_tile)  # a shard copied within each core's L1 (local_copy.py)
    shared = [chip_read_cycles(q, q.streamed), *links]  # the core's share of the chip's DRAM and its NoC links
    riscs = riscs_sharing_rows(q.problem, c_tile)  # two RISC-Vs a core (reshape_split.py)
    step = maximum(compute + exposed, reads + gather + walk_read, write + walk_write, *(shared if riscs == 1 else ()))
    last_write = (
        const(page_cycles(q, q.output, "write")) if paged and not q.problem.placement(q.output).in_l1 else write
    )
    if writes_alone(q, c_tile):  # one stage: the last write is one of the steps (stages.py)
        last_write = const(0)
    drain = last_write + drain_latency_cycles(q) + local_copy_latency_cycles(q, c_tile)
    launch = const(hw.compute.kernel_launch_cycles)
    n = q.blocks
    steady = mul(n, step) if riscs == 1 else maximum(mul(ceil_div(n, riscs), step), *(mul(n, s) for s in shared))
    objective = launch + fill + steady + local + drain
    terms = [
        LatencyTerm("launch", launch, "fixed per-op launch on the device"),
        LatencyTerm("fill", fill, "the first block (a page-by-page reader: its first page) read before any moves on"),
        LatencyTerm("compute", mul(n, compute), "the compute core re-laying or converting every tile"),
        LatencyTerm(
            "data_movement",
            steady - mul(n, compute) + local,
            "blocks where page reads, writes or shared DRAM bandwidth outlast the compute",
        ),
        LatencyTerm("write_back", drain, "the last block written to DRAM"),
    ]
    chip_floor = ceil_rate(
        total(mul(dram_readers(q, t), q.core_tiles, q.tile_bytes(t)) for t in q.streamed),
        hw.dram.chip_read_bytes_per_cycle,
    )
    gather_floor = (
        ceil_rate(mul(q.core_tiles, tile_gather_elements(q.problem, q.st)), 1 / q.fraction(q.output))
        if gathers(q.problem)
        else const(0)
    )
    per_element = element_gather_cycles(hw, math.ceil(q.element_bytes(q.output))) if gathers(q.problem) else 0
    lower = launch + fill + maximum(mul(q.core_tiles, c_tile), chip_floor, mul(gather_floor, per_element)) + local
    lower = lower + drain
    return objective, terms, lower
