"""What each output tile of ttnn's tiled reshape gathers: the input tiles it reads and the segments it copies.

ttnn's tiled reshape (``ReshapeDeviceOperation`` on TILE tensors whose logical shapes differ past a
view) maps every output tile to pieces of input tiles on the host (tenstorrent/tt-metal
``ttnn/cpp/ttnn/operations/data_movement/reshape_view/reshape_kernel_common.hpp`` @ its 2025 versions,
``reshape_map_output_page``): both shapes squeezed to rank 3 ``[C, H, W]``, it walks the output tile's real
elements row by row (``TileIterator``: ``min(32, H - h0)`` rows of ``min(32, W - w0)`` elements), maps each to
its input element through the flat (row-major) index, and groups the elements by input tile (a ``std::map``
keyed by the input page), extending a *segment* while the input page is the same and both the input and
the output offsets in their faced tiles (four 16x16 faces, row-major within a face) step by one. So, per
output tile,

* ``G`` = the distinct input tiles its elements come from (each read once: the reader walks the map's
  entries in input-page order and skips a page equal to the previous one);
* ``S`` = its segments: a run of at most one face row (16 elements), cut where the input crosses a face
  column, a row or a tile.

This module counts both exactly for given logical shapes, over every output tile (numpy, a chunk of output
tiles at a time), and returns their totals over the output tiles (``kernels/reshape.py``'s ``G`` and ``S``;
``reshape.py`` costs their means per output tile).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

TILE = 32
FACE = 16
CHUNK_ELEMENTS = 1 << 20  # output elements mapped at once (memory bound of the count, not a model constant)


@dataclass(frozen=True)
class ReshapeGather:
    """Over all ``output_tiles``: ``input_reads`` (``G``, each output tile's distinct input tiles, summed) and
    ``segments`` (``S``)."""

    output_tiles: int
    input_reads: int
    segments: int


def rank3(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """``[C, H, W]``: the leading dimensions folded into the first, as ttnn's reshape squeezes them."""
    if len(shape) < 2:
        return 1, 1, shape[-1] if shape else 1
    return math.prod(shape[:-2]), shape[-2], shape[-1]


def _faced_offset(h: np.ndarray, w: np.ndarray) -> np.ndarray:
    """An element's offset in its tile: face ``(h%32//16, w%32//16)`` of four, row-major within the face."""
    th, tw = h % TILE, w % TILE
    offset: np.ndarray = ((th // FACE) * 2 + tw // FACE) * FACE * FACE + (th % FACE) * FACE + tw % FACE
    return offset


@cache
def reshape_gather(input_shape: tuple[int, ...], output_shape: tuple[int, ...]) -> ReshapeGather:
    """``G`` and ``S`` of the reshape of ``input_shape`` into ``output_shape`` (logical shapes; module
    docstring)."""
    ci, hi, wi = rank3(input_shape)
    co, ho, wo = rank3(output_shape)
    if ci * hi * wi != co * ho * wo:
        raise ValueError(f"a reshape keeps the volume: {input_shape} into {output_shape}")
    hti, wti = -(-hi // TILE), -(-wi // TILE)
    hto, wto = -(-ho // TILE), -(-wo // TILE)
    tiles = co * hto * wto
    per_chunk = max(1, CHUNK_ELEMENTS // (TILE * TILE))
    reads = segments = 0
    r = np.arange(TILE).repeat(TILE)  # row of each element of a tile, in the walk's order
    c = np.tile(np.arange(TILE), TILE)
    for start in range(0, tiles, per_chunk):
        page = np.arange(start, min(tiles, start + per_chunk))
        cc, rest = page // (hto * wto), page % (hto * wto)
        h = ((rest // wto) * TILE)[:, None] + r[None, :]
        w = ((rest % wto) * TILE)[:, None] + c[None, :]
        real = (h < ho) & (w < wo)
        flat = cc[:, None] * (ho * wo) + h * wo + w
        c_in, hw_in = flat // (hi * wi), flat % (hi * wi)
        h_in, w_in = hw_in // wi, hw_in % wi
        page_in = c_in * (hti * wti) + (h_in // TILE) * wti + w_in // TILE
        off_in, off_out = _faced_offset(h_in, w_in), _faced_offset(h, w)
        big = np.iinfo(np.int64).max
        page_in = np.where(real, page_in, big)
        for row in range(page.size):  # the walk of one output tile: its real elements in order
            keep = real[row]
            p, oi, oo = page_in[row][keep], off_in[row][keep], off_out[row][keep]
            reads += np.unique(p).size
            joins = (p[1:] == p[:-1]) & (oi[1:] - oi[:-1] == 1) & (oo[1:] - oo[:-1] == 1)
            segments += p.size - int(joins.sum())
    return ReshapeGather(output_tiles=tiles, input_reads=reads, segments=segments)
