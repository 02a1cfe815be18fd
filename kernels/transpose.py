"""Transpose of the last two dimensions: y[W, H] = x[H, W]^T, both in 32x32 tiles (ttnn.transpose(x, -2, -1)).

Written only with the tile DSL, a data-movement program (``families/data_movement/program.py``): y's access map
swaps x's two dimensions, so every tile is read from its transposed place and the compute core transposes it.
"""

from loom_explorer.program import Dim, Move, Tensor, TileProgram

PROGRAM = TileProgram(
    name="transpose",
    description="y = x^T: x [H, W], y [W, H], tiles",
    example_shape="H=2048,W=1024",
    dims=(
        Dim("H", "parallel", description="rows of x, columns of y"),
        Dim("W", "parallel", description="columns of x, rows of y"),
    ),
    tensors=(
        Tensor("x", ("H", "W"), "input"),
        Tensor("y", ("W", "H"), "output"),
    ),
    ops=(Move("x", "y"),),
)
