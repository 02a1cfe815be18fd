"""Recognise the contraction structure of a program from its access maps.

For a program whose core op is ``Matmul(a, b, out)`` the roles of its dimensions follow from which
tensors mention them (nothing is declared per kernel):

* reduction dims (``K``): in ``a`` and ``b``, not in ``out``;
* row dims (``M``): in ``a`` and ``out``, not in ``b``;
* column dims (``N``): in ``b`` and ``out``, not in ``a``;
* batch dims: in ``out`` and in at least one input.

The blocked-matmul model supports exactly one of each of M, N and K and any number of batch dims.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.program.dsl import Eltwise, Matmul, TileProgram


class ProgramStructureError(ValueError):
    """The program is not a single-matmul contraction the model can schedule."""


@dataclass(frozen=True, slots=True)
class Contraction:
    matmul: Matmul
    m_dim: str
    n_dim: str
    k_dim: str
    batch_dims: tuple[str, ...]
    epilogue: tuple[Eltwise, ...]


def analyse_contraction(program: TileProgram) -> Contraction:
    matmuls = [op for op in program.ops if isinstance(op, Matmul)]
    if len(matmuls) != 1:
        raise ProgramStructureError(
            f"program {program.name}: the blocked-matmul model needs exactly one Matmul op, found {len(matmuls)}"
        )
    mm = matmuls[0]
    a, b, out = (set(program.tensor(n).dims) for n in (mm.a, mm.b, mm.out))
    k = sorted((a & b) - out)
    m = sorted((a & out) - b)
    n = sorted((b & out) - a)
    batch = [d.name for d in program.dims if d.name in out and (d.name in a or d.name in b) and d.name not in m + n]
    for role, found in (("reduction (in both inputs, not the output)", k), ("row (in a and out)", m),
                        ("column (in b and out)", n)):
        if len(found) != 1:
            raise ProgramStructureError(
                f"program {program.name}: expected one {role} dimension for {mm}, found {found}"
            )
    if program.dim(k[0]).kind != "reduction":
        raise ProgramStructureError(f"program {program.name}: dimension {k[0]} is summed over but declared parallel")
    epilogue = tuple(op for op in program.ops if isinstance(op, Eltwise))
    return Contraction(matmul=mm, m_dim=m[0], n_dim=n[0], k_dim=k[0], batch_dims=tuple(batch), epilogue=epilogue)
