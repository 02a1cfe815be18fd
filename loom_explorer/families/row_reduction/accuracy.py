"""Which norm and softmax rows of a device-profiler report are the family's shipped kernels, and their shape
(``accuracy/op_mapping.py``: ``ACCURACY`` plugs into ``loom_explorer.accuracy_ops``).

ttnn runs these ops with its default program config on interleaved tensors, and the model costs that run
with ``targets/ttnn/defaults.py`` (the family's split: ``interleaved_default`` in ``ttnn.py``). A row is read
when it is exactly what a shipped kernel computes; anything else is an ``OpSkip`` with the reason:

* ``LayerNormDeviceOperation`` with ``LayerNormDefaultProgramConfig``, not distributed: ``norm_type``
  ``LAYERNORM`` -> ``layernorm`` (INPUT_1 gamma and INPUT_2 beta, both or none), ``RMSNORM`` -> ``rmsnorm``
  (INPUT_1 gamma); a further input (a fused residual) is not read;
* ``SoftmaxDeviceOperation`` with ``SoftmaxDefaultProgramConfig``, ``SoftmaxOperationType::Softmax``, on the
  last dimension, no mask input -> ``softmax``.

The shape is ``H`` = all rows (``W*Z*Y`` of INPUT_0, logical) by ``W`` = its last extent ``X``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from loom_explorer.accuracy.op_mapping import AccuracyOps, InputShape, InterleavedOp, OpSkip

NORM_OP_CODES = frozenset({"layernormdeviceoperation", "layernorm"})
SOFTMAX_OP_CODES = frozenset({"softmaxdeviceoperation", "softmax"})


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


ACCURACY = AccuracyOps(
    name="row_reduction",
    op_codes=NORM_OP_CODES | SOFTMAX_OP_CODES,
    kernels=("layernorm", "rmsnorm", "softmax"),
    read_interleaved=read_row_reduction,
    ops_phrase="layer/RMS norm, softmax",
)
