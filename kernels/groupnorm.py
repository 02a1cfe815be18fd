"""GroupNorm: y = (x - mean_g x) / sqrt(var_g x + eps) * gamma + beta, the statistics of each group of channels.

Written only with the tile DSL, a row-reduction program (``families/row_reduction/program.py``) over one row per
group: ``G`` (parallel, ``tile=1``) is the groups (times the batch), ``E`` (reduction) a group's elements as
ttnn's kernel visits them, its spatial rows times the tile columns its channels span (``E = HW * span``,
counted in tiles of 32 rows of one tile column; a group narrower than a tile is masked out of it). As ttnn's
``groupnorm`` compute kernel does per group: mask the group's channels (``mask[G]``, one tile per group),
take the mean, centre and mask again, take the mean of squares, then scale and shift (``gamma``, ``beta``:
one tile of the group's channels each).
"""

from loom_explorer.program import Dim, Eltwise, Reduce, Tensor, TileProgram

PROGRAM = TileProgram(
    name="groupnorm",
    description="y = (x - mean_g) * rsqrt(var_g + eps) * gamma + beta per group: x, y [G, E], mask, gamma, beta [G]",
    example_shape="G=16,E=7680",
    dims=(
        Dim("G", "parallel", tile=1, description="groups (times the batch)"),
        Dim("E", "reduction", description="a group's spatial rows times the tile columns its channels span"),
    ),
    tensors=(
        Tensor("x", ("G", "E"), "input", description="the activations, a group per row"),
        Tensor("mask", ("G",), "input", description="the group's channels within its tiles"),
        Tensor("gamma", ("G",), "input", description="the scale of the group's channels"),
        Tensor("beta", ("G",), "input", description="the shift of the group's channels"),
        Tensor("eps", (), "input", description="epsilon, a scalar"),
        Tensor("xm", ("G", "E"), "intermediate", description="x masked to the group"),
        Tensor("mu", ("G",), "intermediate", description="group mean"),
        Tensor("c", ("G", "E"), "intermediate", description="(x - mu), masked"),
        Tensor("q", ("G", "E"), "intermediate", description="c * c"),
        Tensor("r", ("G",), "intermediate", description="rsqrt(mean(c^2) + eps)"),
        Tensor("y", ("G", "E"), "output", description="the normalised activations"),
    ),
    ops=(
        Eltwise("mul", "xm", unit="fpu", operand="mask", source="x"),
        Reduce("mean", "mu", operand="xm"),
        Eltwise("sub", "c", unit="fpu", operand="mu", source="x"),
        Eltwise("mul", "c", unit="fpu", operand="mask"),
        Eltwise("mul", "q", unit="fpu", operand="c", source="c"),
        Reduce("mean", "r", operand="q"),
        Eltwise("add", "r", unit="fpu", operand="eps"),
        Eltwise("rsqrt", "r"),
        Eltwise("mul", "y", unit="fpu", operand="r", source="c"),
        Eltwise("mul", "y", unit="fpu", operand="gamma"),
        Eltwise("add", "y", unit="fpu", operand="beta"),
    ),
)
