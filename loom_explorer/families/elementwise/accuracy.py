"""Which element-wise rows of a device-profiler report are the family's shipped kernels, and their shape
(``accuracy/op_mapping.py``: ``ACCURACY`` plugs into ``loom_explorer.accuracy_ops``; docs/elementwise.md).

ttnn runs these ops without a program config: on interleaved tensors the model costs its interleaved default
(``targets/ttnn/defaults.py``, the family's split: ``interleaved_default`` in ``ttnn.py``), on a sharded output
the op on its shard grid (``sharded.py``). Each row is read as one kernel and its shape ``H`` = all rows
(``W*Z*Y`` of INPUT_0, logical) by ``W`` = its last extent ``X``; every tensor takes INPUT_0's data format:

* ``BinaryNgDeviceOperation`` / ``BinaryDeviceOperation``: INPUT_0 is ``a``; INPUT_1 of the same shape is ``b``
  (``binary``, or ``binary_act`` with SFPU ops), a row (one row of ``X`` values) ``b[W]`` (``binary_row`` /
  ``binary_row_act``), one value or the ``scalar`` attribute ``s`` (``binary_scalar``); the SFPU ops are the op
  type's (``op_types.BINARY_SFPU``) and the fused ``lhs_activations`` / ``rhs_activations`` /
  ``post_activations`` (``input_tensor_a_activation`` / ``activations`` of the older op), costed as the
  activation chain ``op_types.SfpuChain``; a third input (the output ttnn was given) is not read;
* ``UnaryDeviceOperation``: ``unary``, its ``op_chain`` the activation chain;
* ``RotaryEmbeddingLlamaDeviceOperation`` (prefill): ``rotary``, INPUT_0..3 = x, cos, sin, the transformation
  matrix;
* ``RotaryEmbeddingLlamaDeviceOperation`` in decode mode (``is_decode_mode``): ``rotary`` of ``H`` = x's padded
  ``W*Z*Y`` (the users' heads, each user's padded to whole tiles) by ``W = X``, run as ttnn's sharded factory
  does (``rotary_embedding_llama_sharded_program_factory.cpp``, tenstorrent/tt-metal
  ``ttnn/cpp/ttnn/operations/experimental/transformer/rotary_embedding_llama/device/`` @16f79f8a: one compute
  kernel over the resident shards, no reader or writer: each core its user's ``n_heads_t x head_dim_t`` tiles
  of x, one tile row of cos and sin and one tile of the matrix): every operand and the output height-sharded in
  L1 (read locally) over the row's ``CORE COUNT`` cores (a ``ShardedElementwise`` of ``H / cores`` rows a core); every
  operand must be L1 height-sharded and cos, sin of x's padded shape, else the row is skipped with why.

Anything else of these op codes is an ``OpSkip`` / ``RowSkip`` with the reason (a column or batch broadcast,
a broadcast first operand, a scalar with SFPU ops, an op type without a cost, ``TernaryDeviceOperation``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from loom_explorer.accuracy.capture import (
    INTERLEAVED,
    OpReading,
    ProfilerRow,
    RowSkip,
    count_cell,
    l1_interleaved_placements,
    tensor_format,
    tensor_memory,
)
from loom_explorer.accuracy.op_mapping import AccuracyOps, InputShape, OpSkip
from loom_explorer.families.elementwise.op_types import SfpuChain, UnknownOp, binary_chain, unary_chain
from loom_explorer.families.elementwise.sharded import NotSharded, ShardedElementwise, read_shard_spec, shard_tiles

BINARY_OP_CODES = frozenset({"binarydeviceoperation", "binaryngdeviceoperation"})
UNARY_OP_CODES = frozenset({"unarydeviceoperation"})
ROTARY_OP_CODES = frozenset({"rotaryembeddingllamadeviceoperation"})
TERNARY_OP_CODES = frozenset({"ternarydeviceoperation"})
NO_VALUE = {"", "std::nullopt", "nullopt", "none"}
_ACTIVATIONS = ("lhs_activations", "rhs_activations", "input_tensor_a_activation")
_POST_ACTIVATIONS = ("post_activations", "activations")
_TTNN_BINARY = {"add": "ttnn.add", "sub": "ttnn.subtract", "mul": "ttnn.multiply"}


@dataclass(frozen=True, slots=True)
class EltwiseRow:
    """A row read as a shipped kernel: its shape, the kernel's tensor of each INPUT_<i> it reads, its output,
    the SFPU chain (the problem's activation) and a note."""

    kernel: str
    shape: dict[str, int]
    inputs: tuple[str, ...]  # the kernel's tensor read from INPUT_0, INPUT_1, ...
    output: str
    ttnn_op: str
    chain: SfpuChain = SfpuChain(())
    note: str = ""


def _rows_cols(shape: InputShape) -> tuple[int, int]:
    w, z, y, x = shape
    return w * z * y, x


def _activations(attrs: Mapping[str, str], keys: Sequence[str]) -> SfpuChain:
    chain = SfpuChain(())
    for key in keys:
        text = attrs.get(key, "")
        if re.sub(r"\s", "", text) not in {"SmallVector([])", "[]", "{}", *NO_VALUE}:
            chain = chain + unary_chain(text)
    return chain


def packer_relu(pre: SfpuChain, own: SfpuChain, post: SfpuChain, kind: str, older: bool) -> bool:
    """Whether ttnn applies the op's fused ReLU in the packer (``PACK_RELU``: the packer zeroes the negative
    values as it writes the tile to L1, no SFPU op) rather than on the SFPU. ``binary_ng`` does when the op
    has no operand activations (its own ``process_lhs``/``process_rhs`` included) and its post activations,
    its own ``postprocess`` included, are one ``RELU`` (``binary_ng_program_factory.cpp`` @00635679,
    tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/eltwise/binary_ng/device/``); the older binary op when it
    is an ``ADD`` with one fused ``RELU`` (``binary_device_operation.cpp`` @5acfb5ff, ``utils::get_defines``;
    later versions also require no ``input_tensor_a_activation``, required here). ``pre``, ``own``, ``post``:
    the operand activations, the op type's SFPU ops (``op_types.BINARY_SFPU``) and the post activations."""
    if pre.ops or own.ops or post.ops != ("relu",):
        return False
    return kind == "ADD" or not older


def read_binary(attrs: Mapping[str, str], shapes: Sequence[InputShape], older: bool = False) -> EltwiseRow:
    """A binary op's kernel, shape and SFPU chain (module docstring); OpSkip with the reason otherwise.
    ``older``: the row is the older ``BinaryDeviceOperation``'s (``packer_relu``)."""
    if not shapes:
        raise OpSkip("no INPUT_0 shape")
    h, w = _rows_cols(shapes[0])
    shape = {"H": h, "W": w}
    kind = attrs.get("binary_op_type", "").split("::")[-1].strip()
    try:
        pre, own, post = _activations(attrs, _ACTIVATIONS), binary_chain(kind), _activations(attrs, _POST_ACTIVATIONS)
    except UnknownOp as why:
        raise OpSkip(str(why)) from None
    chain = pre + own + post
    plain = "" if kind == "ADD" else f"{kind} costed as the FPU add"
    op = _TTNN_BINARY.get(kind.lower(), f"ttnn.{kind.lower()}")
    scalar = attrs.get("scalar", "").strip().lower() not in NO_VALUE
    if len(shapes) == 1 or (len(shapes) >= 2 and math.prod(shapes[1]) == 1):
        if len(shapes) == 1 and not scalar:
            raise OpSkip("one input and no scalar: not a binary op the model reads")
        if chain.ops:
            raise OpSkip(
                f"a scalar operand with SFPU ops ({'+'.join(chain.ops)}): binary_scalar, the shipped scalar "
                "kernel, is one FPU op"
            )
        filled = "the scalar, which ttnn's writer fills into a tile on each core, costed as one tile read per core"
        filled = filled if len(shapes) == 1 else ""
        return EltwiseRow("binary_scalar", shape, ("a",), "y", op, note="; ".join(filter(None, [plain, filled])))
    b_rows, b_cols = _rows_cols(shapes[1])
    if shapes[1] == shapes[0]:
        if packer_relu(pre, own, post, kind, older):
            packed = "the fused ReLU applied by the packer (PACK_RELU): no SFPU op"
            return EltwiseRow("binary", shape, ("a", "b"), "y", op, note="; ".join(filter(None, [plain, packed])))
        kernel = "binary_act" if chain.ops else "binary"
    elif b_rows == 1 and b_cols == w:
        kernel = "binary_row_act" if chain.ops else "binary_row"
    elif (b_rows, b_cols) != (h, w) and math.prod(shapes[1]) > math.prod(shapes[0]):
        raise OpSkip(
            "a broadcast first operand (INPUT_0 smaller than INPUT_1): the shipped kernels broadcast the second"
        )
    elif b_cols == 1:
        raise OpSkip("a column broadcast operand (INPUT_1 one column wide): no shipped kernel broadcasts a column")
    else:
        raise OpSkip(
            f"INPUT_1 {list(shapes[1])} is broadcast along some of INPUT_0's {list(shapes[0])} leading dims: "
            "the shipped kernels take a same-shape, row or scalar second operand"
        )
    return EltwiseRow(kernel, shape, ("a", "b"), "y", op, chain, plain if not chain.ops else chain.note)


def read_unary(attrs: Mapping[str, str], shapes: Sequence[InputShape]) -> EltwiseRow:
    """A unary op's chain as the ``unary`` kernel's activation; OpSkip with the reason otherwise."""
    if not shapes:
        raise OpSkip("no INPUT_0 shape")
    try:
        chain = unary_chain(attrs.get("op_chain", ""))
    except UnknownOp as why:
        raise OpSkip(str(why)) from None
    if not chain.ops:
        raise OpSkip("no UnaryOpType in op_chain")
    h, w = _rows_cols(shapes[0])
    op = f"ttnn.{chain.ops[0]}" if len(chain.ops) == 1 else f"ttnn unary op chain ({', '.join(chain.ops)})"
    return EltwiseRow("unary", {"H": h, "W": w}, ("x",), "y", op, chain, chain.note)


def read_rotary(attrs: Mapping[str, str], shapes: Sequence[InputShape]) -> EltwiseRow:
    """Llama's rotary embedding (prefill) as the ``rotary`` kernel; OpSkip with the reason otherwise."""
    if attrs.get("is_decode_mode", "false").strip().lower() in {"true", "1"}:
        raise OpSkip("decode-mode rotary embedding (height-sharded, one position per core) is not modelled")
    if len(shapes) != 4:
        raise OpSkip(f"{len(shapes)} inputs: Llama's rotary embedding reads x, cos, sin and the transformation matrix")
    x, cos, sin, trans = shapes
    h, w = _rows_cols(x)
    if cos != sin or cos[3] != w or _rows_cols(trans) != (32, 32):
        raise OpSkip("cos, sin and the transformation matrix are not [.., S, D], [.., S, D] and one 32x32 tile")
    note = (
        "x @ trans costed as one FPU tile op; cos and sin read with every tile of x (the factory's reload path, "
        "taken when a core has more than 8 rows of heads x positions)"
    )
    return EltwiseRow(
        "rotary", {"H": h, "W": w}, ("x", "cos", "sin", "trans"), "y", "ttnn.rotary_embedding_llama", note=note
    )


DECODE_ROTARY_TENSORS = ("y", "x", "cos", "sin", "trans")  # every operand held as shards


def _decode_rotary(row: ProfilerRow, compute: dict[str, object]) -> OpReading:
    """A decode-mode rotary embedding on its height shards (module docstring); RowSkip with why otherwise."""
    shapes = _shapes(row)
    if len(shapes) != 4:
        raise RowSkip(f"{len(shapes)} inputs: Llama's rotary embedding reads x, cos, sin and the transformation matrix")
    for tensor in ("INPUT_0", "INPUT_1", "INPUT_2", "INPUT_3", "OUTPUT_0"):
        memory = tensor_memory(row, tensor, [])
        if memory != "L1_HEIGHT_SHARDED":
            raise RowSkip(f"decode-mode rotary embedding with {tensor} {memory}: modelled on L1 height shards only")
    x = _padded(row, "INPUT_0")
    if _padded(row, "INPUT_1") != x or _padded(row, "INPUT_2") != x:
        raise RowSkip("decode-mode rotary embedding: cos and sin are not of x's padded shape (one row a user)")
    cores = row.number(count_cell, "CORE COUNT")
    if cores is None:
        raise RowSkip("decode-mode rotary embedding and no CORE COUNT: the cores holding the shards are unknown")
    rows, cols = x[0] * x[1] * x[2], x[3]
    if rows % (cores * 32) or cols % 32:
        raise RowSkip(f"x's padded {rows}x{cols} is not whole tile rows on each of {cores} cores")
    shape = {"H": rows, "W": cols}
    config = ShardedElementwise(
        op="ttnn.experimental.rotary_embedding_llama",
        layout="height",
        grid=(cores, 1),
        cores=cores,
        shard_tiles=(rows // cores // 32, cols // 32),
        sharded=DECODE_ROTARY_TENSORS,
    )
    return OpReading(
        kernel="rotary",
        shape=shape,
        model_shape=shape,
        dtype=tensor_format(row, "INPUT_0"),
        formats={},
        grid=None,
        fp32_acc=bool(compute.get("fp32_dest_acc_en")),
        config=config,
        note=(
            f"decode mode: every operand height-sharded over {cores} cores, computed from the resident shards; "
            "cos and sin (one row a user) costed as read with every tile of x; x @ trans as one FPU tile op"
        ),
    )


def _read(name: str, attrs: Mapping[str, str], shapes: Sequence[InputShape]) -> EltwiseRow:
    if name in BINARY_OP_CODES:
        return read_binary(attrs, shapes, older=name == "binarydeviceoperation")
    if name in UNARY_OP_CODES:
        return read_unary(attrs, shapes)
    if name in ROTARY_OP_CODES:
        return read_rotary(attrs, shapes)
    raise OpSkip(
        "a ternary op (where, lerp, addcmul): three operands per tile, no shipped kernel takes them"
        if name in TERNARY_OP_CODES
        else f"{name}: not an element-wise op the family reads"
    )


def _shapes(row: ProfilerRow) -> list[InputShape]:
    shapes: list[InputShape] = []
    while (shape := row.shape(f"INPUT_{len(shapes)}")) is not None:
        shapes.append(shape)
    return shapes


def _output_memory(attrs: Mapping[str, str]) -> str:
    return next((attrs[k] for k in ("memory_config", "output_memory_config", "output_mem_config") if k in attrs), "")


def _padded(row: ProfilerRow, tensor: str) -> tuple[int, ...]:
    """``tensor``'s padded ``(W, Z, Y, X)`` (the number before ``[logical]``; the logical one without it)."""
    logical = row.shape(tensor) or (1, 1, 1, 1)
    out = []
    for axis, fallback in zip("WZYX", logical, strict=True):
        m = re.match(r"\s*(\d+)", row.get(f"{tensor}_{axis}_PAD[LOGICAL]"))
        out.append(int(m.group(1)) if m else fallback)
    return tuple(out)


def not_native(row: ProfilerRow, read: EltwiseRow, memories: list[str], shard: tuple[int, int]) -> str:
    """Why ``binary_ng`` does not run a binary on a sharded output from the shards themselves (its
    ``is_native_L1_sharding``, ``binary_ng/device/binary_ng_utils.cpp``; "" when it does): it does for two
    operands of one shape and one memory config, in L1, evenly sharded (the padded rows and columns are whole
    shards), on the output's grid. Otherwise it reads every operand through its address generator as on
    interleaved tensors."""
    if len(read.inputs) != 2 or read.kernel not in ("binary", "binary_act"):
        return "a scalar or broadcast operand"
    if memories[0] != memories[1] or "SHARDED" not in memories[0]:
        return f"operands in {memories[0]} and {memories[1]}"
    w, z, y, x = _padded(row, "INPUT_0")
    if (w * z * y) % shard[0] or x % shard[1]:
        return f"uneven shards ({w * z * y}x{x} in shards of {shard[0]}x{shard[1]})"
    return ""


def _sharded(
    row: ProfilerRow, name: str, read: EltwiseRow, attrs: Mapping[str, str], memories: list[str]
) -> tuple[ShardedElementwise | None, str]:
    """The sharded run of ``read`` (``sharded.py``) and a note; None when every operand it reads and its
    output are interleaved, or when ``binary_ng`` runs it as on interleaved tensors (``not_native``: the note
    says why); RowSkip when only some of them are sharded in a way the model does not take."""
    sharded_inputs = [i for i, m in enumerate(memories[: len(read.inputs)]) if m not in INTERLEAVED]
    try:
        layout, grid, cores, shard = read_shard_spec(_output_memory(attrs))
    except NotSharded as why:
        if "_SHARDED" in _output_memory(attrs):
            raise RowSkip(f"the output's shard spec is {why}") from None
        if sharded_inputs:
            raise RowSkip(
                f"INPUT_{sharded_inputs[0]} is sharded and the output interleaved: the row does not give the "
                "input's shard spec, which the op runs on"
            ) from None
        return None, ""
    if name == "binaryngdeviceoperation":
        interleaved = not_native(row, read, memories, shard)
        if interleaved:
            return None, (
                f"binary_ng's sharded path does not apply ({interleaved}): costed as its interleaved path, every "
                "operand read as an interleaved one (an L1 operand as from DRAM: an upper bound)"
            )
    rows, cols = read.shape["H"], read.shape["W"]
    held = [read.output]
    for i in sharded_inputs:
        if memories[i] != f"L1_{layout.upper()}_SHARDED" or (row.shape(f"INPUT_{i}") != row.shape("INPUT_0")):
            raise RowSkip(
                f"INPUT_{i} is {memories[i]} and the output {layout}-sharded: the model maps sharded inputs held "
                "as the output's shards"
            )
        held.append(read.inputs[i])
    config = ShardedElementwise(
        op=read.ttnn_op,
        layout=layout,
        grid=grid,
        cores=cores,
        shard_tiles=shard_tiles(layout, shard, rows, cols),
        sharded=tuple(held),
    )
    return config, ""


def read_row(row: ProfilerRow, attributes: str, attrs: dict[str, str], compute: dict[str, object]) -> OpReading:
    """The kernel, shape, activation and (sharded) config of an element-wise row (module docstring);
    RowSkip with the reason otherwise."""
    name = row.get("OP CODE").split("::")[-1].lower()
    if name in ROTARY_OP_CODES and attrs.get("is_decode_mode", "false").strip().lower() in {"true", "1"}:
        return _decode_rotary(row, compute)
    shapes = _shapes(row)
    notes: list[str] = []
    memories = [tensor_memory(row, f"INPUT_{i}", notes) for i in range(len(shapes))]
    try:
        read = _read(name, attrs, shapes)
    except OpSkip as why:
        raise RowSkip(str(why)) from None
    config, sharding = _sharded(row, name, read, attrs, memories)
    notes.append(sharding)
    placed = {} if config else l1_interleaved_placements(row, memories, read.inputs, read.output, notes)
    extra = [m for m in memories[len(read.inputs) :] if m]
    if extra and read.kernel != "binary_scalar":
        notes.append(f"INPUT_{len(read.inputs)} (the output tensor ttnn was given) not read")
    return OpReading(
        kernel=read.kernel,
        shape=read.shape,
        model_shape=read.shape,
        dtype=tensor_format(row, "INPUT_0"),
        formats={},
        grid=None,
        fp32_acc=bool(compute.get("fp32_dest_acc_en")),
        config=config,
        activation=read.chain.activation,
        note="; ".join(filter(None, [*notes, read.note])),
        placements=placed,
    )


ACCURACY = AccuracyOps(
    name="elementwise",
    op_codes=BINARY_OP_CODES | UNARY_OP_CODES | ROTARY_OP_CODES | TERNARY_OP_CODES,
    kernels=("binary", "binary_act", "binary_row", "binary_row_act", "binary_scalar", "unary", "rotary"),
    read_configured=read_row,
    ops_phrase="binary, unary and rotary element-wise ops",
)
