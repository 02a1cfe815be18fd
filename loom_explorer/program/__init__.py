"""The tile DSL and kernel loading."""

from loom_explorer.program.attention import Attention, analyse_attention
from loom_explorer.program.contraction import Contraction, analyse_contraction
from loom_explorer.program.dsl import Dim, Eltwise, Matmul, ProgramError, Reduce, Tensor, TileProgram
from loom_explorer.program.family import ProgramFamily, ProgramStructureError, Structure
from loom_explorer.program.load import KernelError, list_kernels, load_program
from loom_explorer.program.structure import analyse_program, program_families, program_family

__all__ = [
    "Attention",
    "Contraction",
    "Dim",
    "Eltwise",
    "KernelError",
    "Matmul",
    "ProgramError",
    "ProgramFamily",
    "ProgramStructureError",
    "Reduce",
    "Structure",
    "Tensor",
    "TileProgram",
    "analyse_attention",
    "analyse_contraction",
    "analyse_program",
    "list_kernels",
    "load_program",
    "program_families",
    "program_family",
]
