"""Which norm and softmax rows of a device-profiler report are the family's shipped kernels, and their shape
(``accuracy/op_mapping.py``: ``ACCURACY`` plugs into ``loom_explorer.accuracy_ops``).

ttnn runs these ops with its default program config on interleaved tensors, and the model costs that run
with ``targets/ttnn/defaults.py`` (the family's split: ``interleaved_default`` in ``ttnn.py``). A row is read
when it is exactly what a shipped kernel computes; anything else is an ``OpSkip`` with the reason:

* ``LayerNormDeviceOperation`` with ``LayerNormDefaultProgramConfig``, not distributed: ``norm_type``
  ``LAYERNORM`` -> ``layernorm`` (INPUT_1 gamma and INPUT_2 beta, both or none), ``RMSNORM`` -> ``rmsnorm``
  (INPUT_1 gamma); a further input (a fused residual) is not read;
* ``SoftmaxDeviceOperation`` with ``SoftmaxDefaultProgramConfig``, ``SoftmaxOperationType::Softmax``, on the
  last dimension, no mask input -> ``softmax`` (``numeric_stable`` false: TTNN's kernel takes ``exp(x)``
  without the row's max: the program option ``unstable``, whose cost skips the max pass, ``work.py``).

The shape is ``H`` = all rows by ``W`` = the last extent ``X`` of INPUT_0 (logical): ``W*Z`` slices of ``Y``
rows each padded to whole tiles, ``H = W*Z*ceil(Y/32)*32``, as TTNN tiles each slice (a ``[1, 20, 19, 19]``
attention score is 20 tile rows, not ``ceil(380/32) = 12``) and its factories split those tile rows.

``FastReduceNCDeviceOperation`` (``ttnn.experimental.fast_reduce_nc``, one device op per reduced dimension)
with ``dim`` 0 or 1 -> ``reduce_nc``: ``T`` = the output tiles (the kept outer extent times
``ceil(Y / 32) * ceil(X / 32)`` of INPUT_0), ``R`` = the extent of dimension ``dim``; any other ``dim`` is
refused (the op sums over the outer dimensions only). ``dim`` 0 of an input with ``W = 1`` and ``Z > 1`` is
read as the sum over ``Z``: the tensor is of rank 3, padded to four dimensions in the report, and TTNN
counts ``dim`` in its own rank (a sum over an extent of 1 would be a copy; the profiler's core count, one
core per output tile, confirms the reading on a GPT-OSS capture's ``[32, 17, 2880]`` row).

``GroupNormDeviceOperation`` carries its own program config (sharded or interleaved) and is read by
``read_group_norm`` (``configured_op_codes``) as the ``groupnorm`` kernel: INPUT_0 ``[1, .., HW, C]`` (one
image: rows ``Z*Y``, channels ``X``), ``num_groups``, INPUT_1..3 gamma, beta and the input mask (costed with all three;
the note says which the row lacks), the split its config ran (``groupnorm.py``). The row's ``shape`` is the
whole op in the kernel's terms (``G`` groups of ``E`` = rows times the tile columns a group spans); the
model costs one block of one group (``model_shape``) repeated ``batch_repeats`` times.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from loom_explorer.accuracy.capture import OpReading, ProfilerRow, RowSkip, tensor_format, tensor_memory
from loom_explorer.accuracy.op_mapping import AccuracyOps, InputShape, InterleavedOp, OpSkip
from loom_explorer.families.row_reduction.groupnorm import TILE, config_of, tile_span
from loom_explorer.targets.ttnn.evaluate import ConfigError

NORM_OP_CODES = frozenset({"layernormdeviceoperation", "layernorm"})
SOFTMAX_OP_CODES = frozenset({"softmaxdeviceoperation", "softmax"})
GROUP_NORM_OP_CODES = frozenset({"groupnormdeviceoperation", "groupnorm"})
FAST_REDUCE_NC_OP_CODES = frozenset({"fastreducencdeviceoperation", "fastreducenc"})


def _last(text: str) -> str:
    return text.split("::")[-1].strip()


def read_row_reduction(name: str, attrs: Mapping[str, str], shapes: Sequence[InputShape]) -> InterleavedOp:
    """The kernel and shape of a norm or softmax op ``name`` (lower case, no namespace) with ATTRIBUTES
    ``attrs`` and its inputs' logical shapes (module docstring); OpSkip otherwise."""
    if not shapes:
        raise OpSkip("no INPUT_0 shape")
    w, z, y, x = shapes[0]
    if name in FAST_REDUCE_NC_OP_CODES:
        return _read_fast_reduce_nc(attrs, (w, z, y, x), len(shapes))
    shape = {"H": w * z * -(-y // 32) * 32, "W": x}
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
    unstable = attrs.get("numeric_stable", "true") == "false"
    return InterleavedOp(
        "softmax",
        shape,
        1,
        "numeric_stable false: TTNN skips the max pass (option unstable)" if unstable else "",
        frozenset({"unstable"}) if unstable else frozenset(),
    )


def _read_fast_reduce_nc(attrs: Mapping[str, str], shape: InputShape, inputs: int) -> InterleavedOp:
    """The ``reduce_nc`` kernel and shape of a fast_reduce_nc row (module docstring); OpSkip otherwise."""
    w, z, y, x = shape
    text = attrs.get("dim", "")
    try:
        dim = int(text)
    except ValueError:
        raise OpSkip(f"dim {text!r} is not a whole number") from None
    dim = dim + 4 if dim < 0 else dim
    if dim not in (0, 1):
        raise OpSkip(f"dim {text}: fast_reduce_nc sums over the outer dimensions N (0) or C (1) only")
    if inputs != 1:
        raise OpSkip(f"{inputs} inputs: fast_reduce_nc reads one")
    note = ""
    if dim == 0 and w == 1 < z:
        # a sum over an extent of 1 is a copy no model calls for: the tensor is of rank 3, reported padded to
        # four dimensions with W = 1, and TTNN counts ``dim`` in its own rank (its dim 0 is Z)
        dim, note = 1, "dim 0 of a rank-3 tensor (W = 1): its first dimension, Z, summed"
    kept, reduced = (z, w) if dim == 0 else (w, z)
    tiles = kept * (-(-y // 32)) * (-(-x // 32))
    return InterleavedOp("reduce_nc", {"T": tiles, "R": reduced}, 1, note)


def read_group_norm(row: ProfilerRow, attributes: str, attrs: dict[str, str], compute: dict[str, object]) -> OpReading:
    """The ``groupnorm`` kernel, shape and split of a group norm row (module docstring); RowSkip with the reason
    otherwise."""
    x = row.shape("INPUT_0")
    if x is None:
        raise RowSkip("no INPUT_0 shape")
    w, z, y, channels = x
    if w > 1:
        raise RowSkip(f"a batch of {w}: the model reads a group norm of one image (its groups span all its rows)")
    rows = z * y
    try:
        groups = int(attrs.get("num_groups", ""))
    except ValueError:
        raise RowSkip(f"num_groups {attrs.get('num_groups')!r} is not a whole number") from None
    if groups < 1 or channels % groups:
        raise RowSkip(f"num_groups {groups} does not divide the {channels} channels")
    if attrs.get("use_welford", "false") != "false":
        raise RowSkip("use_welford: Welford's running statistics are not the shipped groupnorm kernel")
    notes: list[str] = []
    memory = tensor_memory(row, "INPUT_0", notes)
    config_text = attrs.get("program_config", "")
    if (memory == "DRAM") != config_text.startswith("GroupNormMultiCoreProgramConfig"):
        raise RowSkip(f"INPUT_0 {memory} with program_config {config_text[:50]!r}: not a split the model reads")
    if memory == "L1_WIDTH_SHARDED":
        raise RowSkip("a width-sharded group norm is not read (height- and block-sharded are)")
    try:
        cfg = config_of(config_text, attrs.get("output_mem_config", ""), rows, channels, groups)
    except ConfigError as why:
        raise RowSkip(str(why)) from None
    extra = 0
    while row.shape(f"INPUT_{1 + extra}") is not None:
        extra += 1
    if extra < 3:
        notes.append(f"{extra} of gamma, beta and the input mask given: costed with all three")
    if "ROW_MAJOR" in (row.get("INPUT_0_LAYOUT").upper(), row.get("OUTPUT_0_LAYOUT").upper()):
        notes.append("a row-major input or output: the kernel's tilize/untilize of it is not costed")
    if cfg.num_out_blocks > 1:
        notes.append(f"{cfg.num_out_blocks} blocks a group, each gathering its partials (ttnn gathers once)")
    span = tile_span(channels, channels // groups)
    return OpReading(
        kernel="groupnorm",
        shape={"G": groups, "E": -(-rows // TILE) * TILE * span},
        model_shape=cfg.model_shape,
        dtype=tensor_format(row, "INPUT_0"),
        formats={},
        grid=cfg.compute_with_storage_grid_size,
        fp32_acc=bool(compute.get("fp32_dest_acc_en")),
        note="; ".join(notes),
        config=cfg,
        batch_repeats=cfg.repeats,
    )


ACCURACY = AccuracyOps(
    name="row_reduction",
    op_codes=NORM_OP_CODES | SOFTMAX_OP_CODES | GROUP_NORM_OP_CODES | FAST_REDUCE_NC_OP_CODES,
    kernels=("layernorm", "rmsnorm", "softmax", "groupnorm", "reduce_nc"),
    read_interleaved=read_row_reduction,
    read_configured=read_group_norm,
    configured_op_codes=GROUP_NORM_OP_CODES,
    ops_phrase="layer/RMS/group norm, softmax, fast_reduce_nc",
)
