"""Which norm and softmax rows of a device-profiler report are the family's shipped kernels, and their shape
(``accuracy/op_mapping.py``: ``ACCURACY`` plugs into ``loom_explorer.accuracy_ops``).

ttnn runs these ops with its default program config on interleaved tensors, and the model costs that run
with ``accuracy/ttnn_defaults.py``. A row is read when it is exactly what a shipped kernel computes; anything
else is an ``OpSkip`` with the reason:

* ``LayerNormDeviceOperation`` with ``LayerNormDefaultProgramConfig``, not distributed: ``norm_type``
  ``LAYERNORM`` -> ``layernorm`` (INPUT_1 gamma and INPUT_2 beta, both or none), ``RMSNORM`` -> ``rmsnorm``
  (INPUT_1 gamma); a further input (a fused residual) is not read;
* ``SoftmaxDeviceOperation`` with ``SoftmaxDefaultProgramConfig``, ``SoftmaxOperationType::Softmax``, on the
  last dimension, no mask input -> ``softmax``.

The shape is ``H`` = all rows (``W*Z*Y`` of INPUT_0, logical) by ``W`` = its last extent ``X``.

ttnn's default (``interleaved_default``, costed by ``accuracy/ttnn_defaults.py``, whose docstring gives the
sources): a unit is one tile row, the rows over a 1-D layout (``H@xy``, whole rows per core, every input read
from DRAM), one tile row at a time (``block_h = 1``), one block (the whole row) in every input's buffer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from loom_explorer.accuracy.op_mapping import AccuracyOps, InputShape, InterleavedOp, InterleavedSplit, OpSkip
from loom_explorer.families.row_reduction.program import analyse_row_reduction
from loom_explorer.problem import Problem
from loom_explorer.program.dsl import Eltwise, Reduce

NORM_OP_CODES = frozenset({"layernormdeviceoperation", "layernorm"})
SOFTMAX_OP_CODES = frozenset({"softmaxdeviceoperation", "softmax"})
BUFFER_BLOCKS = 1  # the norm/softmax factories hold one whole tile row per input
LAYERNORM_CONFIG = "interleaved, LayerNormDefaultProgramConfig"
SOFTMAX_CONFIG = "interleaved, SoftmaxDefaultProgramConfig"


def _last(text: str) -> str:
    return text.split("::")[-1].strip()


def read_row_reduction(name: str, attrs: Mapping[str, str], shapes: Sequence[InputShape]) -> InterleavedOp:
    """The kernel and shape of a norm or softmax op ``name`` (lower case, no namespace) with ATTRIBUTES
    ``attrs`` and its inputs' logical shapes (module docstring); OpSkip otherwise."""
    if not shapes:
        raise OpSkip("no INPUT_0 shape")
    w, z, y, x = shapes[0]
    shape = {"H": w * z * y, "W": x}
    config = attrs.get("program_config", "")
    if name in NORM_OP_CODES:
        if not config.startswith("LayerNormDefaultProgramConfig"):
            raise OpSkip(
                f"program_config {config[:60]!r}: only LayerNormDefaultProgramConfig (interleaved) "
                "is what the model's default norm runs"
            )
        if "NOT_DISTRIBUTED" not in attrs.get("distributed_norm_stage", "NOT_DISTRIBUTED"):
            raise OpSkip("a distributed norm stage is not a shipped kernel")
        kind = _last(attrs.get("norm_type", ""))
        if kind == "RMSNORM" and len(shapes) == 2:
            return InterleavedOp("rmsnorm", shape, 2)
        if kind == "LAYERNORM" and len(shapes) in (1, 3):
            return InterleavedOp(
                "layernorm",
                shape,
                len(shapes),
                "" if len(shapes) == 3 else "no gamma/beta: costed with them (two row reads more)",
            )
        raise OpSkip(
            f"norm_type {kind or 'missing'} with {len(shapes)} inputs (a fused residual or a "
            "missing gamma) is not a shipped kernel"
        )
    if not config.startswith("SoftmaxDefaultProgramConfig"):
        raise OpSkip(f"program_config {config[:60]!r}: only SoftmaxDefaultProgramConfig is modelled")
    kind = _last(attrs.get("softmax_type", "Softmax"))
    if kind != "Softmax" or len(shapes) != 1 or attrs.get("dim", "3") not in ("3", "-1"):
        raise OpSkip(
            f"softmax_type {kind}, dim {attrs.get('dim')}, {len(shapes)} inputs: only a plain "
            "softmax over the last dimension without a mask is the shipped kernel"
        )
    return InterleavedOp("softmax", shape, 1)


def _ttnn_op(problem: Problem) -> tuple[str, str]:
    """(ttnn op, program) of a row reduction: a max then a sum around ``exp`` is ``ttnn.softmax``; one mean
    then ``rsqrt`` ``ttnn.rms_norm``; two means then ``rsqrt`` ``ttnn.layer_norm``; any other the same split
    under a generic name."""
    st = analyse_row_reduction(problem.program)
    reductions = [op.op for op in st.ops if isinstance(op, Reduce)]
    sfpu = {op.op for op in st.ops if isinstance(op, Eltwise) and op.unit == "sfpu"}
    if reductions == ["max", "sum"] and "exp" in sfpu:
        return "ttnn.softmax", SOFTMAX_CONFIG
    if reductions == ["mean"] and "rsqrt" in sfpu:
        return "ttnn.rms_norm", LAYERNORM_CONFIG
    if reductions == ["mean", "mean"] and "rsqrt" in sfpu:
        return "ttnn.layer_norm", LAYERNORM_CONFIG
    return "ttnn row reduction", LAYERNORM_CONFIG


def interleaved_default(problem: Problem) -> InterleavedSplit:
    """ttnn's default of a row-reduction ``problem``: every tile row, whole rows per core, one row at a time
    (module docstring)."""
    rst = analyse_row_reduction(problem.program)
    op, program = _ttnn_op(problem)
    return InterleavedSplit(
        op=op,
        program=program,
        unit="tile row",
        units=problem.tiles(rst.rows_dim),
        group=rst.rows_dim,
        streamed=tuple(rst.streamed),
        block="block_h",
        buffer_depth=BUFFER_BLOCKS,
    )


ACCURACY = AccuracyOps(
    name="row_reduction",
    op_codes=NORM_OP_CODES | SOFTMAX_OP_CODES,
    kernels=("layernorm", "rmsnorm", "softmax"),
    read_interleaved=read_row_reduction,
    interleaved_default=interleaved_default,
)
