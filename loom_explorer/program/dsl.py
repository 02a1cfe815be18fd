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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

DimKind = Literal["parallel", "reduction"]
TensorRole = Literal["input", "output"]


@dataclass(frozen=True, slots=True)
class Dim:
    name: str
    kind: DimKind
    tile: int = 32
    description: str = ""

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
    """An elementwise op applied once per tile of ``tensor``'s final value.

    ``unit`` is the engine that runs it: ``fpu`` (e.g. adding a bias row) or ``sfpu`` (activations).
    ``op`` names the cost entry in the hardware description (``compute.sfpu_tile_cycles``); the special
    op ``activation`` takes its name from the problem (``--activation gelu``) and is skipped without one.
    ``operand`` names a second input (e.g. the bias); the op is skipped when that optional tensor is off.
    """

    op: str
    tensor: str
    unit: Literal["fpu", "sfpu"] = "sfpu"
    operand: str | None = None


Op = Matmul | Eltwise


@dataclass(frozen=True, slots=True)
class TileProgram:
    name: str
    description: str
    dims: tuple[Dim, ...]
    tensors: tuple[Tensor, ...]
    ops: tuple[Op, ...]
    options: tuple[str, ...] = field(default=())

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
            used = (op.a, op.b, op.out) if isinstance(op, Matmul) else (op.tensor,) + (
                (op.operand,) if op.operand else ()
            )
            missing = [u for u in used if u not in tnames]
            if missing:
                raise ValueError(f"program {self.name}: op {op} names unknown tensors {missing}")
        if not any(t.role == "output" for t in self.tensors):
            raise ValueError(f"program {self.name}: no output tensor")

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

    def shared_along(self, tensor: str, dim: str) -> bool:
        """True when every index of ``dim`` touches the same tiles of ``tensor`` (reuse across ``dim``)."""
        return dim not in self.tensor(tensor).dims
