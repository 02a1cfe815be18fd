"""The data-movement family: programs whose ops only move or re-lay data (``Move``): copy, permute and
transpose, slice, pad and concatenate, tilize and untilize, typecast.

``program.py`` recognises its programs and analyses them (``DataMovement``, ``DATA_MOVEMENT``); ``pages.py``
is a core's DRAM read and write rate at a page size (row-major sticks are small pages); ``model.py`` is its
model (``FAMILY``), from ``quantities.py`` (notation, parameters, a block's tiles and bytes), ``traffic.py``
(flows), ``buffers.py`` (L1 buffers), ``latency.py`` (objective and terms) and ``work.py`` (a tile's re-lay
cycles and the roofline); ``ttnn.py`` is its TTNN op (``OP``: ``ttnn.tilize``, ``ttnn.untilize``,
``ttnn.transpose``, ``ttnn.typecast``, ``ttnn.clone``, ...) with ``ttnn_config.py`` (a sharded split read from a
profiler row), ``ttlang.py`` its TT-Lang writer (``WRITER``: tiled copies and transposes; the rest refused,
saying why), ``accuracy.py`` the profiler ops it reads (``ACCURACY``). docs/data_movement.md is its reference.
"""
