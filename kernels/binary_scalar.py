"""A tensor and a scalar: y[H, W] = a[H, W] + s (``ttnn.multiply(x, 0.125)``, ``ttnn.add(x, 1.0)``).

Written only with the tile DSL, an element-wise program (``families/elementwise/program.py``): ``s`` is indexed
by no dimension, so it is one tile held for the whole kernel; each output tile reads one tile of ``a`` and
costs one FPU op.
"""

from loom_explorer.program import Dim, Eltwise, Tensor, TileProgram

PROGRAM = TileProgram(
    name="binary_scalar",
    description="y = a + s: a, y [H, W], s a scalar",
    example_shape="H=2048,W=4096",
    dims=(
        Dim("H", "parallel", description="rows"),
        Dim("W", "parallel", description="columns"),
    ),
    tensors=(
        Tensor("a", ("H", "W"), "input", description="the tensor"),
        Tensor("s", (), "input", description="the scalar"),
        Tensor("y", ("H", "W"), "output", description="a + s"),
    ),
    ops=(Eltwise("add", "y", unit="fpu", operand="s"),),
)
