"""The element-wise family: ops over one rows x columns iteration space of tiles (unary, binary, SwiGLU), an
input indexed by fewer dimensions broadcast along the ones it leaves out.

``program.py`` recognises its programs and analyses them (``Elementwise``, ``ELEMENTWISE``); ``model.py`` is
its model (``FAMILY``), from ``quantities.py`` (notation, parameters, a block's tiles), ``traffic.py`` (flows,
DRAM reads), ``buffers.py`` (L1 buffers), ``latency.py`` (objective and terms) and ``work.py`` (an output
tile's cycles and the compute roofline); ``ttlang.py`` is its TT-Lang writer (``WRITER``), ``ttnn.py`` its
TTNN op (``OP``: ``ttnn.<unary>``, ``ttnn.add`` / ``subtract`` / ``multiply``, an SFPU op fused onto the
first operand).
"""
