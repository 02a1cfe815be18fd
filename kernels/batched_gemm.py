"""Batched GEMM: out[B, M, N] = in0[B, M, K] @ in1[B, K, N], one independent GEMM per batch index.

``B`` counts whole matrices (tile 1). Every batch index has its own in1, so nothing is shared across
batch; a GEMM whose weights are shared across the batch is plain ``gemm`` with M = B*M.
"""

from loom_explorer.program import Dim, Matmul, Tensor, TileProgram

PROGRAM = TileProgram(
    name="batched_gemm",
    description="C[b] = A[b] @ B[b]: in0 [B, M, K], in1 [B, K, N], out [B, M, N]",
    example_shape="B=8,M=1024,K=1024,N=1024",
    dims=(
        Dim("B", "parallel", tile=1, description="batch: independent matrices"),
        Dim("M", "parallel", description="rows of in0 and out"),
        Dim("N", "parallel", description="columns of in1 and out"),
        Dim("K", "reduction", description="inner dimension, summed over"),
    ),
    tensors=(
        Tensor("in0", ("B", "M", "K"), "input"),
        Tensor("in1", ("B", "K", "N"), "input"),
        Tensor("out", ("B", "M", "N"), "output"),
    ),
    ops=(Matmul("in0", "in1", "out"),),
)
