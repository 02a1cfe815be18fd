"""Untilize with unpadding: y[Hy, Wy] (row-major pages) = the leading Hy x Wy elements of x[H, W] (32x32 tiles).

Written only with the tile DSL, a data-movement program (``families/data_movement/program.py``): ``Hy`` and ``Wy``
are parts of ``H`` and ``W`` (they default to them: ``ttnn.untilize``; smaller, it is
``ttnn.untilize_with_unpadding``). The compute core untilizes every tile, and y is written as pages of one row
(``Wy`` elements) each.
"""

from loom_explorer.program import Dim, Move, Tensor, TileProgram

PROGRAM = TileProgram(
    name="untilize",
    description="y = untilize(x) cut to Hy x Wy: x [H, W] tiles, y [Hy, Wy] row-major (Hy <= H, Wy <= W)",
    example_shape="H=4096,W=1024",
    dims=(
        Dim("H", "parallel", description="rows of the tiled input"),
        Dim("Hy", "parallel", part_of="H", description="rows of the row-major output"),
        Dim("W", "parallel", description="columns of the tiled input"),
        Dim("Wy", "parallel", part_of="W", description="columns of the row-major output (its page)"),
    ),
    tensors=(
        Tensor("x", ("H", "W"), "input", description="tiles"),
        Tensor("y", ("Hy", "Wy"), "output", layout="row_major", description="row-major pages of Wy elements"),
    ),
    ops=(Move("x", "y"),),
)
