"""A tensor and a row broadcast down it: y[H, W] = a[H, W] + b[W] (a bias row, a per-channel scale).

Written only with the tile DSL, an element-wise program (``families/elementwise/program.py``): ``b`` is indexed
by the columns only, so the same row of tiles serves every row of ``a``; each output tile costs one FPU op.
"""

from loom_explorer.program import Dim, Eltwise, Tensor, TileProgram

PROGRAM = TileProgram(
    name="binary_row",
    description="y = a + b[W]: a, y [H, W], b [W]",
    example_shape="H=2048,W=4096",
    dims=(
        Dim("H", "parallel", description="rows"),
        Dim("W", "parallel", description="columns"),
    ),
    tensors=(
        Tensor("a", ("H", "W"), "input", description="the tensor"),
        Tensor("b", ("W",), "input", description="the row broadcast down every row of a"),
        Tensor("y", ("H", "W"), "output", description="a + b"),
    ),
    ops=(Eltwise("add", "y", unit="fpu", operand="b"),),
)
