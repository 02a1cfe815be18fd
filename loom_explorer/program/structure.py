"""The structure of a tile program: a single-matmul contraction or a two-matmul attention.

Both structures answer the questions the generic candidate enumerator asks (which dimensions may go on
a grid axis, which reductions may be split, which inputs stream, whether tasks may be flattened over the
cores, where a causal diagonal lies); the model builder picks its latency model by structure.
"""

from __future__ import annotations

from loom_explorer.program.attention import Attention, analyse_attention, is_attention
from loom_explorer.program.contraction import Contraction, analyse_contraction
from loom_explorer.program.dsl import TileProgram

Structure = Contraction | Attention


def analyse_program(program: TileProgram) -> Structure:
    return analyse_attention(program) if is_attention(program) else analyse_contraction(program)
