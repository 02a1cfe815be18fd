"""A small tile DSL: dimensions, tensors with tile access maps, and the work of one iteration point.

A :class:`TileProgram` is an SPMD loop nest over its dimensions. Each tensor names the dimensions that
index it (its *access map*): tensor ``in0[M, K]`` is touched by iteration ``(m, n, k)`` at tile
``(m, k)``. Everything the mapping layer needs is derived from these maps:

* a tensor is *shared* along a dimension it does not mention (every ``n`` reads the same ``in0[m, k]``),
  so it may be multicast along a grid axis that carries only such dimensions;
* a reduction dimension placed on the grid leaves partial results of the outputs that do not mention it,
  to be gathered and reduced.

Dimension extents are given in elements (``M=4096``) and counted in tiles of ``tile`` elements (32 for
the two matrix dimensions of a tile, 1 for batch-like dimensions).

Two refinements serve attention-like programs:

* ``Dim(..., spread=False)`` keeps a dimension whole on every core (a head dimension is never split);
* ``Dim("Hkv", ..., group_of="H")`` is a *grouped* index: a tensor indexed by ``Hkv`` is touched by
  iteration ``h`` at ``h // (E_H / E_Hkv)``, so ``E_H / E_Hkv`` consecutive ``h`` share it (grouped-query
  attention). Its extent defaults to ``E_H`` (no sharing) and must divide ``E_H``.

Data-movement programs (``Move``) add two more:

* ``Tensor(..., layout="row_major")`` stores a tensor as row-major pages (one page, a "stick", per row of
  its last dimension) rather than 32x32 tiles (``layout="tile"``, the default): a move from one layout to the
  other is a tilize or an untilize;
* ``Dim("Wx", ..., part_of="W")`` is a dimension that covers the leading ``E_Wx <= E_W`` elements of
  another: a tensor indexed by ``Wx`` where the iteration runs over ``W`` is the smaller one (a move into it
  slices, a move out of it pads). Its extent defaults to ``E_W``.

Tensors are ``input``, ``output`` or ``intermediate`` (produced and consumed inside one reduction step,
e.g. attention scores, or running statistics): intermediates live only in L1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from loom_explorer.errors import LoomError

DimKind = Literal["parallel", "reduction"]
TensorRole = Literal["input", "output", "intermediate"]
EltwiseWhen = Literal["final", "step", "diagonal"]
EltwiseUnit = Literal["fpu", "sfpu"]
TensorLayout = Literal["tile", "row_major"]


class ProgramError(LoomError, ValueError):
    """A tile program that cannot be (a tile of 0 elements, an unknown kind, a dimension twice in one access
    map, an output read by a matmul or written by no op, ...); the message names the dimension, tensor or
    op at fault."""


def _name(what: str, value: object) -> str:
    """``value`` as the name of a dimension or tensor: a Python identifier, since names are spelt on the
    command line (``--shape M=64``, ``--format in1=bfp8_b``) and in the generated kernels."""
    if not isinstance(value, str) or not value.isidentifier():
        raise ProgramError(f"{what} name {value!r} must be an identifier (letters, digits, '_'; not a digit first)")
    return value


def _one_of(where: str, field_name: str, value: object, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise ProgramError(f"{where}: {field_name} {value!r} is not one of {', '.join(map(repr, allowed))}")


def _flag(where: str, field_name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ProgramError(f"{where}: {field_name} {value!r} must be True or False")


def _text(where: str, field_name: str, value: object) -> None:
    if not isinstance(value, str):
        raise ProgramError(f"{where}: {field_name} {value!r} must be a string")


def _names(where: str, field_name: str, value: object) -> tuple[str, ...]:
    """A tuple (or list) of names as a tuple; a bare string is refused, since ``("M")`` is not ``("M",)``."""
    if isinstance(value, str) or not isinstance(value, (tuple, list)):
        raise ProgramError(f"{where}: {field_name} {value!r} must be a tuple of names, e.g. ('M', 'K') or ('M',)")
    bad = [v for v in value if not isinstance(v, str)]
    if bad:
        raise ProgramError(f"{where}: {field_name} {tuple(value)!r} holds {bad[0]!r}, which is not a name")
    return tuple(value)


def _tensor_ref(where: str, field_name: str, value: object, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        raise ProgramError(f"{where}: {field_name} {value!r} must name a tensor of the program")


@dataclass(frozen=True, slots=True)
class Dim:
    name: str
    kind: DimKind
    tile: int = 32
    description: str = ""
    spread: bool = True
    group_of: str | None = None
    part_of: str | None = None

    def __post_init__(self) -> None:
        where = f"dimension {_name('dimension', self.name)}"
        _one_of(where, "kind", self.kind, get_args(DimKind))
        if isinstance(self.tile, bool) or not isinstance(self.tile, int) or self.tile < 1:
            raise ProgramError(
                f"{where}: tile {self.tile!r} must be a whole number of elements >= 1 "
                "(32 for a matrix dimension, 1 for a batch-like one)"
            )
        _text(where, "description", self.description)
        _flag(where, "spread", self.spread)
        if self.group_of is not None:
            _name(f"{where}: group_of: dimension", self.group_of)
        if self.part_of is not None:
            _name(f"{where}: part_of: dimension", self.part_of)
            if self.group_of is not None:
                raise ProgramError(f"{where}: a dimension is part_of another or groups one, not both")

    def tiles(self, elements: int) -> int:
        """Number of tiles (ceil) covering ``elements``: ``ceil(elements / tile)``, ``tile >= 1``."""
        return -(-elements // self.tile)


@dataclass(frozen=True, slots=True)
class Tensor:
    name: str
    dims: tuple[str, ...]
    role: TensorRole
    optional: bool = False
    description: str = ""
    layout: TensorLayout = "tile"

    def __post_init__(self) -> None:
        where = f"tensor {_name('tensor', self.name)}"
        dims = _names(where, "dims (its access map)", self.dims)
        object.__setattr__(self, "dims", dims)  # a list given is kept as the tuple it means
        twice = sorted({d for d in dims if dims.count(d) > 1})
        if twice:
            raise ProgramError(
                f"{where}: its access map {list(dims)} names dimension {twice[0]} twice (a tensor "
                "is indexed by each dimension at most once)"
            )
        _one_of(where, "role", self.role, get_args(TensorRole))
        _flag(where, "optional", self.optional)
        _text(where, "description", self.description)
        _one_of(where, "layout", self.layout, get_args(TensorLayout))


@dataclass(frozen=True, slots=True)
class Matmul:
    """One 32x32x32 tile matmul ``out += a @ b`` per iteration point."""

    a: str
    b: str
    out: str

    def __post_init__(self) -> None:
        for field_name in ("a", "b", "out"):
            _tensor_ref("Matmul", field_name, getattr(self, field_name))


@dataclass(frozen=True, slots=True)
class Eltwise:
    """An elementwise op on the tiles of ``tensor``.

    ``when`` says how often: ``final`` once per tile of the tensor's final value (a GEMM epilogue),
    ``step`` once per tile of the tensor's block at every reduction step (online-softmax updates),
    ``diagonal`` like ``step`` but only on the steps that cross a causal diagonal (the causal mask; the
    program must declare the option ``causal``, and the op is skipped without it).
    ``unit`` is the engine that runs it: ``fpu`` (e.g. adding a bias row) or ``sfpu`` (activations).
    ``op`` names the cost entry in the hardware description (``compute.sfpu_tile_cycles``); the special
    op ``activation`` takes its name from the problem (``--activation gelu``) and is skipped without one.
    ``operand`` names a second input (e.g. the bias); the op is skipped when that optional tensor is off.
    ``source`` names the tensor whose value the first op on ``tensor`` starts from, where ops chain through
    several tensors (a row reduction's ``x - max``: ``Eltwise("sub", "e", unit="fpu", operand="m",
    source="x")``); without it an element-wise program starts from the input no op names.
    """

    op: str
    tensor: str
    unit: EltwiseUnit = "sfpu"
    operand: str | None = None
    when: EltwiseWhen = "final"
    source: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.op, str) or not self.op:
            raise ProgramError(f"Eltwise on {self.tensor!r}: op {self.op!r} must name the operation (e.g. 'gelu')")
        where = f"Eltwise {self.op}"
        _tensor_ref(where, "tensor", self.tensor)
        _one_of(where, "unit", self.unit, get_args(EltwiseUnit))
        _one_of(where, "when", self.when, get_args(EltwiseWhen))
        _tensor_ref(where, "operand", self.operand, optional=True)
        _tensor_ref(where, "source", self.source, optional=True)


ReduceOp = Literal["sum", "max", "mean"]


@dataclass(frozen=True, slots=True)
class Reduce:
    """``out[h] = op over w of operand[h, w]``: a reduction over the program's reduction dimension that is
    not contracted (no matmul). ``out`` is indexed by the operand's dimensions but the reduced one (a column
    vector ``[H]`` of an ``[H, W]`` operand); ``mean`` is the sum times ``1 / W`` (``W`` in elements)."""

    op: ReduceOp
    out: str
    operand: str

    def __post_init__(self) -> None:
        _one_of("Reduce", "op", self.op, get_args(ReduceOp))
        _tensor_ref(f"Reduce {self.op}", "out", self.out)
        _tensor_ref(f"Reduce {self.op}", "operand", self.operand)


@dataclass(frozen=True, slots=True)
class Gather:
    """``out[p, c] = sum_{j < rows} w[p, j] * table[index[p, j], c]``: every output row reads ``rows`` rows of
    ``table`` at data-dependent positions that the ``index`` tensor names (an *indirect* access map).

    ``table``'s first dimension is the one ``index`` selects along: no iteration walks it, so no other tensor
    names it; its other dimensions are the last ones of ``out`` (a row of the table is a row of the output).
    ``index`` holds, per output row, the ``rows`` row numbers (and, for ``rows > 1``, their weights).
    ``rows=1`` copies one row (an embedding lookup); ``rows=4`` is a bilinear sample (four neighbours,
    weighted)."""

    out: str
    table: str
    index: str
    rows: int = 1

    def __post_init__(self) -> None:
        for field_name in ("out", "table", "index"):
            _tensor_ref("Gather", field_name, getattr(self, field_name))
        if isinstance(self.rows, bool) or not isinstance(self.rows, int) or self.rows < 1:
            raise ProgramError(f"Gather into {self.out!r}: rows {self.rows!r} must be a whole number >= 1")


@dataclass(frozen=True, slots=True)
class Move:
    """``dst[...] = src[...]``: every element of ``src`` copied to ``dst``, each placed as the two access maps
    say. The maps name the same dimensions, in any order (a different order permutes: ``src[H, W]`` into
    ``dst[W, H]`` transposes), a dimension and its parts (``Dim(..., part_of=...)``) counting as one (a smaller
    destination slices, a smaller source is padded); the two tensors' layouts may differ (tile into row-major
    untilizes, row-major into tile tilizes) and so may their data formats (a typecast). Several moves into one
    destination concatenate their sources along the dimension of which each covers a part."""

    src: str
    dst: str

    def __post_init__(self) -> None:
        _tensor_ref("Move", "src", self.src)
        _tensor_ref("Move", "dst", self.dst)


Op = Matmul | Eltwise | Reduce | Gather | Move


@dataclass(frozen=True, slots=True)
class TileProgram:
    name: str
    description: str
    dims: tuple[Dim, ...]
    tensors: tuple[Tensor, ...]
    ops: tuple[Op, ...]
    options: tuple[str, ...] = field(default=())
    example_shape: str = ""  # a typical --shape, e.g. "M=4096,K=4096,N=4096" (the explorer's default)

    def __post_init__(self) -> None:
        """Refuse a program that cannot be (:class:`ProgramError` naming the dimension, tensor or op): every
        name known and given once, every op's tensors known, a matmul reading inputs or intermediates and
        writing an output or intermediate, every output written by some op."""
        if not isinstance(self.name, str) or not self.name.strip() or "\n" in self.name:
            raise ProgramError(f"program name {self.name!r} must be a non-empty one-line string")
        where = f"program {self.name}"
        _text(where, "description", self.description)
        _text(where, "example_shape", self.example_shape)
        self._normalise_parts(where)
        object.__setattr__(self, "options", _names(where, "options", self.options))
        self._check_names(where)
        written = self._check_ops(where)
        self._check_outputs(where, written)
        self._check_groups(where)
        self._check_parts(where)
        self._check_moves(where)
        self._check_causal_ops(where)

    def _normalise_parts(self, where: str) -> None:
        """``dims``, ``tensors`` and ``ops`` each a tuple (a list given is kept as the tuple it means) of
        the classes it holds."""
        parts: tuple[tuple[str, tuple[type, ...], str], ...] = (
            ("dims", (Dim,), "Dim"),
            ("tensors", (Tensor,), "Tensor"),
            ("ops", (Matmul, Eltwise, Reduce, Gather, Move), "Matmul, Eltwise, Reduce, Gather or Move"),
        )
        for field_name, classes, wanted in parts:
            items = getattr(self, field_name)
            if isinstance(items, str) or not isinstance(items, (tuple, list)):
                raise ProgramError(f"{where}: {field_name} must be a tuple, got {type(items).__name__}")
            bad = next((i for i, x in enumerate(items) if not isinstance(x, classes)), None)
            if bad is not None:
                raise ProgramError(f"{where}: {field_name}[{bad}] is a {type(items[bad]).__name__}, not a {wanted}")
            object.__setattr__(self, field_name, tuple(items))  # a list given is kept as the tuple it means

    def _check_names(self, where: str) -> None:
        """Dimension and tensor names each given once; every tensor's dimensions known."""
        names = [d.name for d in self.dims]
        if len(set(names)) != len(names):
            raise ProgramError(f"{where}: repeated dimension names {names}")
        tnames = [t.name for t in self.tensors]
        if len(set(tnames)) != len(tnames):
            raise ProgramError(f"{where}: repeated tensor names {tnames}")
        for t in self.tensors:
            unknown = [d for d in t.dims if d not in names]
            if unknown:
                raise ProgramError(f"{where}: tensor {t.name} uses unknown dimensions {unknown}")

    def _check_ops(self, where: str) -> set[str]:
        """Every op's tensors known, none writing an input, no matmul reading an output; the names of the
        tensors the ops write."""
        tnames = [t.name for t in self.tensors]
        written: set[str] = set()
        for op in self.ops:
            if isinstance(op, Matmul):
                used: tuple[str, ...] = (op.a, op.b, op.out)
                out = op.out
            elif isinstance(op, Reduce):
                used, out = (op.out, op.operand), op.out
            elif isinstance(op, Gather):
                used, out = (op.out, op.table, op.index), op.out
            elif isinstance(op, Move):
                used, out = (op.src, op.dst), op.dst
            else:
                used, out = (op.tensor, *(t for t in (op.operand, op.source) if t)), op.tensor
            missing = [u for u in used if u not in tnames]
            if missing:
                raise ProgramError(f"{where}: op {op} names unknown tensors {missing}")
            if self.tensor(out).role == "input":
                raise ProgramError(f"{where}: op {op} writes input {out}; ops write outputs or intermediates")
            if isinstance(op, Matmul):
                read = [t for t in (op.a, op.b) if self.tensor(t).role == "output"]
                if read:
                    raise ProgramError(
                        f"{where}: {op} reads output {read[0]}; a matmul reads inputs or "
                        "intermediates (an output is only written)"
                    )
            if isinstance(op, Move) and self.tensor(op.src).role == "output":
                raise ProgramError(
                    f"{where}: {op} reads output {op.src}; a move reads an input or an intermediate "
                    "(an output is only written)"
                )
            written.add(out)
        return written

    def _check_outputs(self, where: str, written: set[str]) -> None:
        """At least one output, each one in ``written`` (the result of an op)."""
        if not any(t.role == "output" for t in self.tensors):
            raise ProgramError(f"{where}: no output tensor")
        unwritten = [t.name for t in self.tensors if t.role == "output" and t.name not in written]
        if unwritten:
            raise ProgramError(f"{where}: no op writes output {unwritten[0]} (every output is the result of an op)")

    def _check_groups(self, where: str) -> None:
        """A grouped dimension groups another known dimension, both with ``tile=1``."""
        names = [d.name for d in self.dims]
        for d in self.dims:
            if d.group_of is not None and (d.group_of not in names or d.group_of == d.name):
                raise ProgramError(f"{where}: dimension {d.name} groups unknown dimension {d.group_of!r}")
            if d.group_of is not None and (d.tile != 1 or self.dim(d.group_of).tile != 1):
                raise ProgramError(f"{where}: grouped dimension {d.name} and {d.group_of} need tile=1")

    def _check_parts(self, where: str) -> None:
        """A part of a dimension is part of another known dimension, itself whole, of the same tile."""
        names = [d.name for d in self.dims]
        for d in self.dims:
            if d.part_of is None:
                continue
            if d.part_of not in names or d.part_of == d.name:
                raise ProgramError(f"{where}: dimension {d.name} is part of unknown dimension {d.part_of!r}")
            parent = self.dim(d.part_of)
            if parent.part_of is not None or parent.group_of is not None:
                raise ProgramError(
                    f"{where}: dimension {d.name} is part of {parent.name}, which is itself a part or a group; "
                    "name the whole dimension"
                )
            if d.tile != parent.tile or d.kind != parent.kind:
                raise ProgramError(
                    f"{where}: dimension {d.name} is part of {parent.name} but differs in tile or kind "
                    f"({d.tile}, {d.kind} against {parent.tile}, {parent.kind})"
                )

    def whole(self, dim: str) -> str:
        """The dimension ``dim`` is part of (``Dim.part_of``), else ``dim`` itself."""
        return self.dim(dim).part_of or dim

    def _check_moves(self, where: str) -> None:
        """A move's source and destination index the same dimensions (a dimension and its parts as one), each
        once: a move re-lays data; it neither reduces nor broadcasts."""
        for op in self.ops:
            if not isinstance(op, Move):
                continue
            src, dst = self.tensor(op.src), self.tensor(op.dst)
            src_whole = [self.whole(d) for d in src.dims]
            dst_whole = [self.whole(d) for d in dst.dims]
            for t, whole in ((src, src_whole), (dst, dst_whole)):
                twice = sorted({d for d in whole if whole.count(d) > 1})
                if twice:
                    raise ProgramError(
                        f"{where}: {op}: {t.name}{list(t.dims)} indexes dimension {twice[0]} twice "
                        "(through its parts); a moved tensor is indexed by each dimension once"
                    )
            if set(src_whole) != set(dst_whole):
                raise ProgramError(
                    f"{where}: {op}: {src.name}{list(src.dims)} and {dst.name}{list(dst.dims)} index "
                    f"different dimensions ({sorted(set(src_whole) ^ set(dst_whole))} in one only); a move "
                    "re-lays its source (permute, slice, pad, tilize), it neither reduces nor broadcasts"
                )

    def _check_causal_ops(self, where: str) -> None:
        """An op on the causal diagonal only in a program with the ``causal`` option."""
        for op in self.ops:
            if isinstance(op, Eltwise) and op.when == "diagonal" and "causal" not in self.options:
                raise ProgramError(
                    f"{where}: op {op.op} on {op.tensor} runs on the causal diagonal "
                    "but the program has no 'causal' option"
                )

    @property
    def uses_activation(self) -> bool:
        """Whether an op takes its function from the problem's activation (``Eltwise("activation", ...)``)."""
        return any(isinstance(op, Eltwise) and op.op == "activation" for op in self.ops)

    def dim(self, name: str) -> Dim:
        for d in self.dims:
            if d.name == name:
                return d
        raise KeyError(f"program {self.name} has no dimension {name!r}")

    def tensor(self, name: str) -> Tensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(f"program {self.name} has no tensor {name!r}")

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.role == "input")

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.role == "output")

    @property
    def intermediates(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.role == "intermediate")

    def shared_along(self, tensor: str, dim: str) -> bool:
        """True when every index of ``dim`` touches the same tiles of ``tensor`` (reuse across ``dim``): never
        when the tensor is indexed by ``dim``, by a group of it or by a part of it."""
        dims = self.tensor(tensor).dims
        parted = any(self.dim(d).part_of == dim for d in dims)
        return dim not in dims and self.grouped_by(tensor, dim) is None and not parted

    def grouped_by(self, tensor: str, dim: str) -> str | None:
        """The grouped dimension through which ``tensor`` is indexed by ``dim`` (``Hkv`` for ``k`` along
        ``H``): groups of consecutive ``dim`` indices share a tile. None when there is no such index."""
        if dim in self.tensor(tensor).dims:
            return None
        return next((d for d in self.tensor(tensor).dims if self.dim(d).group_of == dim), None)
