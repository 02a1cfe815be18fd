"""Tilize with padding: y[H, W] (32x32 tiles) = x[Hx, Wx] (row-major pages), padded with zeros to H x W.

Written only with the tile DSL, a data-movement program (``families/data_movement/program.py``): ``Hx`` and ``Wx``
are parts of ``H`` and ``W`` (they default to them: no padding, ``ttnn.tilize``; smaller, it is
``ttnn.tilize_with_val_padding``). x is read as pages of one row (``Wx`` elements) each, and the compute core
tilizes every tile.
"""

from loom_explorer.program import Dim, Move, Tensor, TileProgram

PROGRAM = TileProgram(
    name="tilize",
    description="y = tilize(pad(x)): x [Hx, Wx] row-major, y [H, W] tiles (Hx <= H, Wx <= W)",
    example_shape="H=4096,W=1024",
    dims=(
        Dim("H", "parallel", description="rows of the tiled output (padded)"),
        Dim("Hx", "parallel", part_of="H", description="rows of the row-major input"),
        Dim("W", "parallel", description="columns of the tiled output (padded)"),
        Dim("Wx", "parallel", part_of="W", description="columns of the row-major input (its page)"),
    ),
    tensors=(
        Tensor("x", ("Hx", "Wx"), "input", layout="row_major", description="row-major pages of Wx elements"),
        Tensor("y", ("H", "W"), "output", description="tiles"),
    ),
    ops=(Move("x", "y"),),
)
