"""Rotary position embedding as Llama computes it on the card: y = x * cos + (x @ T) * sin, with x, cos, sin
[H, W] (H = heads x positions, W = the head dimension) and T one 32 x 32 tile (the transformation matrix that
rotates each pair of columns: rotate_half(x) = x @ T).

Written only with the tile DSL, an element-wise program (``families/elementwise/program.py``): ``T`` is indexed
by no dimension, one tile held for the whole kernel. Per output tile: the tile product ``x @ T`` (one FPU tile
op), times ``sin``, ``x`` times ``cos``, and the sum (three FPU ops). ttnn's
``ttnn.experimental.rotary_embedding_llama`` runs these four ops per tile (docs/elementwise.md cites it).

The DSL has no tile product inside an element-wise program, so ``x @ T`` is written as an FPU multiply by the
held tile ``T``: the same one FPU op per tile to the model, but as a program it multiplies by ``T``'s first
element (a scalar input's value). This kernel is the rotary op's cost; its TT-Lang export computes the program
as written, not the rotation.
"""

from loom_explorer.program import Dim, Eltwise, Tensor, TileProgram

PROGRAM = TileProgram(
    name="rotary",
    description="the cost of y = x*cos + (x @ T)*sin, x @ T written x * T: x, cos, sin, y [H, W], T one tile",
    example_shape="H=4096,W=128",
    dims=(
        Dim("H", "parallel", description="rows: heads x positions"),
        Dim("W", "parallel", description="columns: the head dimension"),
    ),
    tensors=(
        Tensor("x", ("H", "W"), "input", description="queries or keys"),
        Tensor("cos", ("H", "W"), "input", description="cosines of each position's angles"),
        Tensor("sin", ("H", "W"), "input", description="sines of each position's angles"),
        Tensor("trans", (), "input", description="the 32x32 transformation matrix: rotate_half(x) = x @ trans"),
        Tensor("rot", ("H", "W"), "intermediate", description="rotate_half(x) * sin"),
        Tensor("y", ("H", "W"), "output", description="x * cos + rotate_half(x) * sin"),
    ),
    ops=(
        Eltwise("mul", "rot", unit="fpu", operand="trans", source="x"),  # x @ T: one tile product per tile
        Eltwise("mul", "rot", unit="fpu", operand="sin"),
        Eltwise("mul", "y", unit="fpu", operand="cos", source="x"),
        Eltwise("add", "y", unit="fpu", operand="rot"),
    ),
)
