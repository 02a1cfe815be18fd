"""2-D convolution as ttnn runs it: an implicit GEMM over the halo'd activation (families/convolution/).

out[M, N] = act(sum_{kh, kwc} act[M, kh, kwc] * w[kh, kwc, N] + bias[N]), with M = batch * OH * OW output
pixels, N the output channels, KH the filter rows and KWC one filter row's window of KW * C input values.
The bias and the activation (ttnn's fused ``relu``) are optional, as in ``gemm``.
"""

from loom_explorer.program import Dim, Eltwise, Matmul, Tensor, TileProgram

PROGRAM = TileProgram(
    name="conv2d",
    description="conv2d as implicit GEMM: act [M, KH, KWC] @ w [KH, KWC, N] -> out [M, N]",
    example_shape="M=65536,N=64,KH=3,KWC=192",
    dims=(
        Dim("M", "parallel", description="output pixels (batch * OH * OW)"),
        Dim("N", "parallel", description="output channels"),
        Dim("KH", "reduction", tile=1, spread=False, description="filter rows"),
        Dim("KWC", "reduction", spread=False, description="one filter row's window: KW * input channels"),
    ),
    tensors=(
        Tensor("in0", ("M", "KH", "KWC"), "input", description="activation windows (im2col of the halo'd shard)"),
        Tensor("in1", ("KH", "KWC", "N"), "input", description="weights"),
        Tensor("bias", ("N",), "input", optional=True, description="one row, broadcast over M"),
        Tensor("out", ("M", "N"), "output"),
    ),
    ops=(
        Matmul("in0", "in1", "out"),
        Eltwise("add", "out", unit="fpu", operand="bias"),
        Eltwise("activation", "out", unit="sfpu"),
    ),
)
