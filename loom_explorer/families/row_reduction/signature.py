"""Which shipped row-reduction kernel a program is, up to tensor names: its ops with the tensors replaced by
their order of first use, their kind and role (``signature``), compared with a shipped kernel's. The TTNN op
(``ttnn.py``) and TTNN's readers (``ttnn_reads.py``) read it."""

from __future__ import annotations

from functools import cache

from loom_explorer.families.row_reduction.program import RowReduction, analyse_row_reduction
from loom_explorer.program.dsl import Reduce, TileProgram
from loom_explorer.program.load import load_program


def is_group_norm(program: TileProgram) -> bool:
    """Whether ``program``'s ops are, up to tensor names, the shipped ``groupnorm`` kernel's."""
    return signature(analyse_row_reduction(program))[0] == shipped_signature("groupnorm")[0]


def signature(st: RowReduction) -> tuple[tuple[object, ...], tuple[str, ...]]:
    """(the ops with tensors replaced by their order of first use and their kind, the tensors in that order)."""
    order: dict[str, int] = {}

    def canon(tensor: str | None) -> object:
        if tensor is None:
            return None
        index = order.setdefault(tensor, len(order))
        return index, st.kind(tensor), st.program.tensor(tensor).role

    ops: list[tuple[object, ...]] = []
    for op in st.ops:
        if isinstance(op, Reduce):
            ops.append(("reduce", op.op, canon(op.operand), canon(op.out)))
        else:
            ops.append(("eltwise", op.op, op.unit, canon(op.source), canon(op.operand), canon(op.tensor)))
    return tuple(ops), tuple(order)


@cache
def shipped_signature(kernel: str) -> tuple[tuple[object, ...], tuple[str, ...]]:
    return signature(analyse_row_reduction(load_program(kernel)))


SHIPPED_KERNELS = ("layernorm", "rmsnorm", "softmax", "groupnorm")


def shipped_kernel(program: TileProgram) -> str | None:
    """The shipped row-reduction kernel ``program`` is, up to tensor names (``SHIPPED_KERNELS``), or None."""
    ops = signature(analyse_row_reduction(program))[0]
    return next((k for k in SHIPPED_KERNELS if shipped_signature(k)[0] == ops), None)
