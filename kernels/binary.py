"""Element-wise sum of two 2-D tensors: y[H, W] = a[H, W] + b[H, W] (a residual add).

Written only with the tile DSL, an element-wise program (``families/elementwise/program.py``): each output tile
reads one tile of ``a`` and one of ``b`` and costs one FPU add. For broadcasting, index ``b`` by fewer
dimensions (``b[W]``: a row added to every row); docs/dsl.md shows it.
"""

from loom_explorer.program import Dim, Eltwise, Tensor, TileProgram

PROGRAM = TileProgram(
    name="binary",
    description="y = a + b: a, b, y [H, W]",
    example_shape="H=2048,W=4096",
    dims=(
        Dim("H", "parallel", description="rows"),
        Dim("W", "parallel", description="columns"),
    ),
    tensors=(
        Tensor("a", ("H", "W"), "input", description="first operand"),
        Tensor("b", ("H", "W"), "input", description="second operand"),
        Tensor("y", ("H", "W"), "output", description="a + b"),
    ),
    ops=(Eltwise("add", "y", unit="fpu", operand="b"),),  # y starts as a, the input no op names
)
