"""The row-reduction family: reductions along the rows (sum, max, mean) and the element-wise ops that use
them (softmax, RMSNorm, LayerNorm), rows x columns of tiles, the columns reduced.

``program.py`` recognises its programs and analyses them (``RowReduction``, ``ROW_REDUCTION``);
``model.py`` is its model (``FAMILY``), from ``quantities.py`` (parameters, a core's tiles), ``traffic.py``
(flows, DRAM reads), ``buffers.py`` (L1 buffers), ``latency.py`` (objective and terms), ``work.py`` (passes
and the compute roofline) and ``constraints.py`` (the TT-Lang writer's rule); ``ttlang.py`` is its TT-Lang
writer (``WRITER``), ``ttnn.py`` its TTNN op (``OP``: ``ttnn.rms_norm``, ``ttnn.layer_norm``,
``ttnn.softmax_in_place``); ``groupnorm.py`` ttnn's group norm splits, read from a profiler row and costed on
the shipped ``groupnorm`` kernel; ``ttnn_reads.py`` TTNN's group norm readers (a DRAM round trip a tile, the
input read once per pass, the partials gathered one core at a time); ``signature.py`` which shipped kernel a
program is, up to tensor names.
"""
