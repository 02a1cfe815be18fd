"""A binary op with SFPU ops on its result: y[H, W] = f(a[H, W] + b[H, W]), f chosen with ``--activation``
(one SFPU op, or several chained on each tile: ``--activation relu+exp``).

Written only with the tile DSL, an element-wise program (``families/elementwise/program.py``): each output tile
costs one FPU op and f's SFPU ops. It is how ttnn's ``binary_ng`` runs a binary with fused activations
(``ttnn.add(a, b, activations=[RELU])``) and the binary ops it builds from an FPU op and SFPU ops (``ttnn.ge``
is a subtract then ``gez``; docs/elementwise.md lists them).
"""

from loom_explorer.program import Dim, Eltwise, Tensor, TileProgram

PROGRAM = TileProgram(
    name="binary_act",
    description="y = f(a + b), f the --activation: a, b, y [H, W]",
    example_shape="H=2048,W=4096",
    dims=(
        Dim("H", "parallel", description="rows"),
        Dim("W", "parallel", description="columns"),
    ),
    tensors=(
        Tensor("a", ("H", "W"), "input", description="first operand"),
        Tensor("b", ("H", "W"), "input", description="second operand"),
        Tensor("y", ("H", "W"), "output", description="f(a + b)"),
    ),
    ops=(
        Eltwise("add", "y", unit="fpu", operand="b"),  # y starts as a, the input no op names
        Eltwise("activation", "y"),
    ),
)
