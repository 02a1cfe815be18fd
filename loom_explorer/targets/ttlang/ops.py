"""The element-wise ops as TT-Lang and torch text, shared by the writers.

An FPU op (add, sub, mul) combines two blocks with an operator (``FPU_OPS``); an SFPU op applies a function,
``ttl.math.<op>`` in the kernel (``TTL_FUNCTIONS``) and torch's in the reference (``SFPU_OPS``). A kernel file's
own names (``RESERVED``) may not name a tensor.
"""

from __future__ import annotations

from collections.abc import Iterable

from loom_explorer.problem import Problem
from loom_explorer.program.dsl import Eltwise
from loom_explorer.targets.ttlang.common import COORDS

FPU_OPS = {"add": "+", "sub": "-", "mul": "*"}
"""The FPU ops the writer knows, as the operator that combines two blocks."""

SFPU_OPS = {
    "relu": "torch.relu",
    "gelu": "torch.nn.functional.gelu",
    "silu": "torch.nn.functional.silu",
    "sigmoid": "torch.sigmoid",
    "exp": "torch.exp",
    "recip": "torch.reciprocal",
    "tanh": "torch.tanh",
    "sqrt": "torch.sqrt",
    "rsqrt": "torch.rsqrt",
    "log": "torch.log",
    "abs": "torch.abs",
    "neg": "torch.neg",
    "square": "torch.square",
}
"""The SFPU ops the writer knows (``ttl.math.<op>`` in both the compiler and the simulator), with torch's
function for the reference."""

TTL_FUNCTIONS = {name: f"ttl.math.{name}" for name in SFPU_OPS}
"""The SFPU ops as the kernel calls them."""

POSITIVE_DOMAIN = {"recip", "sqrt", "rsqrt", "log"}
"""Ops whose inputs the host draws from ``[0.5, 2)`` instead of a normal distribution."""

RESERVED = {
    *COORDS,
    "ttl",
    "ttnn",
    "torch",
    "json",
    "math",
    "step",
    "tile",
    "first_tile",
    "tile_index",
    "row",
    "col",
    "r0",
    "c0",
    "br",
    "bc",
    "device",
    "arguments",
    "pcc",
}
"""Names the kernel file's own code uses: a tensor so named is refused (the simulator traces tensors by name)."""


def op_name(problem: Problem, op: Eltwise) -> str:
    """The function ``op`` applies: its own name, or the problem's activation for ``activation``."""
    return (problem.activation or "") if op.op == "activation" else op.op


def op_expression(problem: Problem, op: Eltwise, value: str, operand: str, functions: dict[str, str]) -> str:
    """``value`` after ``op``, as source text: an FPU op combines it with ``operand`` (``FPU_OPS``); an SFPU op
    applies ``functions[op]`` to ``operand``, or to ``value`` when the op names none (``operand`` empty)."""
    name = op_name(problem, op)
    if op.unit == "fpu":
        return f"({value} {FPU_OPS[name]} {operand})"
    return f"{functions[name]}({operand or value})"


def reserved_name_reason(problem: Problem, suffixes: tuple[str, ...], digits: bool = False) -> str | None:
    """Why a tensor's name collides with the kernel file's own (``RESERVED``, a name ending in one of
    ``suffixes`` or, with ``digits``, in a digit); None when none does."""
    clash = sorted(
        t.name
        for t in problem.program.tensors
        if t.name in RESERVED or t.name.endswith(suffixes) or (digits and t.name[-1:].isdigit())
    )
    if not clash:
        return None
    return (
        f"TT-Lang export names its own variables {', '.join(sorted(RESERVED))} and "
        f"*{'/'.join(suffixes)}{' and names ending in a digit' if digits else ''}; "
        f"rename tensor {', '.join(clash)}"
    )


def unknown_op_reason(problem: Problem, ops: Iterable[Eltwise]) -> str | None:
    """Why an op has no TT-Lang form here (``FPU_OPS``, ``SFPU_OPS``); None when every op has one."""
    for op in ops:
        name = op_name(problem, op)
        known = FPU_OPS if op.unit == "fpu" else SFPU_OPS
        if name not in known:
            return (
                f"TT-Lang export writes {op.unit.upper()} ops {', '.join(sorted(known))}; {problem.program.name} "
                f"uses {name!r}"
            )
        if op.unit == "fpu" and op.operand is None:
            return f"the FPU op {name} on {op.tensor} names no operand to combine with"
    return None
