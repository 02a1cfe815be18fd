"""The latency of ttnn's tiled transpose of channels and rows (``ttnn.transpose(x, 1, 2)`` on TILE tensors,
``TransposeOpDim::HC``): each input tile read and waited for, then scattered face line by face line.

ttnn takes ``TransposeHCTiledInterleavedProgramFactory`` for a tiled interleaved HC transpose
(tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/data_movement/transpose/device/
transpose_device_operation.cpp::select_program_factory`` @00b0fa3f). It deals the input's tiles over the grid
(``split_work_to_cores``: ``ttnn.py``, flattened, one tile a block); per tile, its reader
(``kernels/dataflow/reader_unary_transpose_hc_interleaved_tiled_padding_aware.cpp`` @022c2361) reads it and
waits (``async_read`` then ``async_read_barrier``), and its writer
(``writer_unary_transpose_hc_interleaved_tiled_padding_aware.cpp`` @0d1a31f5) writes every real row of the
tile's two face columns to its place in the output as its own NoC write of one face line (16 elements: the
row ``c`` of an input tile becomes a row of another output tile), then waits for them all
(``async_write_barrier``) before it frees the tile. When the channels ``C`` are not whole tiles the writer then
fills the output's padding rows, a write per face of them. The two share a one-tile turn: per input tile,
with ``f = F / T_x`` face-line writes (``kernels/transpose_hc.py``: ``F`` over all ``T_x`` input tiles, the
padding writes counted with them),

    c_tile = L_read + b / r_read + f * c_line + L_write

``c_line`` the cycles of one write transaction of a face line at the published small-transaction rate
(``reshape.py::segment_cycles``, the packet-size table of ``pages.py``), ``L_read``/``L_write`` and ``r`` as
``reshape.py``'s. The terms are ``reshape.py``'s ``serial_tile_terms``.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from loom_explorer.families.data_movement.quantities import DataMovementQuantities
from loom_explorer.families.data_movement.reshape import count_dims, segment_cycles, serial_tile_terms, tile_rate
from loom_explorer.model.expr import Expr
from loom_explorer.model.latency import write_latency_cycles
from loom_explorer.model.schedule import LatencyTerm
from loom_explorer.program.dsl import TileProgram

if TYPE_CHECKING:
    from loom_explorer.model.noc_bound import LinkShare

FACE_LINES = "F"  # kernels/transpose_hc.py: face-line writes over all input tiles
TILE = 32
FACE = 16


def scatters(program: TileProgram) -> bool:
    """Whether ``program`` is a tiled HC transpose: its one count dimension is ``F`` (``kernels/
    transpose_hc.py``)."""
    return count_dims(program) == {FACE_LINES}


def face_line_writes(n: int, c: int, h: int, w: int) -> int:
    """``F`` of a transpose of the logical ``[n, c, h, w]``: each input tile's real rows (``min(32, h - 32 ht)``)
    times its two face columns, ``2 * n * c * h * ceil(w / 32)`` over all tiles; with ``c % 32 != 0``, the
    padding: for each ``(n, h, w tile)`` one write per face of the last channel tile from the first face holding
    padding, two face columns each, ``2 * (2 - (c % 32) // 16) * n * h * ceil(w / 32)``."""
    wt = -(-w // TILE)
    lines = 2 * n * c * h * wt
    if c % TILE:
        lines += 2 * (2 - (c % TILE) // FACE) * n * h * wt
    return lines


def tile_cycles(q: DataMovementQuantities) -> Fraction:
    """``c_tile`` of one input tile (module docstring)."""
    problem, hw = q.problem, q.hw
    (source,) = q.streamed
    tiles = problem.tiles("H") * problem.tiles("W")
    lines = Fraction(problem.elements(FACE_LINES), tiles)
    read = hw.dram.read_latency_cycles + Fraction(q.tile_bytes(source)) / tile_rate(q, source, "read")
    return read + lines * segment_cycles(q) + write_latency_cycles(q, q.output)


def transpose_hc_latency_terms(
    q: DataMovementQuantities, step_links: Sequence[LinkShare] = ()
) -> tuple[Expr, list[LatencyTerm], Expr]:
    """The objective, its named terms and a lower bound of a tiled HC transpose (module docstring)."""
    return serial_tile_terms(q, tile_cycles(q), "each input tile read and waited for, then written face line by line")
