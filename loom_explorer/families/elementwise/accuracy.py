"""Which element-wise rows of a device-profiler report are the family's shipped kernel, and their shape
(``accuracy/op_mapping.py``: ``ACCURACY`` plugs into ``loom_explorer.accuracy_ops``).

ttnn runs these ops without a program config on interleaved tensors, and the model costs that run with
``targets/ttnn/defaults.py`` (the family's split: ``interleaved_default`` in ``ttnn.py``).
``BinaryNgDeviceOperation`` ``ADD`` / ``SUB`` / ``MUL`` of two tensors of one shape, no fused activation ->
``binary`` (the model's FPU costs add, subtract and multiply alike: ``compute.eltwise_tile_cycles``); any
other is an ``OpSkip`` with the reason. The shape is ``H`` = all rows
(``W*Z*Y`` of INPUT_0, logical) by ``W`` = its last extent ``X``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from loom_explorer.accuracy.op_mapping import AccuracyOps, InputShape, InterleavedOp, OpSkip

BINARY_OP_CODES = frozenset({"binarydeviceoperation", "binaryngdeviceoperation"})
BINARY_TYPES = {"ADD", "SUB", "MUL"}
NO_ACTIVATIONS = {"", "SmallVector([])", "[]", "std::nullopt"}


def read_binary(name: str, attrs: Mapping[str, str], shapes: Sequence[InputShape]) -> InterleavedOp:
    """The kernel and shape of a binary op ``name`` (lower case, no namespace) with ATTRIBUTES ``attrs`` and
    its inputs' logical shapes (module docstring); OpSkip otherwise."""
    if not shapes:
        raise OpSkip("no INPUT_0 shape")
    w, z, y, x = shapes[0]
    shape = {"H": w * z * y, "W": x}
    kind = attrs.get("binary_op_type", "").split("::")[-1].strip()
    if kind not in BINARY_TYPES:
        raise OpSkip(
            f"binary_op_type {kind or 'missing'}: the shipped binary kernel is an FPU {'/'.join(sorted(BINARY_TYPES))}"
        )
    if len(shapes) != 2 or shapes[1] != shapes[0]:
        raise OpSkip("a scalar or broadcast operand: the shipped binary kernel takes two tensors of one shape")
    fused = [
        k
        for k in ("lhs_activations", "rhs_activations", "post_activations")
        if re.sub(r"\s", "", attrs.get(k, "")) not in NO_ACTIVATIONS
    ]
    if fused:
        raise OpSkip(f"fused activations ({', '.join(fused)}) are not in the shipped binary kernel")
    return InterleavedOp("binary", shape, 2, "" if kind == "ADD" else f"{kind} costed as the FPU add")


ACCURACY = AccuracyOps(
    name="elementwise",
    op_codes=BINARY_OP_CODES,
    kernels=("binary",),
    read_interleaved=read_binary,
    ops_phrase="binary add/sub/mul",
)
