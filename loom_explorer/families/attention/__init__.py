"""The attention family: FlashAttention-2, two chained matmuls ``s = q @ k^T`` and ``o = s @ v`` with an online
softmax between them, the key/value sequence run as steps on one core (kernel ``flash_attention``).

* ``program.py``: the analysis of a program's attention structure (``Attention``) and ``ATTENTION``;
* ``candidates.py``: its candidate hooks (``VARIANTS``): the causal diagonal's multicast rule and ``|balanced``;
* ``model.py``: the ``ModelFamily`` (``FAMILY``): ``build`` and the whole problem's work;
* ``quantities.py``: a candidate's parameters and derived quantities (chunks, steps, causal pairs);
* ``latency.py``: the latency terms and DRAM reads; ``traffic.py``: the NoC flows;
* ``work.py``: each working core's own work at a solved schedule (the tiles it moves);
* ``buffers.py``: one core's L1 buffers, for the TT-Lang kernel and for ttnn's SDPA kernels;
* ``ttlang_rules.py``: the TT-Lang writer's rules as constraints;
* ``ttlang_kernel.py`` and ``ttlang.py``: the TT-Lang FlashAttention kernel file and the writer (``WRITER``);
* ``ttnn.py``: ttnn's SDPA op (``OP``);
* ``ring.py``, ``ring_predict.py``, ``ring_accuracy.py``: ttnn's ring-joint SDPA per device (what each device of the
  ring computes, its time from the family's SDPA steps and the collective model, its profiler rows).
"""
