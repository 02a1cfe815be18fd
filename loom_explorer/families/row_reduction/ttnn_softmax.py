"""What TTNN's softmax does when a row's width is not whole tiles: the writer builds a mask tile word by word
before the compute kernel can finish its first row, and the compute kernel copies each row once more to
apply it.

TTNN's softmax factory (``softmax_program_factory_attention_optimized.cpp``, ``scale_mask_softmax_multi_core``
in ``ttnn/cpp/ttnn/operations/normalization/softmax/device/multi_core/softmax_op_multi_core.cpp`` @
04896f2e793ce65c8dfb5e9680c118bdb5b1244a) sets ``mask_padded_data`` whenever the padded width exceeds the
logical one, with ``num_datum_padded = W_padded - W`` (``p``: the padded columns of the last tile).

1. **The writer's mask tile** (``writer_unary_interleaved_start_id_blocked_sm.cpp`` @
   f9162ddecac7bbf0516c055fb04b13d07cef0dc0, ``fill_pad_tile`` in
   ``ttnn/cpp/ttnn/operations/kernel_helper_functions/pad_tile.hpp`` @ 09b4c34bfc28c388c909a45cd0440bb3d7b12650).
   Before it writes any output, the writer zeroes the mask tile with one 16-bit store per datum from its
   RISC-V (``TILE_WIDTH * TILE_HEIGHT = 1024`` stores), then stores ``-inf`` into the ``p`` padded columns of
   each of the tile's 32 rows (``fill_pad_tile<uint16_t, 32 - p, 32>``: width padding only), and pushes it.
   At the chip file's sustained store rate ``s_store`` (``compute.riscv_l1_store_cycles``: one store in five
   cycles on Wormhole, one a cycle on Blackhole) that is

       mask = (1024 + 32 * p) * s_store

   The compute kernel waits for this tile at the last tile of its first pass over its first row, and the
   writer builds it while the reader fetches that row, so compute starts after the longer of the two: the
   model's ``fill`` (the first tiles loaded before any compute) becomes ``max(fill, mask)``.
2. **A copy pass** (``softmax.cpp`` @ 766145fdcf52e4ea20feeefe474123b5fe7f493c, ``mask_padded_data``
   branch): each block of ``ndst`` tiles of a row is copied from the input's circular buffer to the
   destination registers (``copy_tile``; the last tile instead adds the mask, ``add_tiles_bcast_rows``),
   packed to an intermediate buffer, and the row's max and the rest then read that buffer. That is one
   more pass over the row's tiles: an FPU op (``c_fpu``, at least its unpack), a pack and a register
   acquire per block, as every pass of ``work.py``.

Only for the ``softmax`` program on ``KernelTarget.ttnn`` (the exported TT-Lang kernels mask nothing: the
model's problem has whole tiles of columns there), and the mask only where the chip file gives
``s_store``.
"""

from __future__ import annotations

from loom_explorer.families.row_reduction.program import RowReduction
from loom_explorer.families.row_reduction.signature import shipped_kernel
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.problem import KernelTarget, Problem

TILE_SIDE = 32  # a tile's rows and columns
TILE_DATUMS = TILE_SIDE * TILE_SIDE  # the writer's zeroing stores: one per datum of the mask tile


def padded_columns(problem: Problem, st: RowReduction) -> int:
    """``p``: the padded columns of a row's last tile when ``problem`` is TTNN's softmax (module docstring);
    0 otherwise or when the row is whole tiles."""
    if problem.target is not KernelTarget.ttnn or shipped_kernel(problem.program) != "softmax":
        return 0
    return problem.tiles(st.cols_dim) * TILE_SIDE - problem.elements(st.cols_dim)


def mask_stores(padded: int) -> int:
    """The writer's 16-bit stores to build the mask tile of ``padded`` columns: ``1024 + 32 * p``; none
    without padding."""
    return TILE_DATUMS + TILE_SIDE * padded if padded > 0 else 0


def mask_fill_cycles(hw: HardwareSpec, problem: Problem, st: RowReduction) -> int:
    """``mask = (1024 + 32 * p) * s_store`` (module docstring); 0 without padding or without ``s_store``."""
    store = hw.compute.riscv_l1_store_cycles
    if store is None:
        return 0
    return mask_stores(padded_columns(problem, st)) * store
