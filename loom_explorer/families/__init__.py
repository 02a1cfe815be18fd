"""The shipped kernel families, each a folder: everything about one kind of op.

A family owns its program analysis and structure, its candidates' variants, its model (quantities, L1
buffers per target, constraints, latency terms, traffic flows, compute roofline), its TT-Lang writer and
its TTNN op. It plugs into the core through entry-point groups (``loom_explorer/plugins.py``; the lines
are in ``pyproject.toml``), so no module outside ``loom_explorer.families`` imports one (tests/test_layers.py
says so), and a family of another package plugs in the same way.
"""
