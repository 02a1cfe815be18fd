"""The gather family: ops whose reads are data-dependent rows of a table, one ``Gather`` op (``program/dsl.py``):
an embedding lookup (one table row per output row) and a bilinear grid sample (four rows per output point,
weighted).

``program.py`` recognises its programs (``Gathering``, ``GATHER``); ``model.py`` is its model (``FAMILY``),
from ``quantities.py`` (parameters, a core's rows), ``latency.py`` (objective and terms: scattered row reads
at small-page cost), ``traffic.py`` (flows, DRAM reads), ``buffers.py`` (L1 buffers) and ``work.py``;
``candidates.py`` keeps a table from being multicast (each core reads other rows); ``ttnn_config.py`` is the
split ttnn's program factories make (``GatherSplit``), ``ttnn.py`` its TTNN op (``OP``: the model's reading of
``ttnn.embedding`` and ``ttnn.grid_sample``; no export) and ``accuracy.py`` the profiler rows it reads
(``EmbeddingsDeviceOperation``, ``GridSampleOperation``). docs/gather.md has the maths.
"""
