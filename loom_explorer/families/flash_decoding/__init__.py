"""Flash-decoding: attention whose key/value sequence is split over consecutive cores, each (batch, key/value
head) group's query heads packed into the rows of one tile and the cores' partial results combined on the
group's first core (decode: a few query rows against a long cache).

* ``quantities.py``: a candidate's parameters and quantities, coverage, and ttnn's ``sdpa_decode`` split;
* ``latency.py``: the latency terms and the NoC flows (the gather and combine of the partials);
* ``buffers.py``: one core's L1 buffers, for the TT-Lang kernel and for ttnn's ``sdpa_decode``;
* ``ttlang_kernel.py``: the TT-Lang flash-decoding kernel file.
"""
