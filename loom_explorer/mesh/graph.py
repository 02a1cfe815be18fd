"""Op graphs to split over a mesh: a matmul, an MLP, an attention block, a Llama decoder layer.

A graph is a chain of ops per device (every chip runs them in order), each producing one 2-D tensor named
after it and reading tensors produced before it. Two pseudo-ops bound it: ``x`` produces the graph's input
and ``out`` reads its output. ``Boundary.replicated``: the input arrives replicated on every chip and the
output must leave replicated (a stand-alone op or block, as a ttnn model calls it); ``Boundary.cyclic``: the
output must leave in the state the input arrived in, whichever that is (a decoder layer feeds the next one).

The decoder layer follows ``sweep/ops.py`` (its ``MODELS`` dims are passed in, not copied): ``attn_norm``,
``qkv`` (q, k and v fused), ``attention`` (flash attention; causal in prefill, one query per user over a
``decode_kv``-token cache in decode), ``wo``, ``residual_attn``, ``ffn_norm``, ``w1`` and ``w3``, ``swiglu``,
``w2``, ``residual_ffn``. Rotary embeddings and the KV-cache update are left out (as in ``sweep/ops.py``).

A model's graph carries its ``Precision`` (``precision.py``: the matmuls' weight formats, decode attention's
cache format, each op's fidelity; every chip's problem is solved at them) and its ``layers``: the number of
such layers whose weights (and caches) every chip holds at once (``capacity.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Protocol

from loom_explorer.hardware.schema import DataFormat, Fidelity
from loom_explorer.mesh.precision import Precision, precision
from loom_explorer.mesh.states import MeshError
from loom_explorer.mesh.transitions import TensorSize


class OpKind(str, Enum):
    matmul = "matmul"  # gemm: M x K x N
    attention = "attention"  # flash_attention: B, H, Hkv, Sq, Skv, D
    norm = "norm"  # rmsnorm over each row: H x W
    eltwise = "eltwise"  # binary / swiglu: H x W
    boundary = "boundary"  # the graph's input (x) and output (out)


class Boundary(str, Enum):
    replicated = "replicated"
    cyclic = "cyclic"


@dataclass(frozen=True, slots=True)
class OpSpec:
    """One op: its kernel and full shape (``dims``: name -> extent, the kernel's dims), the tensors it reads
    (``inputs``), and its output tensor's size. ``causal`` switches on attention's mask; ``batch_split``:
    attention's rows are independent sequences (decode users), so splitting them needs no other chip's
    keys and values."""

    name: str
    kind: OpKind
    kernel: str
    dims: tuple[tuple[str, int], ...]
    inputs: tuple[str, ...]
    output: TensorSize
    causal: bool = False
    batch_split: bool = False
    formats: tuple[tuple[str, DataFormat], ...] = ()  # the per-chip problem's tensors not in bf16
    fidelity: Fidelity = Fidelity.hifi2

    def dim(self, name: str) -> int:
        return dict(self.dims)[name]

    def format(self, tensor: str) -> DataFormat:
        return dict(self.formats).get(tensor, DataFormat.bfloat16)


@dataclass(frozen=True, slots=True)
class OpGraph:
    name: str
    ops: tuple[OpSpec, ...]  # x first, out last
    boundary: Boundary
    layers: int = 1  # layers alike whose resident tensors share each chip's DRAM (module docstring)
    precision: str = "bf16"  # the ``precision.py`` preset its ops were made at
    reserved_bytes: int = 0  # the model's tensors outside the graph (embedding, LM head), spread over the chips

    def op(self, name: str) -> OpSpec:
        for o in self.ops:
            if o.name == name:
                return o
        raise MeshError(f"graph {self.name} has no op {name!r} (ops: {', '.join(o.name for o in self.ops)})")

    def consumers(self, tensor: str) -> tuple[OpSpec, ...]:
        return tuple(o for o in self.ops if tensor in o.inputs)

    @property
    def work_ops(self) -> tuple[OpSpec, ...]:
        return tuple(o for o in self.ops if o.kind is not OpKind.boundary)


class TransformerDims(Protocol):
    """What a decoder layer needs of a model (``sweep.ops.Transformer`` has it)."""

    @property
    def hidden(self) -> int: ...
    @property
    def ffn(self) -> int: ...
    @property
    def heads(self) -> int: ...
    @property
    def kv_heads(self) -> int: ...
    @property
    def head_dim(self) -> int: ...
    @property
    def layers(self) -> int: ...
    @property
    def vocab(self) -> int: ...


def _x(rows: int, cols: int) -> OpSpec:
    return OpSpec("x", OpKind.boundary, "", (), (), TensorSize(rows, cols))


def _out(tensor: str, size: TensorSize) -> OpSpec:
    return OpSpec("out", OpKind.boundary, "", (), (tensor,), size)


_BF16 = precision("bf16")


def _matmul(name: str, src: str, m: int, k: int, n: int, prec: Precision = _BF16) -> OpSpec:
    p = prec.of(name)
    formats = (("in1", p.resident),) if p.resident is not DataFormat.bfloat16 else ()
    dims = (("M", m), ("K", k), ("N", n))
    return OpSpec(name, OpKind.matmul, "gemm", dims, (src,), TensorSize(m, n), formats=formats, fidelity=p.fidelity)


def _rowwise(name: str, kind: OpKind, kernel: str, inputs: tuple[str, ...], rows: int, cols: int) -> OpSpec:
    return OpSpec(name, kind, kernel, (("H", rows), ("W", cols)), inputs, TensorSize(rows, cols))


def matmul_graph(m: int, k: int, n: int, boundary: Boundary = Boundary.replicated) -> OpGraph:
    mm = _matmul("matmul", "x", m, k, n)
    return OpGraph("matmul", (_x(m, k), mm, _out("matmul", mm.output)), boundary)


def _attention(model: TransformerDims, rows: int, prefill: bool, decode_kv: int, src: str, prec: Precision) -> OpSpec:
    p = prec.of("attention", prefill)
    formats: tuple[tuple[str, DataFormat], ...] = ()
    if prefill:
        dims = (("B", 1), ("H", model.heads), ("Hkv", model.kv_heads), ("Sq", rows), ("Skv", rows))
    else:
        dims = (("B", rows), ("H", model.heads), ("Hkv", model.kv_heads), ("Sq", 1), ("Skv", decode_kv))
        if p.resident is not DataFormat.bfloat16:  # the cache, held between steps
            formats = (("k", p.resident), ("v", p.resident))
    return OpSpec(
        "attention",
        OpKind.attention,
        "flash_attention",
        (*dims, ("D", model.head_dim)),
        (src,),
        TensorSize(rows, model.heads * model.head_dim),
        causal=prefill,
        batch_split=not prefill,
        formats=formats,
        fidelity=p.fidelity,
    )


def mlp_ops(model: TransformerDims, rows: int, src: str, prec: Precision = _BF16) -> tuple[OpSpec, ...]:
    return (
        _matmul("w1", src, rows, model.hidden, model.ffn, prec),
        _matmul("w3", src, rows, model.hidden, model.ffn, prec),
        _rowwise("swiglu", OpKind.eltwise, "swiglu", ("w1", "w3"), rows, model.ffn),
        _matmul("w2", "swiglu", rows, model.ffn, model.hidden, prec),
    )


def attention_ops(
    model: TransformerDims, rows: int, prefill: bool, decode_kv: int, src: str, prec: Precision = _BF16
) -> tuple[OpSpec, ...]:
    qkv = (model.heads + 2 * model.kv_heads) * model.head_dim
    return (
        _matmul("qkv", src, rows, model.hidden, qkv, prec),
        _attention(model, rows, prefill, decode_kv, "qkv", prec),
        _matmul("wo", "attention", rows, model.heads * model.head_dim, model.hidden, prec),
    )


def mlp_graph(
    model: TransformerDims,
    rows: int,
    boundary: Boundary = Boundary.replicated,
    prec: Precision = _BF16,
    layers: int = 1,
) -> OpGraph:
    """The MLP of a layer; ``layers``: how many layers' MLP weights every chip holds (module docstring)."""
    ops = mlp_ops(model, rows, "x", prec)
    return OpGraph("mlp", (_x(rows, model.hidden), *ops, _out("w2", ops[-1].output)), boundary, layers, prec.name)


def attention_graph(
    model: TransformerDims,
    rows: int,
    prefill: bool,
    decode_kv: int,
    boundary: Boundary = Boundary.replicated,
    prec: Precision = _BF16,
    layers: int = 1,
) -> OpGraph:
    ops = attention_ops(model, rows, prefill, decode_kv, "x", prec)
    x, out = _x(rows, model.hidden), _out("wo", ops[-1].output)
    return OpGraph("attention", (x, *ops, out), boundary, layers, prec.name)


def decoder_layer_graph(
    model: TransformerDims, rows: int, prefill: bool, decode_kv: int, prec: Precision = _BF16, layers: int = 1
) -> OpGraph:
    """One Llama decoder layer (module docstring) at ``prec``, ``layers`` of them resident per chip; the output
    returns to the input's state."""
    h = model.hidden
    ops = (
        _x(rows, h),
        _rowwise("attn_norm", OpKind.norm, "rmsnorm", ("x",), rows, h),
        *attention_ops(model, rows, prefill, decode_kv, "attn_norm", prec),
        _rowwise("residual_attn", OpKind.eltwise, "binary", ("x", "wo"), rows, h),
        _rowwise("ffn_norm", OpKind.norm, "rmsnorm", ("residual_attn",), rows, h),
        *mlp_ops(model, rows, "ffn_norm", prec),
        _rowwise("residual_ffn", OpKind.eltwise, "binary", ("residual_attn", "w2"), rows, h),
    )
    out = _out("residual_ffn", ops[-1].output)
    return OpGraph("decoder_layer", (*ops, out), Boundary.cyclic, layers, prec.name)


GRAPHS = ("layer", "mlp", "attention")


def model_graph(
    graph: str, model: TransformerDims, rows: int, prefill: bool, decode_kv: int, prec: Precision, layers: int
) -> OpGraph:
    """A model's ``graph`` (``layer``, ``mlp`` or ``attention``) at ``prec``, ``layers`` layers resident (the
    mesh command, the explorer, the sweep and the benchmark build theirs here)."""
    if layers < 1:
        raise MeshError(f"--layers {layers}: at least 1")
    if graph == "mlp":
        made = mlp_graph(model, rows, Boundary.replicated, prec, layers)
    elif graph == "attention":
        made = attention_graph(model, rows, prefill, decode_kv, Boundary.replicated, prec, layers)
    elif graph == "layer":
        made = decoder_layer_graph(model, rows, prefill, decode_kv, prec, layers)
    else:
        raise MeshError(f"graph {graph!r}: one of {', '.join(GRAPHS)}")
    return replace(made, reserved_bytes=embedding_bytes(model))


def embedding_bytes(model: TransformerDims) -> int:
    """The embedding table and the LM head, ``vocab x hidden`` each, at bf16 (their format is not the
    precision preset's; bf16 is the largest ttnn keeps them in): what every chip's DRAM holds a share of
    besides the layers (``capacity.py``)."""
    return 2 * model.vocab * model.hidden * 2
