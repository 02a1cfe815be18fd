"""RMSNorm along the rows: y[H, W] = x / sqrt(mean_w(x^2) + eps) * gamma[W] (Llama's norm).

Written only with the tile DSL, a row-reduction program (``families/row_reduction/program.py``): one reduction (the
mean of squares), then the scale, as TTNN's ``rms_norm`` runs it. ``gamma`` is a row vector, the same for
every row; ``eps`` a scalar. A decode step's ``32 x 4096`` is one row of tiles, so only a split of its
columns over cores (partials gathered, as TTNN's width-sharded norm does) spreads the work.
"""

from loom_explorer.program import Dim, Eltwise, Reduce, Tensor, TileProgram

PROGRAM = TileProgram(
    name="rmsnorm",
    description="y = x * rsqrt(mean(x^2) + eps) * gamma: x, y [H, W], gamma [W]",
    example_shape="H=2048,W=4096",
    dims=(
        Dim("H", "parallel", description="rows (tokens)"),
        Dim("W", "reduction", description="the normalised axis (hidden size)"),
    ),
    tensors=(
        Tensor("x", ("H", "W"), "input", description="the activations"),
        Tensor("gamma", ("W",), "input", description="the scale"),
        Tensor("eps", (), "input", description="epsilon, a scalar"),
        Tensor("q", ("H", "W"), "intermediate", description="x * x"),
        Tensor("r", ("H",), "intermediate", description="rsqrt(mean(x^2) + eps)"),
        Tensor("y", ("H", "W"), "output", description="the normalised activations"),
    ),
    ops=(
        Eltwise("mul", "q", unit="fpu", operand="x", source="x"),
        Reduce("mean", "r", operand="q"),
        Eltwise("add", "r", unit="fpu", operand="eps"),
        Eltwise("rsqrt", "r"),
        Eltwise("mul", "y", unit="fpu", operand="r", source="x"),
        Eltwise("mul", "y", unit="fpu", operand="gamma"),
    ),
)
