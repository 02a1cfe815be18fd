"""The tile DSL and kernel loading."""

from loom_explorer.program.contraction import Contraction, ProgramStructureError, analyse_contraction
from loom_explorer.program.dsl import Dim, Eltwise, Matmul, Tensor, TileProgram
from loom_explorer.program.load import KernelError, list_kernels, load_program

__all__ = [
    "Contraction",
    "Dim",
    "Eltwise",
    "KernelError",
    "Matmul",
    "ProgramStructureError",
    "Tensor",
    "TileProgram",
    "analyse_contraction",
    "list_kernels",
    "load_program",
]
