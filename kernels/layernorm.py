"""LayerNorm along the rows: y[H, W] = (x - mean_w x) / sqrt(var_w x + eps) * gamma[W] + beta[W].

Written only with the tile DSL, a row-reduction program (``families/row_reduction/program.py``): two reductions (the
mean, then the variance of the centred values: TTNN's two-pass form, steadier than E[x^2] - E[x]^2), then
the scale and shift. ``gamma`` and ``beta`` are row vectors, ``eps`` a scalar.
"""

from loom_explorer.program import Dim, Eltwise, Reduce, Tensor, TileProgram

PROGRAM = TileProgram(
    name="layernorm",
    description="y = (x - mean) * rsqrt(var + eps) * gamma + beta: x, y [H, W], gamma, beta [W]",
    example_shape="H=2048,W=4096",
    dims=(
        Dim("H", "parallel", description="rows (tokens)"),
        Dim("W", "reduction", description="the normalised axis (hidden size)"),
    ),
    tensors=(
        Tensor("x", ("H", "W"), "input", description="the activations"),
        Tensor("gamma", ("W",), "input", description="the scale"),
        Tensor("beta", ("W",), "input", description="the shift"),
        Tensor("eps", (), "input", description="epsilon, a scalar"),
        Tensor("mu", ("H",), "intermediate", description="row mean"),
        Tensor("c", ("H", "W"), "intermediate", description="x - mu"),
        Tensor("q", ("H", "W"), "intermediate", description="c * c"),
        Tensor("r", ("H",), "intermediate", description="rsqrt(mean(c^2) + eps)"),
        Tensor("y", ("H", "W"), "output", description="the normalised activations"),
    ),
    ops=(
        Reduce("mean", "mu", operand="x"),
        Eltwise("sub", "c", unit="fpu", operand="mu", source="x"),
        Eltwise("mul", "q", unit="fpu", operand="c", source="c"),
        Reduce("mean", "r", operand="q"),
        Eltwise("add", "r", unit="fpu", operand="eps"),
        Eltwise("rsqrt", "r"),
        Eltwise("mul", "y", unit="fpu", operand="r", source="c"),
        Eltwise("mul", "y", unit="fpu", operand="gamma"),
        Eltwise("add", "y", unit="fpu", operand="beta"),
    ),
)
