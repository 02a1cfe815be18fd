"""FlashAttention-2 forward: o[B, H, Sq, D] = softmax(q k^T / sqrt(D) [+ causal mask]) v.

One iteration step takes a chunk of queries against a chunk of keys/values: the scores ``s = q @ k^T``
stay in L1, an online softmax keeps the running row maximum ``m`` and row sum ``l``, and the output
chunk is rescaled and accumulated ``o = o * exp(m_old - m) + exp(s - m) @ v``; after the last key/value
chunk ``o`` is divided by ``l``.

Shape keys: B batch, H query heads, Hkv key/value heads (grouped-query attention; defaults to H, must
divide it), Sq and Skv sequence lengths, D head dim. ``--causal`` masks keys after each query (Sq == Skv).
"""

from loom_explorer.program import Dim, Eltwise, Matmul, Tensor, TileProgram

PROGRAM = TileProgram(
    name="flash_attention",
    description="o = softmax(q k^T / sqrt(D)) v: q [B, H, Sq, D], k/v [B, Hkv, Skv, D], o [B, H, Sq, D]",
    example_shape="B=1,H=8,Sq=2048,Skv=2048,D=128",
    dims=(
        Dim("B", "parallel", tile=1, description="batch"),
        Dim("H", "parallel", tile=1, description="query heads"),
        Dim("Hkv", "parallel", tile=1, group_of="H", description="key/value heads, each shared by H/Hkv query heads"),
        Dim("Sq", "parallel", description="query sequence"),
        Dim("Skv", "reduction", description="key/value sequence, reduced by the online softmax"),
        Dim("D", "parallel", spread=False, description="head dimension, kept whole on a core"),
    ),
    tensors=(
        Tensor("q", ("B", "H", "Sq", "D"), "input"),
        Tensor("k", ("B", "Hkv", "Skv", "D"), "input"),
        Tensor("v", ("B", "Hkv", "Skv", "D"), "input"),
        Tensor("s", ("B", "H", "Sq", "Skv"), "intermediate", description="scores of one q chunk x k chunk"),
        Tensor("m", ("B", "H", "Sq"), "intermediate", description="running row maximum"),
        Tensor("l", ("B", "H", "Sq"), "intermediate", description="running row sum"),
        Tensor("o", ("B", "H", "Sq", "D"), "output"),
    ),
    ops=(
        Matmul("q", "k", "s"),
        Eltwise("mul", "s", unit="fpu", when="step"),  # scale by 1/sqrt(D)
        Eltwise("mask", "s", unit="fpu", when="diagonal"),  # causal mask on diagonal chunks
        Eltwise("max", "s", unit="fpu", when="step"),  # row maximum (reduce)
        Eltwise("exp", "s", unit="sfpu", when="step"),  # exp(s - m)
        Eltwise("sum", "s", unit="fpu", when="step"),  # row sum (reduce)
        Eltwise("exp", "m", unit="sfpu", when="step"),  # correction exp(m_old - m)
        Eltwise("mul", "l", unit="fpu", when="step"),  # l = l * correction + row sum
        Eltwise("mul", "o", unit="fpu", when="step"),  # o = o * correction
        Matmul("s", "v", "o"),
        Eltwise("add", "o", unit="fpu", when="step"),  # o += exp(s - m) @ v (accumulate)
        Eltwise("recip", "l", unit="sfpu", when="final"),  # 1 / l
        Eltwise("mul", "o", unit="fpu", when="final"),  # o = o / l
    ),
    options=("causal",),
)
