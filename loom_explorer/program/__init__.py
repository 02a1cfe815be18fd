"""The tile DSL, kernel loading and the program layer's registry of kernel families (each family's own
analysis is in its folder under ``loom_explorer/families/``)."""

from loom_explorer.program.dsl import Dim, Eltwise, Gather, Matmul, Move, ProgramError, Reduce, Tensor, TileProgram
from loom_explorer.program.family import ProgramFamily, ProgramStructureError, Structure
from loom_explorer.program.load import KernelError, list_kernels, load_program, shipped_program
from loom_explorer.program.structure import analyse_program, program_families, program_family

__all__ = [
    "Dim",
    "Eltwise",
    "Gather",
    "KernelError",
    "Matmul",
    "Move",
    "ProgramError",
    "ProgramFamily",
    "ProgramStructureError",
    "Reduce",
    "Structure",
    "Tensor",
    "TileProgram",
    "analyse_program",
    "list_kernels",
    "load_program",
    "program_families",
    "program_family",
    "shipped_program",
]
