"""Transpose of channels and rows of a tiled tensor: y[n, h, c, w] = x[n, c, h, w] (ttnn.transpose(x, 1, 2),
TILE layout), 32x32 tiles.

Written only with the tile DSL, a data-movement program (``families/data_movement/program.py``): ``H, W`` the
input's tiles (its padded rows ``N*C*H`` and its columns), each read whole and written out face line by face
line, a row of an input tile landing in a row of another output tile. The count dimension ``F``, indexed by no
tensor, is the face-line writes over all input tiles (``families/data_movement/transpose_hc.py::
face_line_writes`` counts them from the logical shape); the cost is docs/data_movement.md's, "What the kernels
do".
"""

from loom_explorer.program import Dim, Move, Tensor, TileProgram

PROGRAM = TileProgram(
    name="transpose_hc",
    description="y = x.transpose(1, 2): x [H, W] tiles written out in F face lines",
    example_shape="H=608,W=64,F=1600",
    dims=(
        Dim("H", "parallel", description="input rows (its leading dimensions folded in)"),
        Dim("W", "parallel", description="input columns"),
        Dim("F", "parallel", tile=1, spread=False, description="face-line writes, over all input tiles"),
    ),
    tensors=(
        Tensor("x", ("H", "W"), "input"),
        Tensor("y", ("H", "W"), "output"),
    ),
    ops=(Move("x", "y"),),
)
