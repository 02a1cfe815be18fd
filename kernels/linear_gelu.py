"""Linear layer with fused bias and GELU: y[B, S, N] = gelu(x[B, S, K] @ w[K, N] + bias[N]).

The transformer feed-forward "linear" as TTNN runs it (``ttnn.linear(x, w, bias=bias, activation="gelu")``):

* ``x``    input activations, TTNN's ``input_tensor_a`` (in0): a batch of ``B`` sequences of ``S`` tokens
  with ``K`` features each;
* ``w``    the weight matrix, TTNN's ``input_tensor_b`` (in1): one ``[K, N]`` matrix shared by every
  batch index and every token (it does not mention ``B`` or ``S``, so it may be multicast along them);
* ``bias`` one row of ``N`` values added to every output row (always on in this kernel, not ``--bias``);
* ``y``    the output, ``[B, S, N]``, with GELU always applied (not ``--activation``).

Written only with the tile DSL (docs/dsl.md walks through it). The contraction analysis makes ``K`` the
reduction, ``S`` the row (M) dimension, ``N`` the column dimension and ``B`` a batch dimension along
which ``x`` is batched and ``w`` is broadcast.
"""

from loom_explorer.program import Dim, Eltwise, Matmul, Tensor, TileProgram

PROGRAM = TileProgram(
    name="linear_gelu",
    description="y = gelu(x @ w + bias): x [B, S, K], w [K, N] shared over B and S, bias [N], y [B, S, N]",
    example_shape="B=1,S=2048,K=4096,N=4096",
    dims=(
        Dim("B", "parallel", tile=1, description="batch: independent sequences"),
        Dim("S", "parallel", description="sequence: tokens (rows of x and y)"),
        Dim("N", "parallel", description="output features (columns of w and y)"),
        Dim("K", "reduction", description="input features, summed over"),
    ),
    tensors=(
        Tensor("x", ("B", "S", "K"), "input", description="activations (TTNN input_tensor_a)"),
        Tensor("w", ("K", "N"), "input", description="weights (TTNN input_tensor_b), shared by all tokens"),
        Tensor("bias", ("N",), "input", description="one row, broadcast over B and S"),
        Tensor("y", ("B", "S", "N"), "output", description="gelu(x @ w + bias)"),
    ),
    ops=(
        Matmul("x", "w", "y"),
        Eltwise("add", "y", unit="fpu", operand="bias"),
        Eltwise("gelu", "y", unit="sfpu"),
    ),
)
