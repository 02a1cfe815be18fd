"""One activation over a 2-D tensor: y[H, W] = f(x[H, W]), f chosen with ``--activation`` (relu, gelu,
silu, exp, recip: the SFPU ops the hardware file costs in ``compute.sfpu_tile_cycles``).

Written only with the tile DSL: no matmul and no reduction, so it is an element-wise program
(``families/elementwise/program.py``). Where the work goes is the question: a ``32 x 4096`` tensor is one row of
128 tiles, so a split over rows puts it on one core and a split over columns (or over all tiles) spreads it.
"""

from loom_explorer.program import Dim, Eltwise, Tensor, TileProgram

PROGRAM = TileProgram(
    name="unary",
    description="y = f(x), f the --activation: x, y [H, W]",
    example_shape="H=32,W=4096",
    dims=(
        Dim("H", "parallel", description="rows"),
        Dim("W", "parallel", description="columns"),
    ),
    tensors=(
        Tensor("x", ("H", "W"), "input", description="the input"),
        Tensor("y", ("H", "W"), "output", description="f(x)"),
    ),
    ops=(Eltwise("activation", "y", unit="sfpu", operand="x"),),
)
