"""A tensor and a row broadcast down it, with SFPU ops on the result: y[H, W] = f(a[H, W] + b[W]), f chosen
with ``--activation`` (one SFPU op, or several chained: ``--activation relu+exp``).

Written only with the tile DSL, an element-wise program (``families/elementwise/program.py``): ``b`` is indexed
by the columns only; each output tile costs one FPU op and f's SFPU ops (``ttnn.divide(a, b)`` of a row ``b``
is costed so: docs/elementwise.md).
"""

from loom_explorer.program import Dim, Eltwise, Tensor, TileProgram

PROGRAM = TileProgram(
    name="binary_row_act",
    description="y = f(a + b[W]), f the --activation: a, y [H, W], b [W]",
    example_shape="H=2048,W=4096",
    dims=(
        Dim("H", "parallel", description="rows"),
        Dim("W", "parallel", description="columns"),
    ),
    tensors=(
        Tensor("a", ("H", "W"), "input", description="the tensor"),
        Tensor("b", ("W",), "input", description="the row broadcast down every row of a"),
        Tensor("y", ("H", "W"), "output", description="f(a + b)"),
    ),
    ops=(
        Eltwise("add", "y", unit="fpu", operand="b"),
        Eltwise("activation", "y"),
    ),
)
