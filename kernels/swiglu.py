"""SwiGLU's gate: y[H, W] = silu(a) * b, the element-wise product of a feed-forward layer's two
projections (Llama's MLP multiplies silu(x @ w1) by x @ w3).

Written only with the tile DSL, an element-wise program (``families/elementwise/program.py``): silu of ``a`` on the
SFPU, then a multiply by ``b`` on the FPU.
"""

from loom_explorer.program import Dim, Eltwise, Tensor, TileProgram

PROGRAM = TileProgram(
    name="swiglu",
    description="y = silu(a) * b: a, b, y [H, W]",
    example_shape="H=2048,W=14336",
    dims=(
        Dim("H", "parallel", description="rows (tokens)"),
        Dim("W", "parallel", description="columns (the feed-forward width)"),
    ),
    tensors=(
        Tensor("a", ("H", "W"), "input", description="the gate projection"),
        Tensor("b", ("H", "W"), "input", description="the up projection"),
        Tensor("y", ("H", "W"), "output", description="silu(a) * b"),
    ),
    ops=(
        Eltwise("silu", "y", operand="a"),
        Eltwise("mul", "y", unit="fpu", operand="b"),
    ),
)
