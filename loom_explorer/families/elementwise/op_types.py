"""ttnn's element-wise op types as the model costs them: each ``UnaryOpType`` as an SFPU op the model costs,
and each ``BinaryOpType`` as ``binary_ng`` builds it from one FPU op and SFPU ops before or after it.

SFPU costs. ``relu``, ``gelu``, ``silu``, ``sigmoid``, ``exp``, ``recip`` and ``erf`` are costed from the LLK
functions that run them (``sfpu.py``), ``rsqrt`` by the hardware file (``compute.sfpu_tile_cycles``, an
uncalibrated estimate). Every other op type is costed as one of them, by the work it does on each of a
tile's elements (``SFPU_AS``, a named uncalibrated estimate, said in the row's note):

* ``relu``'s cost: a few instructions a pass, a compare, a select, a sign flip or a multiply-add (``neg``,
  ``abs``, ``square``, the comparisons with zero ``gtz``/``ltz``/``gez``/``lez``/``eqz``/``nez``, the scalar
  ops ``add_unary_sfpu``/``mul_unary_sfpu``/..., ``where_tss``, clamps);
* ``erf``'s: ``erfc`` (the same piecewise polynomial, ``ckernel_sfpu_erf_erfc.h``);
* ``exp``'s cost: an op that evaluates a polynomial or iterates as ``exp`` does (``atan``, ``tanh``,
  ``log``, ``sqrt``, ``sin``, ...).

An op chain (``UnaryDeviceOperation``'s ``op_chain``, ``binary_ng``'s ``lhs_activations`` /
``rhs_activations`` / ``post_activations``) runs its ops one after another on each tile in Dst, so it is costed
as their sum: the activation ``neg+exp+relu+recip`` (``sfpu.py::sfpu_tile_cycles``).

Binary op types, from ``binary_ng``'s ``OpConfig`` (``ttnn/cpp/ttnn/operations/eltwise/binary_ng/device/
binary_ng_utils.cpp`` @007bfbfa): ``ADD``, ``SUB``, ``MUL`` are one FPU op; the comparisons are a subtract and a
comparison with zero (``GE``: ``gez``), ``RSUB`` a ``neg`` of ``a`` and an add, the logical ops ``nez`` of both
operands, an FPU op and ``nez`` of the result, ``SQUARED_DIFFERENCE`` a subtract and ``square``, ``BIAS_GELU``
an add and ``gelu``, ``LDEXP`` ``exp2`` of ``b`` and a multiply, ``LOGADDEXP(2)`` ``exp(2)`` of both, an add
and ``log(2)``. ``DIV`` runs on the SFPU (``div_binary_tile``; ``OpConfig`` refuses it on the FPU): it is
costed as the FPU op and a ``recip``. The model's FPU cost is the same for add, subtract and multiply
(``compute.eltwise_tile_cycles``), so only the SFPU ops tell the op types apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HW_SFPU_OPS = frozenset({"relu", "gelu", "silu", "sigmoid", "exp", "recip", "rsqrt"})
"""The SFPU ops every shipped hardware file costs (``compute.sfpu_tile_cycles``); ``sfpu.py`` costs ``erf``
besides."""

_AS_RELU = (
    "neg",
    "abs",
    "square",
    "sign",
    "gtz",
    "ltz",
    "gez",
    "lez",
    "eqz",
    "nez",
    "relu6",
    "relu_max",
    "relu_min",
    "leaky_relu",
    "hardtanh",
    "clamp",
    "add_unary_sfpu",
    "sub_unary_sfpu",
    "mul_unary_sfpu",
    "div_unary_sfpu",
    "rsub",
    "unary_gt",
    "unary_lt",
    "unary_ge",
    "unary_le",
    "unary_eq",
    "unary_ne",
    "gt_unary",
    "lt_unary",
    "ge_unary",
    "le_unary",
    "eq_unary",
    "ne_unary",
    "where_tss",
    "fill",
    "zero_point",
    "identity",
    "floor",
    "ceil",
    "trunc",
    "round",
    "frac",
    "heaviside",
    "logical_not_unary",
    "bitwise_not",
    "maximum",
    "minimum",
)
_AS_EXP = (
    "erfinv",
    "atan",
    "tanh",
    "log",
    "log1p",
    "log2",
    "log10",
    "sqrt",
    "exp2",
    "expm1",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "elu",
    "selu",
    "celu",
    "softplus",
    "softsign",
    "hardswish",
    "hardsigmoid",
    "hardshrink",
    "softshrink",
    "power",
    "power_iterative",
    "mish",
    "tanhshrink",
    "logit",
    "i0",
    "i1",
    "digamma",
    "lgamma",
)

SFPU_AS: dict[str, str] = {
    **{op: op for op in HW_SFPU_OPS},
    **{op: "relu" for op in _AS_RELU},
    **{op: "exp" for op in _AS_EXP},
    "erf": "erf",
    "erfc": "erf",
    "gelu_approx": "gelu",
    "swish": "silu",
}
"""Each ttnn unary op type (lower case) -> the hardware file's SFPU op whose cost it takes (module docstring)."""

