"""The flash-decoding family: attention whose key/value sequence is split over consecutive cores, each (batch,
key/value head) group's query heads packed into the rows of one tile and the cores' partial results combined
on the group's first core (decode: a few query rows against a long cache). It is a variant of the attention
family's programs (``ProgramFamily.variant_of``): it claims no program, it contributes its candidate to
attention's, and models, writes and runs it (``Candidate.family``).

* ``program.py``: ``FLASH_DECODING`` (attention's analysis);
* ``candidates.py``: its ``kv_split`` candidate of an attention problem (``VARIANTS``);
* ``model.py``: the ``ModelFamily`` (``FAMILY``); ``quantities.py``: a candidate's parameters and quantities,
  coverage and ttnn's ``sdpa_decode`` split; ``latency.py``: the latency terms and the NoC flows (the gather
  and combine of the partials); ``buffers.py``: one core's L1 buffers, for the TT-Lang kernel and for ttnn's
  ``sdpa_decode``; ``work.py``: each core's own work at a solved schedule;
* ``ttlang_kernel.py`` and ``ttlang.py``: the TT-Lang flash-decoding kernel file and the writer (``WRITER``);
* ``ttnn.py``: ttnn's ``sdpa_decode`` op (``OP``);
* ``accuracy.py``: the ``sdpa_decode`` rows of a profiler report (``ACCURACY``; docs/flash_decoding.md).
"""
