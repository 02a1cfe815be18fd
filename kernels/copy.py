"""Copy of a tiled tensor: y[H, W] = x[H, W], 32x32 tiles (ttnn.clone; with --format x=...,y=... a typecast).

Written only with the tile DSL, a data-movement program (``families/data_movement/program.py``): the reader and
writer move the tiles as they are; only a change of data format passes each tile through the compute core.
With the program option ``waited`` the reader waits for each tile before it issues the next (a NoC read
barrier per tile, as ttnn's ``nlp_create_qkv_heads`` and ``nlp_concat_heads`` readers do: docs/
data_movement.md, "What the kernels do").
"""

from loom_explorer.program import Dim, Move, Tensor, TileProgram

PROGRAM = TileProgram(
    name="copy",
    description="y = x: x, y [H, W], tiles",
    example_shape="H=4096,W=1024",
    dims=(
        Dim("H", "parallel", description="rows"),
        Dim("W", "parallel", description="columns"),
    ),
    tensors=(
        Tensor("x", ("H", "W"), "input"),
        Tensor("y", ("H", "W"), "output"),
    ),
    ops=(Move("x", "y"),),
    options=("waited",),
)