BINARY_SFPU: dict[str, tuple[str, ...]] = {
    "add": (),
    "sub": (),
    "mul": (),
    "div": ("recip",),
    "rsub": ("neg",),
    "lt": ("ltz",),
    "gt": ("gtz",),
    "ge": ("gez",),
    "le": ("lez",),
    "eq": ("eqz",),
    "ne": ("nez",),
    "squared_difference": ("square",),
    "bias_gelu": ("gelu",),
    "logical_and": ("nez", "nez", "nez"),
    "logical_or": ("nez", "nez", "nez"),
    "logical_xor": ("nez", "nez", "nez"),
    "ldexp": ("exp2",),
    "logaddexp": ("exp", "exp", "log"),
    "logaddexp2": ("exp2", "exp2", "log2"),
}
"""Each ``BinaryOpType`` (lower case) -> the SFPU ops ``binary_ng`` runs on each tile besides its one FPU op
(module docstring)."""

_UNARY_TYPE = re.compile(r"UnaryOpType::(\w+)")


class UnknownOp(ValueError):
    """An op type the model has no cost for; the message says which."""


@dataclass(frozen=True, slots=True)
class SfpuChain:
    """SFPU ops run one after another on each tile: their ttnn names and the hardware file's op each is
    costed as."""

    ops: tuple[str, ...]  # ttnn names, lower case (e.g. "erf")

    @property
    def activation(self) -> str | None:
        """The problem's activation that costs the chain (``relu+exp``); None for no op."""
        return "+".join(SFPU_AS[op] for op in self.ops) or None

    @property
    def note(self) -> str:
        """What the row's note says of the ops costed as another (empty when none is)."""
        stood_in = sorted({f"{op} as {SFPU_AS[op]}" for op in self.ops if SFPU_AS[op] != op})
        return f"SFPU ops costed as a shipped op (uncalibrated estimates): {', '.join(stood_in)}" if stood_in else ""

    def __add__(self, other: SfpuChain) -> SfpuChain:
        return SfpuChain(self.ops + other.ops)


def unary_chain(text: str) -> SfpuChain:
    """The ``UnaryOpType::X`` names in an attribute (an ``op_chain``, ``post_activations``, ...), in order;
    UnknownOp naming the first the model has no cost for."""
    ops = tuple(name.lower() for name in _UNARY_TYPE.findall(text))
    unknown = [op for op in ops if op not in SFPU_AS]
    if unknown:
        raise UnknownOp(f"unary op {unknown[0].upper()} has no SFPU cost in the model")
    return SfpuChain(ops)


def binary_chain(kind: str) -> SfpuChain:
    """The SFPU ops of binary op type ``kind`` (``GE``); UnknownOp for a type the model does not cost."""
    ops = BINARY_SFPU.get(kind.lower())
    if ops is None:
        raise UnknownOp(
            f"binary_op_type {kind or 'missing'}: the model costs "
            f"{', '.join(k.upper() for k in BINARY_SFPU)} (SFPU-only binary ops are not modelled)"
        )
    return SfpuChain(ops)
