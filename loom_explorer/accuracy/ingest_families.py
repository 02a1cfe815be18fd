"""Which shipped kernel an element-wise or norm/softmax row of a device-profiler report is, and its shape.

ttnn runs these ops without a program config (or with its default one) on interleaved tensors, and the
model costs that run with ``accuracy/ttnn_defaults.py``. A row is read when it is exactly what a shipped
kernel computes; anything else is a skip with the reason:

* ``LayerNormDeviceOperation`` with ``LayerNormDefaultProgramConfig``, not distributed: ``norm_type``
  ``LAYERNORM`` -> ``layernorm`` (INPUT_1 gamma and INPUT_2 beta, both or none), ``RMSNORM`` -> ``rmsnorm``
  (INPUT_1 gamma); a further input (a fused residual) is not read;
* ``SoftmaxDeviceOperation`` with ``SoftmaxDefaultProgramConfig``, ``SoftmaxOperationType::Softmax``, on the
  last dimension, no mask input -> ``softmax``;
* ``BinaryNgDeviceOperation`` ``ADD`` / ``SUB`` / ``MUL`` of two tensors of one shape, no fused activation
  -> ``binary`` (the model's FPU costs add, subtract and multiply alike: ``compute.eltwise_tile_cycles``).

The shape is ``H`` = all rows (``W*Z*Y`` of INPUT_0, logical) by ``W`` = its last extent ``X``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from loom_explorer.errors import LoomError

NORM_OPS = {"layernormdeviceoperation", "layernorm"}
SOFTMAX_OPS = {"softmaxdeviceoperation", "softmax"}
BINARY_OPS = {"binarydeviceoperation", "binaryngdeviceoperation"}
FAMILY_OPS = NORM_OPS | SOFTMAX_OPS | BINARY_OPS
BINARY_TYPES = {"ADD", "SUB", "MUL"}
NO_ACTIVATIONS = {"", "SmallVector([])", "[]", "std::nullopt"}


class FamilySkip(LoomError, ValueError):
    """A row of one of these ops that is not what a shipped kernel computes; the message is the reason."""


@dataclass(frozen=True, slots=True)
class FamilyOp:
    kernel: Literal["layernorm", "rmsnorm", "softmax", "binary"]  # a shipped kernel
    shape: dict[str, int]  # H, W
    inputs: int  # how many INPUT_<i> tensors the kernel reads (the rest would be fused extras)
    note: str = ""


def _last(text: str) -> str:
    return text.split("::")[-1].strip()


def family_op(name: str, attrs: dict[str, str], shapes: list[tuple[int, int, int, int]]) -> FamilyOp:
    """The kernel and shape of an element-wise or norm/softmax op ``name`` (lower case, no namespace) with
    ATTRIBUTES ``attrs`` and its inputs' logical shapes (module docstring); FamilySkip otherwise."""
    if not shapes:
        raise FamilySkip("no INPUT_0 shape")
    w, z, y, x = shapes[0]
    shape = {"H": w * z * y, "W": x}
    config = attrs.get("program_config", "")
    if name in NORM_OPS:
        if not config.startswith("LayerNormDefaultProgramConfig"):
            raise FamilySkip(f"program_config {config[:60]!r}: only LayerNormDefaultProgramConfig (interleaved) "
                             "is what the model's default norm runs")
        if "NOT_DISTRIBUTED" not in attrs.get("distributed_norm_stage", "NOT_DISTRIBUTED"):
            raise FamilySkip("a distributed norm stage is not a shipped kernel")
        kind = _last(attrs.get("norm_type", ""))
        if kind == "RMSNORM" and len(shapes) == 2:
            return FamilyOp("rmsnorm", shape, 2)
        if kind == "LAYERNORM" and len(shapes) in (1, 3):
            return FamilyOp("layernorm", shape, len(shapes),
                            "" if len(shapes) == 3 else "no gamma/beta: costed with them (two row reads more)")
        raise FamilySkip(f"norm_type {kind or 'missing'} with {len(shapes)} inputs (a fused residual or a "
                         "missing gamma) is not a shipped kernel")
    if name in SOFTMAX_OPS:
        if not config.startswith("SoftmaxDefaultProgramConfig"):
            raise FamilySkip(f"program_config {config[:60]!r}: only SoftmaxDefaultProgramConfig is modelled")
        kind = _last(attrs.get("softmax_type", "Softmax"))
        if kind != "Softmax" or len(shapes) != 1 or attrs.get("dim", "3") not in ("3", "-1"):
            raise FamilySkip(f"softmax_type {kind}, dim {attrs.get('dim')}, {len(shapes)} inputs: only a plain "
                             "softmax over the last dimension without a mask is the shipped kernel")
        return FamilyOp("softmax", shape, 1)
    kind = _last(attrs.get("binary_op_type", ""))
    if kind not in BINARY_TYPES:
        raise FamilySkip(f"binary_op_type {kind or 'missing'}: the shipped binary kernel is an FPU "
                         f"{'/'.join(sorted(BINARY_TYPES))}")
    if len(shapes) != 2 or shapes[1] != shapes[0]:
        raise FamilySkip("a scalar or broadcast operand: the shipped binary kernel takes two tensors of one shape")
    fused = [k for k in ("lhs_activations", "rhs_activations", "post_activations")
             if re.sub(r"\s", "", attrs.get(k, "")) not in NO_ACTIVATIONS]
    if fused:
        raise FamilySkip(f"fused activations ({', '.join(fused)}) are not in the shipped binary kernel")
    return FamilyOp("binary", shape, 2, "" if kind == "ADD" else f"{kind} costed as the FPU add")
