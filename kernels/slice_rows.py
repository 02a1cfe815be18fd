"""Slice of a row-major tensor along its rows' elements: y[H, Wy] (row-major pages of Wy elements) from x[H, W]
(row-major pages of W elements), ``Wy`` a part of ``W``.

Written only with the tile DSL, a data-movement program (``families/data_movement/program.py``): the rows count
one by one (``H`` has ``tile=1``: ttnn deals a row-major tensor's pages over the cores), every input row is read
whole and its output row written once. With the program option ``strided`` the output takes every
``W / Wy``-th element of each input row (``ttnn.slice`` with a step along the last dimension): ttnn's reader
gathers those elements on its data-movement RISC-V, byte by byte through L1 (docs/data_movement.md, "What the
kernels do"). Without it, the output is the leading ``Wy`` elements of each row, costed as reading whole input
rows (an upper bound: ttnn's unit-step slice reads only the kept bytes of each page).
"""

from loom_explorer.program import Dim, Move, Tensor, TileProgram

PROGRAM = TileProgram(
    name="slice_rows",
    description="y = x[:, ::W/Wy] (strided) or x[:, :Wy]: x [H, W], y [H, Wy], row-major pages",
    example_shape="H=4096,W=512,Wy=256",
    dims=(
        Dim("H", "parallel", tile=1, description="rows (pages), one at a time"),
        Dim("W", "parallel", description="elements of an input row (its page)"),
        Dim("Wy", "parallel", part_of="W", description="elements of an output row (its page)"),
    ),
    tensors=(
        Tensor("x", ("H", "W"), "input", layout="row_major"),
        Tensor("y", ("H", "Wy"), "output", layout="row_major"),
    ),
    ops=(Move("x", "y"),),
    options=("strided",),
)
