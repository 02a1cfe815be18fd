"""The latency of ttnn's tiled reshape: each output tile's map page, input tiles and segments, one at a time.

ttnn's tiled reshape (tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/data_movement/reshape_view/device/``,
``host/reshape_tiled_program_factory.cpp`` and ``device/dataflow/{reader,writer}_reshape_tiled.cpp``, the 2025
versions) deals the output tiles over the grid with ``split_work_to_cores`` (``ttnn.py``: flattened, one tile a
block) and, for each output tile of a core:

* the reader reads the tile's map page (``noc_async_read`` then ``noc_async_read_barrier``), then each
  distinct input tile the map names, one at a time, each with a barrier, into a one-tile circular buffer
  (``reader_cb_len = 1``);
* the writer, for each input tile, copies its segments into a scratch tile with ``tt_memmove`` (a NoC write to
  its own L1 per segment), waits for them (``noc_async_write_barrier``) and pops the tile, so the reader can
  read the next; last it writes the scratch tile to the output and waits for that write.

The one-tile buffers make reader and writer take turns: nothing overlaps. Per output tile, with ``g = G/T_y``
input tiles and ``s = S/T_y`` segments (``kernels/reshape.py``: the totals over the ``T_y`` output tiles,
``reshape_map.py``), ``b`` the tile's bytes:

    c_tile = L_read                                   the map page, waited for
           + g * (L_read + b / r_read + L_noc)        each input tile read and waited for, its segments' writes
                                                      waited for before the tile is freed
           + s * c_seg                                each segment, one NoC write of a face row (16 elements)
           + b / r_write + L_write                    the output tile written and waited for

``L_read`` and ``L_write`` the page latencies (``latency.py``: DRAM, or the L1 banks for an L1-interleaved
output), ``r`` the tile rates (``dram.core_read_bytes_per_cycle`` / ``core_write_bytes_per_cycle``, the NoC's
unicast rate for an L1-interleaved tensor), ``L_noc = noc.transaction_latency_cycles`` (the round trip of a
write to the core's own L1), ``c_seg`` the cycles of one write transaction of a face row at the published
small-transaction rate (``pages.py``: the packet-size table's cost of a transaction that size, an estimate for
a write into the core's own L1). A segment whose source and destination differ in their 16-byte alignment is
copied by the RISC-V instead (``memmove``): not modelled (a face row's segments start 16-byte aligned when
whole rows move).

A core of ``T`` output tiles takes ``T * c_tile``: the terms are ``launch``, ``compute = 0`` (no compute
kernel), ``data_movement = n * ceil(B * c_tile)`` and ``fill = write_back = 0`` (every tile's reads and write
are in its own turn: there is no pipeline to fill or drain).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from loom_explorer.families.data_movement.pages import page_bytes_per_cycle
from loom_explorer.families.data_movement.quantities import DataMovementQuantities
from loom_explorer.model.expr import Expr, ceil_div, const, mul
from loom_explorer.model.l1_banks import in_l1_banks
from loom_explorer.model.latency import write_latency_cycles
from loom_explorer.model.schedule import LatencyTerm
from loom_explorer.program.dsl import TileProgram

if TYPE_CHECKING:
    from loom_explorer.model.noc_bound import LinkShare

INPUT_READS = "G"  # kernels/reshape.py: input tile reads over all output tiles
SEGMENTS = "S"  # segments copied over all output tiles
FACE_ROW_ELEMENTS = 16


def count_dims(program: TileProgram) -> frozenset[str]:
    """The program's count dimensions: the dimensions no tensor indexes (a count a kernel's cost reads)."""
    indexed = {d for t in program.tensors for d in t.dims}
    return frozenset(d.name for d in program.dims if d.name not in indexed)


def remaps(program: TileProgram) -> bool:
    """Whether ``program`` is a tiled reshape: its count dimensions are ``G`` and ``S`` (``kernels/
    reshape.py``)."""
    return count_dims(program) == {INPUT_READS, SEGMENTS}


def tile_rate(q: DataMovementQuantities, tensor: str, direction: str) -> Fraction:
    """A tile's streamed rate: the NoC's unicast rate in the L1 banks, else the core's DRAM rate."""
    if in_l1_banks(q, tensor):
        return Fraction(q.hw.noc.unicast_bytes_per_cycle)
    dram = q.hw.dram
    return Fraction(dram.core_read_bytes_per_cycle if direction == "read" else dram.core_write_bytes_per_cycle)


def segment_cycles(q: DataMovementQuantities) -> Fraction:
    """``c_seg``: one write transaction of a face row of the output's elements (module docstring), at the
    packet-size table's cost of a transaction that size."""
    nbytes = max(1, int(FACE_ROW_ELEMENTS * q.element_bytes(q.output)))
    return Fraction(nbytes) / page_bytes_per_cycle(q.hw, nbytes, "write")


def tile_cycles(q: DataMovementQuantities) -> Fraction:
    """``c_tile`` of one output tile (module docstring)."""
    hw, problem = q.hw, q.problem
    (source,) = q.streamed
    out_tiles = problem.tiles("H") * problem.tiles("W")
    reads = Fraction(problem.elements(INPUT_READS), out_tiles)
    segments = Fraction(problem.elements(SEGMENTS), out_tiles)
    l_read = hw.dram.read_latency_cycles
    read = l_read + Fraction(q.tile_bytes(source)) / tile_rate(q, source, "read") + hw.noc.transaction_latency_cycles
    write = Fraction(q.tile_bytes(q.output)) / tile_rate(q, q.output, "write") + write_latency_cycles(q, q.output)
    return l_read + reads * read + segments * segment_cycles(q) + write


def reshape_latency_terms(
    q: DataMovementQuantities, step_links: Sequence[LinkShare] = ()
) -> tuple[Expr, list[LatencyTerm], Expr]:
    """The objective, its named terms and a lower bound of a tiled reshape (module docstring); ``step_links``
    are not used: one tile at a time, each waited for, leaves no stream to share a link with."""
    return serial_tile_terms(
        q, tile_cycles(q), "each output tile's map page, input tiles and segments, and its write, one after another"
    )


def serial_tile_terms(
    q: DataMovementQuantities, cycles_per_tile: Fraction, what: str
) -> tuple[Expr, list[LatencyTerm], Expr]:
    """The terms of a kernel whose tiles take their turns, ``cycles_per_tile`` each (``what`` says what a tile's turn
    holds): ``launch + n * ceil(B * c_tile)``, all of it ``data_movement`` (module docstring)."""
    per_tile = cycles_per_tile.limit_denominator(1000)
    launch = const(q.hw.compute.kernel_launch_cycles)
    step = ceil_div(mul(q.block, per_tile.numerator), per_tile.denominator)
    moves = mul(q.blocks, step)
    zero = const(0)
    terms = [
        LatencyTerm("launch", launch, "fixed per-op launch on the device"),
        LatencyTerm("fill", zero, "none: each tile's reads and writes take their own turn"),
        LatencyTerm("compute", zero, "none: the reader and writer move the pieces"),
        LatencyTerm("data_movement", moves, what),
        LatencyTerm("write_back", zero, "none: every tile's writes are waited for in its turn"),
    ]
    lower = launch + ceil_div(mul(q.core_tiles, per_tile.numerator), per_tile.denominator)
    return launch + moves, terms, lower
