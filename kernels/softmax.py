"""Softmax along the rows: y[H, W] = exp(x - max_w x) / sum_w exp(x - max_w x), numerically stable.

Written only with the tile DSL, a row-reduction program (``families/row_reduction/program.py``): two reductions over
W (the row max, then the row sum of the exponentials) and the element-wise passes between them, as TTNN's
softmax kernel runs them. Rows are independent; a row split over several cores gathers each reduction's
partial results (``softmax`` of attention scores, ``32 x 32768`` in decode, is one row of tiles).

Option ``unstable``: TTNN's ``numeric_stable=False`` softmax takes ``exp(x)`` without the row max, so it
skips the max reduction (the program's ops are the same; its cost model drops that pass).
"""

from loom_explorer.program import Dim, Eltwise, Reduce, Tensor, TileProgram

PROGRAM = TileProgram(
    name="softmax",
    description="y = softmax(x) along W: x, y [H, W]",
    example_shape="H=2048,W=2048",
    options=("unstable",),
    dims=(
        Dim("H", "parallel", description="rows"),
        Dim("W", "reduction", description="the softmax axis"),
    ),
    tensors=(
        Tensor("x", ("H", "W"), "input", description="the scores"),
        Tensor("m", ("H",), "intermediate", description="row max"),
        Tensor("e", ("H", "W"), "intermediate", description="exp(x - m)"),
        Tensor("s", ("H",), "intermediate", description="1 / row sum of e"),
        Tensor("y", ("H", "W"), "output", description="softmax(x)"),
    ),
    ops=(
        Reduce("max", "m", operand="x"),
        Eltwise("sub", "e", unit="fpu", operand="m", source="x"),
        Eltwise("exp", "e"),
        Reduce("sum", "s", operand="e"),
        Eltwise("recip", "s"),
        Eltwise("mul", "y", unit="fpu", operand="s", source="e"),
    ),
)
