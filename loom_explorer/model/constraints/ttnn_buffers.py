"""TTNN's circular buffers: what L1 holds when TTNN's own op kernels run the schedule (``KernelTarget.ttnn``:
its matmul and SDPA program factories, what ``--format ttnn`` configures and the accuracy data measured).
``l1_capacity.py`` sums them (the exported TT-Lang kernels' buffers are in ``ttlang_buffers.py``).
Each family's are its own (the contraction's: ``families/contraction/buffers.py``).
"""

from __future__ import annotations

