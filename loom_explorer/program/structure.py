"""The registry of kernel families at the program layer, and the analysis of a program by its family.

``PROGRAM_FAMILIES`` lists every family's :class:`~loom_explorer.program.family.ProgramFamily`, most
specific first: a program belongs to the first family whose ``matches`` accepts it. The last entry, the
contraction, accepts every program, so a program of no known shape gets the contraction's explanation of
what it lacks. A new family is a new module defining its ``ProgramFamily`` plus one entry here (before the
contraction); its model hooks are registered in ``model/families/``.
"""

from __future__ import annotations

from loom_explorer.program.attention import ATTENTION
from loom_explorer.program.contraction import CONTRACTION
from loom_explorer.program.dsl import TileProgram
from loom_explorer.program.elementwise import ELEMENTWISE
from loom_explorer.program.family import ProgramFamily, Structure
from loom_explorer.program.row_reduction import ROW_REDUCTION

PROGRAM_FAMILIES: tuple[ProgramFamily, ...] = (ATTENTION, ELEMENTWISE, ROW_REDUCTION, CONTRACTION)


def program_family(program: TileProgram) -> ProgramFamily:
    """The family of ``program``: the first of ``PROGRAM_FAMILIES`` that matches it."""
    return next(f for f in PROGRAM_FAMILIES if f.matches(program))


def analyse_program(program: TileProgram) -> Structure:
    """``program``'s structure, analysed by its family (``ProgramStructureError`` when malformed)."""
    return program_family(program).analyse(program)


__all__ = ["PROGRAM_FAMILIES", "ProgramFamily", "Structure", "analyse_program", "program_family"]
