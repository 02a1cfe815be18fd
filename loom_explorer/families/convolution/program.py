"""Recognise a convolution program from its access maps: one ``Matmul(a, b, out)`` whose two inputs share
*two* reduction dimensions, the filter rows ``KH`` (one item each: ``tile == 1``) and one filter row's window
of input channels ``KWC`` (``KW * C`` elements, counted in tiles), the implicit GEMM of a 2-D convolution:

    out[M, N] = sum_{kh, kwc} act[M, kh, kwc] * w[kh, kwc, N]

``M`` runs over the output pixels (``N*OH*OW``), ``N`` over the output channels. ``act[m, kh, :]`` is the
row of ``KW*C`` input values under filter row ``kh`` for output pixel ``m``: the halo step (a separate op,
``HaloDeviceOperation``) has already gathered each core's input rows with their neighbours' overlap into
its L1 shard, and the conv kernel's reader builds these rows from it (im2col), so no DSL access map needs
the affine index ``oh*stride + kh``. The reduction order is ttnn's: height sharded, a K step is one filter
row's window, ``act_block_w = round_up(C * KW, 32)`` (``determine_per_core_conv_block_config`` in
tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/conv/conv2d/conv2d_utils.cpp`` @
71ff3c1d7daa9b533f90160fdb6b853f625bc7f2), and there are ``weight_matrix_height_ntiles / act_block_w_ntiles``
of them (``num_blocks_act_w`` in ``get_cb_info``, ``conv2d_op_program_factory_common.cpp`` @
f3c1ee7ec100a0a965df79edf9936c95734743ea), so the GEMM's K is ``KH * ceil(KW*C/32)`` tiles.

Neither reduction dimension is spread (ttnn's conv never splits K over cores), so the candidates are the
GEMM's layouts of ``M`` and ``N`` with the activation and weights' communication options.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.program.dsl import Eltwise, Matmul, Reduce, TileProgram
from loom_explorer.program.family import ProgramFamily, ProgramStructureError


@dataclass(frozen=True, slots=True)
class Convolution:
    """A convolution's implicit GEMM: output pixels ``m_dim``, output channels ``n_dim``, filter rows
    ``rows_dim`` (items) and a filter row's window ``window_dim`` (tiles), and its epilogue."""

    matmul: Matmul
    m_dim: str
    n_dim: str
    rows_dim: str
    window_dim: str
    epilogue: tuple[Eltwise, ...]
    program: TileProgram

    @property
    def spread_dims(self) -> tuple[str, ...]:
        return tuple(d for d in (self.m_dim, self.n_dim) if self.program.dim(d).spread)

    @property
    def split_dims(self) -> tuple[str, ...]:
        return ()  # ttnn's conv keeps all of K on each core

    @property
    def streamed(self) -> tuple[str, ...]:
        return (self.matmul.a, self.matmul.b)

    @property
    def output(self) -> str:
        return self.matmul.out

    flatten: bool = False
    gather_1d: bool = False


def matches_convolution(program: TileProgram) -> bool:
    """A program with exactly one Matmul whose inputs share two reduction dimensions, one of them of one
    item per tile (module docstring)."""
    matmuls = [op for op in program.ops if isinstance(op, Matmul)]
    if len(matmuls) != 1 or any(isinstance(op, Reduce) for op in program.ops):
        return False
    mm = matmuls[0]
    a, b, out = (set(program.tensor(n).dims) for n in (mm.a, mm.b, mm.out))
    shared = (a & b) - out
    return len(shared) == 2 and any(program.dim(d).tile == 1 for d in shared)


def analyse_convolution(program: TileProgram) -> Convolution:
    """The convolution's roles (module docstring); ProgramStructureError naming what does not fit."""
    if not matches_convolution(program):
        raise ProgramStructureError(
            f"program {program.name}: a convolution is one Matmul whose inputs share two reduction dimensions "
            "(filter rows of tile 1, and a filter row's window)"
        )
    mm = next(op for op in program.ops if isinstance(op, Matmul))
    a, b, out = (program.tensor(n).dims for n in (mm.a, mm.b, mm.out))
    order = [d.name for d in program.dims]
    shared = [d for d in order if d in a and d in b and d not in out]
    rows = [d for d in shared if program.dim(d).tile == 1][0]
    window = [d for d in shared if d != rows][0]
    m = [d for d in order if d in a and d in out and d not in b]
    n = [d for d in order if d in b and d in out and d not in a]
    if len(m) != 1 or len(n) != 1 or set(out) != {*m, *n}:
        raise ProgramStructureError(
            f"program {program.name}: a convolution's output is [pixels, out channels], the pixels indexing "
            f"{mm.a} and the out channels {mm.b} (found rows {m}, columns {n})"
        )
    for d in shared:
        if program.dim(d).kind != "reduction":
            raise ProgramStructureError(f"program {program.name}: dimension {d} is summed over but declared parallel")
        if program.dim(d).spread:
            raise ProgramStructureError(
                f"program {program.name}: reduction dimension {d} must be declared spread=False (ttnn's conv "
                "keeps all of K on each core)"
            )
    epilogue = tuple(op for op in program.ops if isinstance(op, Eltwise))
    if any(op.when != "final" for op in epilogue) or program.intermediates:
        raise ProgramStructureError(f"program {program.name}: a convolution has no per-step ops or intermediates")
    return Convolution(mm, m[0], n[0], rows, window, epilogue, program)


CONVOLUTION = ProgramFamily(
    name="convolution",
    description="a 2-D convolution as an implicit GEMM over filter rows and windows",
    matches=matches_convolution,
    analyse=analyse_convolution,
)
