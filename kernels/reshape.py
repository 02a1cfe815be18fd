"""Tiled reshape: y[H, W] gathered from the tiles of x, the same elements in another shape (ttnn.reshape of
TILE tensors whose logical shapes differ past a view), 32x32 tiles.

Written only with the tile DSL, a data-movement program (``families/data_movement/program.py``): ``H, W`` the
output's tiles (its padded rows ``C*H`` and columns), each gathered from pieces of input tiles. Two count
dimensions, indexed by no tensor, carry what the reshape's map makes of the two shapes
(``families/data_movement/reshape_map.py`` counts them from the logical shapes): ``G`` the input tiles read
over all output tiles (one read for each distinct input tile an output tile takes elements from), ``S`` the
segments copied over all output tiles (runs of at most one face row). The cost of each is docs/
data_movement.md's, "What the kernels do".
"""

from loom_explorer.program import Dim, Move, Tensor, TileProgram

PROGRAM = TileProgram(
    name="reshape",
    description="y = reshape(x): y [H, W] tiles gathered from G input tile reads in S face-row segments",
    example_shape="H=608,W=64,G=760,S=1520",
    dims=(
        Dim("H", "parallel", description="output rows (its leading dimensions folded in)"),
        Dim("W", "parallel", description="output columns"),
        Dim("G", "parallel", tile=1, spread=False, description="input tile reads, over all output tiles"),
        Dim("S", "parallel", tile=1, spread=False, description="segments copied, over all output tiles"),
    ),
    tensors=(
        Tensor("x", ("H", "W"), "input"),
        Tensor("y", ("H", "W"), "output"),
    ),
    ops=(Move("x", "y"),),
)
