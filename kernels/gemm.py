"""GEMM: out[M, N] = activation(in0[M, K] @ in1[K, N] + bias[N]).

The bias and the activation are optional: ``--bias`` turns the bias on, ``--activation gelu`` picks the
activation (any op with a cost in the hardware file's ``compute.sfpu_tile_cycles``).
"""

from loom_explorer.program import Dim, Eltwise, Matmul, Tensor, TileProgram

PROGRAM = TileProgram(
    name="gemm",
    description="C = act(A @ B + bias): in0 [M, K], in1 [K, N], out [M, N]",
    example_shape="M=4096,K=4096,N=4096",
    dims=(
        Dim("M", "parallel", description="rows of in0 and out"),
        Dim("N", "parallel", description="columns of in1 and out"),
        Dim("K", "reduction", description="inner dimension, summed over"),
    ),
    tensors=(
        Tensor("in0", ("M", "K"), "input", description="A, activations"),
        Tensor("in1", ("K", "N"), "input", description="B, weights"),
        Tensor("bias", ("N",), "input", optional=True, description="one row, broadcast over M"),
        Tensor("out", ("M", "N"), "output"),
    ),
    ops=(
        Matmul("in0", "in1", "out"),
        Eltwise("add", "out", unit="fpu", operand="bias"),
        Eltwise("activation", "out", unit="sfpu"),
    ),
)
