"""The contraction family: one matmul with an element-wise epilogue (a blocked GEMM; the kernels gemm,
batched_gemm and linear_gelu), the fallback family that takes every program no other family matches.

* ``program.py``: the roles of the dimensions (M, N, K, batch) from the access maps (``Contraction``,
  ``analyse_contraction``) and the ``ProgramFamily``;
* ``model.py``: the ``ModelFamily`` (``FAMILY``) that builds a candidate's model from
  ``quantities.py`` (parameters: grid, per-core extents, blocks, sub-blocks, buffer depths),
  ``latency.py`` (the latency terms and the DRAM bytes read), ``traffic.py`` (the NoC flows),
  ``buffers.py`` (one core's L1 buffers for TTNN's matmul kernels and for the exported TT-Lang kernel) and
  ``subblocks.py`` (the TT-Lang compiler's sub-blocking, a ``dst_capacity`` constraint);
* ``ttlang.py``: the TT-Lang GEMM writer (``WRITER``);
* ``ttnn.py``: the TTNN matmul op (``OP``) and ``ttnn_mapping.py``, the one table between TTNN's multicast
  matmul program configs and the candidates and parameters (read by the export and, the other way, by
  the accuracy tools).
"""
