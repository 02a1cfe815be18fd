"""A sum of whole tiles over the outer dimensions: y[T] = sum_r x[T, r], ttnn's ``fast_reduce_nc``.

ttnn.experimental.fast_reduce_nc sums a ``[N, C, H, W]`` tensor over ``N`` and/or ``C``: every output tile
is the sum of the input tiles at the same ``(h, w)`` tile position over the reduced extent, added tile by
tile (``add_tiles``) with the partial sum kept in the destination registers
(``ttnn/cpp/ttnn/operations/experimental/reduction/fast_reduce_nc/device/kernels/reduce_nc.cpp`` @
a0a0902378e5828bc3a070789a34b49be1b82e85). No tile is reduced within itself.

Written only with the tile DSL, a row-reduction program (``families/row_reduction/program.py``): ``T``
(parallel, ``tile=1``) counts the output tiles (the kept dimensions times ``Ht * Wt``), ``R`` (reduction,
``tile=1``) the reduced extent, one whole input tile per index; the ``Reduce`` costs one element-wise tile
operation per input tile, as the kernel's ``add_tiles`` does.
"""

from loom_explorer.program import Dim, Reduce, Tensor, TileProgram

PROGRAM = TileProgram(
    name="reduce_nc",
    description="y = sum over r of x[T, r], whole tiles: x [T, R], y [T]",
    example_shape="T=1800,R=4",
    dims=(
        Dim("T", "parallel", tile=1, description="output tiles (kept outer dims times Ht * Wt)"),
        Dim("R", "reduction", tile=1, description="the reduced outer extent (N and/or C), a whole tile each"),
    ),
    tensors=(
        Tensor("x", ("T", "R"), "input", description="the input tiles, R per output tile"),
        Tensor("y", ("T",), "output", description="the sum of each output tile's R input tiles"),
    ),
    ops=(Reduce("sum", "y", operand="x"),),
)
