"""Which element-wise rows of a device-profiler report are the family's shipped kernel, and their shape
(``accuracy/op_mapping.py``: ``ACCURACY`` plugs into ``loom_explorer.accuracy_ops``).

ttnn runs these ops without a program config on interleaved tensors, and the model costs that run with
``accuracy/ttnn_defaults.py``. ``BinaryNgDeviceOperation`` ``ADD`` / ``SUB`` / ``MUL`` of two tensors of one
shape, no fused activation -> ``binary`` (the model's FPU costs add, subtract and multiply alike:
``compute.eltwise_tile_cycles``); any other is an ``OpSkip`` with the reason. The shape is ``H`` = all rows
(``W*Z*Y`` of INPUT_0, logical) by ``W`` = its last extent ``X``.

ttnn's default (``interleaved_default``, costed by ``accuracy/ttnn_defaults.py``, whose docstring gives the
sources): a unit is one output tile, dealt out row-major (the flattened ``H*W@xy`` candidate, every input read
from DRAM by the core that needs it), one tile per read-compute-write cycle (``block = 1``), 2 tiles in every
input's circular buffer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from loom_explorer.accuracy.op_mapping import AccuracyOps, InputShape, InterleavedOp, InterleavedSplit, OpSkip
from loom_explorer.families.elementwise.program import analyse_elementwise
from loom_explorer.families.elementwise.ttnn import BINARY_OPS
from loom_explorer.problem import Problem
from loom_explorer.program.dsl import Eltwise

BINARY_OP_CODES = frozenset({"binarydeviceoperation", "binaryngdeviceoperation"})
BINARY_TYPES = {"ADD", "SUB", "MUL"}
NO_ACTIVATIONS = {"", "SmallVector([])", "[]", "std::nullopt"}
BUFFER_TILES = 2  # binary_ng's and unary's input circular buffers (tiles)


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


def _ttnn_op(problem: Problem) -> tuple[str, str]:
    """(ttnn op, program) of an element-wise program: one SFPU op is a unary op; one FPU add, subtract or
    multiply is ``binary_ng``, SFPU ops before it fused as ``input_tensor_a_activations`` (SwiGLU's
    ``ttnn.multiply(a, b, input_tensor_a_activations=[SILU])``) and after it as ``activations``."""
    ops = analyse_elementwise(problem.program).ops

    def name(op: Eltwise) -> str:
        return (problem.activation or op.op) if op.op == "activation" else op.op

    fpu = [i for i, op in enumerate(ops) if op.unit == "fpu"]
    if not fpu and len(ops) == 1:
        return f"ttnn.{name(ops[0])}", "unary, interleaved"
    if len(fpu) == 1 and ops[fpu[0]].op in BINARY_OPS:
        before, after = ops[: fpu[0]], ops[fpu[0] + 1 :]
        extra = "".join(
            f", {what}=[{', '.join(name(op).upper() for op in group)}]"
            for what, group in (("input_tensor_a_activations", before), ("activations", after))
            if group
        )
        return BINARY_OPS[ops[fpu[0]].op], f"binary_ng, interleaved{extra}"
    return "ttnn element-wise ops", "binary_ng/unary split, interleaved"


def interleaved_default(problem: Problem) -> InterleavedSplit:
    """ttnn's default of an element-wise ``problem``: every output tile, flattened row-major, one tile per
    cycle (module docstring)."""
    est = analyse_elementwise(problem.program)
    op, program = _ttnn_op(problem)
    return InterleavedSplit(
        op=op,
        program=program,
        unit="tile",
        units=math.prod(problem.tiles(d) for d in est.dims),
        group="*".join(est.dims),
        streamed=tuple(est.streamed),
        block="block",
        buffer_depth=BUFFER_TILES,
    )


ACCURACY = AccuracyOps(
    name="elementwise",
    op_codes=BINARY_OP_CODES,
    kernels=("binary",),
    read_interleaved=read_binary,
    interleaved_default=interleaved_default,
)
