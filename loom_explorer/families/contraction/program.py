"""Recognise the contraction structure of a program from its access maps.

For a program whose core op is ``Matmul(a, b, out)`` the roles of its dimensions follow from which
tensors mention them (nothing is declared per kernel):

* reduction dims (``K``): in ``a`` and ``b``, not in ``out``;
* row dims (``M``): in ``a`` and ``out``, not in ``b``;
* column dims (``N``): in ``b`` and ``out``, not in ``a``;
* batch dims: in ``out`` and both inputs, or outer row/column dims that only one input mentions (that
  input is then broadcast along them, and the other shared across them).

The blocked-matmul model supports exactly one of each of M, N and K and any number of batch dims.
The properties at the end (``spread_dims``, ``split_dims``, ``streamed``, ...) are what the generic
candidate enumerator reads; :mod:`loom_explorer.families.attention.program` provides the same for attention.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.program.dsl import Eltwise, Matmul, Reduce, TileProgram
from loom_explorer.program.family import ProgramFamily, ProgramStructureError


@dataclass(frozen=True, slots=True)
class Contraction:
    matmul: Matmul
    m_dim: str
    n_dim: str
    k_dim: str
    batch_dims: tuple[str, ...]
    epilogue: tuple[Eltwise, ...]
    program: TileProgram

    @property
    def spread_dims(self) -> tuple[str, ...]:
        """Parallel dimensions a grid axis may carry."""
        return tuple(d for d in (*self.batch_dims, self.m_dim, self.n_dim) if self.program.dim(d).spread)

    @property
    def split_dims(self) -> tuple[str, ...]:
        """Reduction dimensions a grid axis may carry (partials gathered L1-to-L1 and reduced: split-K)."""
        return (self.k_dim,) if self.program.dim(self.k_dim).spread else ()

    @property
    def streamed(self) -> tuple[str, ...]:
        """Inputs streamed block by block (each gets its own communication option)."""
        return (self.matmul.a, self.matmul.b)

    @property
    def output(self) -> str:
        return self.matmul.out

    flatten: bool = False  # no flattened 1-D layout over several dims
    gather_1d: bool = False


def analyse_contraction(program: TileProgram) -> Contraction:
    reductions = [op for op in program.ops if isinstance(op, Reduce)]
    if reductions:
        raise ProgramStructureError(
            f"program {program.name}: a Reduce op ({reductions[0].op} into "
            f"{reductions[0].out}) belongs to a row-reduction program, which has no Matmul"
        )
    matmuls = [op for op in program.ops if isinstance(op, Matmul)]
    if len(matmuls) != 1:
        raise ProgramStructureError(
            f"program {program.name}: the blocked-matmul model needs exactly one Matmul op, found {len(matmuls)}"
        )
    mm = matmuls[0]
    a, b, out = (set(program.tensor(n).dims) for n in (mm.a, mm.b, mm.out))
    order = [d.name for d in program.dims]
    k = [d for d in order if d in (a & b) - out]
    m = [d for d in order if d in (a & out) - b]
    n = [d for d in order if d in (b & out) - a]
    # several row (or column) dims: the innermost is the matrix dim, the outer ones are batch dims that
    # one input is broadcast along (x[B, M, K] @ w[K, N]); the other input is shared across them
    batch = [d for d in order if d in out and d in a and d in b] + m[:-1] + n[:-1]
    m, n = m[-1:], n[-1:]
    for role, found in (
        ("reduction (in both inputs, not the output)", k),
        ("row (in a and out)", m),
        ("column (in b and out)", n),
    ):
        if len(found) != 1:
            raise ProgramStructureError(
                f"program {program.name}: expected one {role} dimension for {mm}, found {found}"
            )
    if program.dim(k[0]).kind != "reduction":
        raise ProgramStructureError(f"program {program.name}: dimension {k[0]} is summed over but declared parallel")
    roleless = [d for d in order if d not in (*k, *m, *n, *batch)]
    if roleless:
        raise ProgramStructureError(
            f"program {program.name}: dimension(s) {roleless} index no pair of the matmul's tensors "
            f"({mm.a}, {mm.b}, {mm.out}), so they have no role (row, column, reduction or batch)"
        )
    epilogue = tuple(op for op in program.ops if isinstance(op, Eltwise))
    per_step = [f"{op.op} on {op.tensor}" for op in epilogue if op.when != "final"]
    if per_step or program.intermediates:
        raise ProgramStructureError(
            f"program {program.name}: a single-matmul contraction has no per-step ops or intermediate tensors "
            f"(found {per_step or [t.name for t in program.intermediates]})"
        )
    return Contraction(
        matmul=mm, m_dim=m[0], n_dim=n[0], k_dim=k[0], batch_dims=tuple(batch), epilogue=epilogue, program=program
    )


CONTRACTION = ProgramFamily(
    name="contraction",
    description="one matmul with an element-wise epilogue (blocked matmul)",
    matches=lambda program: True,  # the fallback: its analysis says what a program of no known shape lacks
    analyse=analyse_contraction,
    fallback=True,
)
