"""Copy of a row-major tensor: y[H, W] = x[H, W], both stored as pages of one row (W elements) each.

Written only with the tile DSL, a data-movement program (``families/data_movement/program.py``): the rows count
one by one (``H`` has ``tile=1``: ttnn deals a row-major tensor's pages over the cores, not tile rows), and every
page is read and written as one small DRAM transaction (ttnn.clone of a row-major tensor, and the row-major
reshape, move, slice and concatenation read as such a copy). With the program option ``to_shard`` the rows are
read by ttnn's interleaved-to-sharded reader, which on Blackhole waits for every stick (docs/data_movement.md,
"What the kernels do"). With the option ``stick_walk`` the rows are moved by ttnn's row-major ``padded_slice``
reader or ``slice_write`` writer, whose RISC-V walks a multi-dimensional index in L1 for every stick's address.
With the program option ``two_riscs`` each core's rows are split over two RISC-Vs running
the same copy at once (ttnn's later row-major reshape, ``families/data_movement/reshape_split.py``).
"""

from loom_explorer.program import Dim, Move, Tensor, TileProgram

PROGRAM = TileProgram(
    name="copy_rows",
    description="y = x: x, y [H, W], row-major pages of W elements",
    example_shape="H=4096,W=256",
    dims=(
        Dim("H", "parallel", tile=1, description="rows (pages), one at a time"),
        Dim("W", "parallel", description="elements of a row"),
    ),
    tensors=(
        Tensor("x", ("H", "W"), "input", layout="row_major"),
        Tensor("y", ("H", "W"), "output", layout="row_major"),
    ),
    ops=(Move("x", "y"),),
    options=("to_shard", "stick_walk", "two_riscs"),
)
