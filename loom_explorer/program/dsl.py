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

Tensors are ``input``, ``output`` or ``intermediate`` (produced and consumed inside one reduction step,
e.g. attention scores, or running statistics): intermediates live only in L1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

DimKind = Literal["parallel", "reduction"]
TensorRole = Literal["input", "output", "intermediate"]
EltwiseWhen = Literal["final", "step", "diagonal"]


@dataclass(frozen=True, slots=True)
class Dim:
    name: str
    kind: DimKind
    tile: int = 32
    description: str = ""
    spread: bool = True
    group_of: str | None = None

    def tiles(self, elements: int) -> int:
        """Number of tiles (ceil) covering ``elements``."""
        return -(-elements // self.tile)


@dataclass(frozen=True, slots=True)
class Tensor:
    name: str
    dims: tuple[str, ...]
    role: TensorRole
    optional: bool = False
    description: str = ""


@dataclass(frozen=True, slots=True)
class Matmul:
    """One 32x32x32 tile matmul ``out += a @ b`` per iteration point."""

    a: str
    b: str
    out: str


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
    unit: Literal["fpu", "sfpu"] = "sfpu"
    operand: str | None = None
    when: EltwiseWhen = "final"
    source: str | None = None


ReduceOp = Literal["sum", "max", "mean"]


@dataclass(frozen=True, slots=True)
class Reduce:
    """``out[h] = op over w of operand[h, w]``: a reduction over the program's reduction dimension that is
    not contracted (no matmul). ``out`` is indexed by the operand's dimensions but the reduced one (a column
    vector ``[H]`` of an ``[H, W]`` operand); ``mean`` is the sum times ``1 / W`` (``W`` in elements)."""

    op: ReduceOp
    out: str
    operand: str


Op = Matmul | Eltwise | Reduce


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
        names = [d.name for d in self.dims]
        if len(set(names)) != len(names):
            raise ValueError(f"program {self.name}: repeated dimension names {names}")
        tnames = [t.name for t in self.tensors]
        if len(set(tnames)) != len(tnames):
            raise ValueError(f"program {self.name}: repeated tensor names {tnames}")
        for t in self.tensors:
            unknown = [d for d in t.dims if d not in names]
            if unknown:
                raise ValueError(f"program {self.name}: tensor {t.name} uses unknown dimensions {unknown}")
        for op in self.ops:
            if isinstance(op, Matmul):
                used: tuple[str, ...] = (op.a, op.b, op.out)
            elif isinstance(op, Reduce):
                used = (op.out, op.operand)
            else:
                used = (op.tensor, *(t for t in (op.operand, op.source) if t))
            missing = [u for u in used if u not in tnames]
            if missing:
                raise ValueError(f"program {self.name}: op {op} names unknown tensors {missing}")
        if not any(t.role == "output" for t in self.tensors):
            raise ValueError(f"program {self.name}: no output tensor")
        for d in self.dims:
            if d.group_of is not None and (d.group_of not in names or d.group_of == d.name):
                raise ValueError(f"program {self.name}: dimension {d.name} groups unknown dimension {d.group_of!r}")
            if d.group_of is not None and (d.tile != 1 or self.dim(d.group_of).tile != 1):
                raise ValueError(f"program {self.name}: grouped dimension {d.name} and {d.group_of} need tile=1")
        for op in self.ops:
            if isinstance(op, Eltwise) and op.when == "diagonal" and "causal" not in self.options:
                raise ValueError(f"program {self.name}: op {op.op} on {op.tensor} runs on the causal diagonal "
                                 "but the program has no 'causal' option")

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
        """True when every index of ``dim`` touches the same tiles of ``tensor`` (reuse across ``dim``)."""
        dims = self.tensor(tensor).dims
        return dim not in dims and self.grouped_by(tensor, dim) is None

    def grouped_by(self, tensor: str, dim: str) -> str | None:
        """The grouped dimension through which ``tensor`` is indexed by ``dim`` (``Hkv`` for ``k`` along
        ``H``): groups of consecutive ``dim`` indices share a tile. None when there is no such index."""
        if dim in self.tensor(tensor).dims:
            return None
        return next((d for d in self.tensor(tensor).dims if self.dim(d).group_of == dim), None)
