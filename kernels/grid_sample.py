"""A bilinear grid sample: y[P, C] = sum of the 4 input rows around point p, weighted (``ttnn.grid_sample``).

Written only with the tile DSL, a gather program (``families/gather/program.py``): the input image is a table
of rows ``R`` (its N*H*W pixels, each a row of C channels, row-major NHWC); each output point reads the four
neighbours its grid coordinates name, and ``grid`` carries their row numbers and weights (ttnn's precomputed
grid).
"""

from loom_explorer.program import Dim, Gather, Tensor, TileProgram

PROGRAM = TileProgram(
    name="grid_sample",
    description="y = bilinear sample of x at grid points: x [R, C] (NHWC pixels), grid [P], y [P, C]",
    example_shape="P=9856,C=256,R=7680",
    dims=(
        Dim("P", "parallel", tile=1, description="output points"),
        Dim("C", "parallel", description="channels"),
        Dim("R", "parallel", tile=1, description="input pixels (N*H*W), selected by the grid"),
    ),
    tensors=(
        Tensor("x", ("R", "C"), "input", description="the input image, one row per pixel"),
        Tensor("grid", ("P",), "input", description="per point, its four neighbours' rows and weights"),
        Tensor("y", ("P", "C"), "output", description="the sampled points"),
    ),
    ops=(Gather("y", "x", "grid", rows=4),),
)
