"""Recognise an element-wise program from its access maps: no matmul, no reduction, every output over the
whole iteration space.

The ops run in order on the outputs' running value, once per output tile (``when="final"``): it starts as
the ``source`` the first op on an output names, or else the one input no op names as its ``operand``
(``y = a + b``: ``Eltwise("add", "y", unit="fpu", operand="b")`` starts from ``a``); an FPU op combines it
with its operand, and an SFPU op with an operand applies to that operand (``y = relu(x)``:
``Eltwise("relu", "y", operand="x")``). ``y = x * sigmoid(x)`` is ``Eltwise("sigmoid", "y", source="x")``
then ``Eltwise("mul", "y", unit="fpu", operand="x")``.

The iteration space is the program's two dimensions, rows and columns (e.g. ``H``, ``W``, a tensor's last
two). Every output tensor is indexed by both; an input may be indexed by both (it streams tile for tile
with the output) or by fewer (it is *broadcast* along the ones it leaves out: a row vector ``bias[W]`` is
the same row for every ``h``, a column vector ``[H]`` the same column for every ``w``, a scalar ``[]`` one
value). Each op costs its unit's cycles per tile from the hardware description.

The properties at the end are what the generic candidate enumerator reads: every dimension may be spread
(rows, columns, both, or all tiles flattened row-major on a 1-D layout), every input gets its
communication options (``dram``, or a multicast along the axes it is broadcast along).
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.program.dsl import Eltwise, Gather, Matmul, Move, Reduce, TileProgram
from loom_explorer.program.family import ProgramFamily, ProgramStructureError


@dataclass(frozen=True, slots=True)
class Elementwise:
    program: TileProgram
    ops: tuple[Eltwise, ...]
    outputs: tuple[str, ...]

    @property
    def dims(self) -> tuple[str, ...]:
        """The iteration space: every dimension of the program."""
        return tuple(d.name for d in self.program.dims)

    @property
    def spread_dims(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.program.dims if d.spread)

    @property
    def split_dims(self) -> tuple[str, ...]:
        return ()

    @property
    def streamed(self) -> tuple[str, ...]:
        """Every input (full-rank ones stream block by block; broadcast ones are read once per core)."""
        return tuple(t.name for t in self.program.inputs)

    @property
    def full(self) -> tuple[str, ...]:
        """Inputs indexed by every dimension: one tile per output tile."""
        return tuple(t for t in self.streamed if set(self.program.tensor(t).dims) == set(self.dims))

    @property
    def broadcast(self) -> tuple[str, ...]:
        """Inputs indexed by fewer dimensions, the same tiles for every index of the others."""
        return tuple(t for t in self.streamed if t not in self.full)

    @property
    def scalars(self) -> tuple[str, ...]:
        """Broadcast inputs indexed by no dimension: one value (a tile's first element) for every tile."""
        return tuple(t for t in self.broadcast if not self.program.tensor(t).dims)

    @property
    def output(self) -> str:
        return self.outputs[0]

    flatten: bool = True  # all tiles may be dealt out row-major over a 1-D layout
    gather_1d: bool = False


def is_elementwise(program: TileProgram) -> bool:
    """No matmul, no reduction, no gather, no move and no reduction dimension: the element-wise family's shape."""
    return not any(isinstance(op, (Matmul, Reduce, Gather, Move)) for op in program.ops) and all(
        d.kind == "parallel" for d in program.dims
    )


def analyse_elementwise(program: TileProgram) -> Elementwise:
    """The element-wise structure of ``program`` (``ProgramStructureError`` naming what is wrong)."""
    where = f"program {program.name}"
    if not is_elementwise(program):
        raise ProgramStructureError(f"{where}: an element-wise program has no Matmul op and no reduction dim")
    ops = tuple(op for op in program.ops if isinstance(op, Eltwise))
    if not ops:
        raise ProgramStructureError(
            f"{where}: no Eltwise op (an element-wise program computes its outputs with at least one)"
        )
    if len(program.dims) != 2:
        raise ProgramStructureError(
            f"{where}: an element-wise program has two dimensions (rows, columns: a "
            f"tensor's last two), found {len(program.dims)}; fold leading dims into rows"
        )
    dims = {d.name for d in program.dims}
    outputs = tuple(t.name for t in program.outputs)
    for name in outputs:
        if set(program.tensor(name).dims) != dims:
            raise ProgramStructureError(
                f"{where}: output {name}{list(program.tensor(name).dims)} must be "
                f"indexed by every dimension {sorted(dims)}"
            )
    for op in ops:
        if op.when != "final":
            raise ProgramStructureError(
                f"{where}: op {op.op} on {op.tensor} runs per {op.when} step; an "
                "element-wise program has no reduction steps (use when='final')"
            )
        if program.tensor(op.tensor).role == "input":
            raise ProgramStructureError(
                f"{where}: op {op.op} writes input {op.tensor}; ops write outputs or intermediates"
            )
    used = {t for op in ops for t in (op.operand, op.source) if t}
    unnamed = [t.name for t in program.inputs if t.name not in used]
    if len(unnamed) > 1:
        raise ProgramStructureError(
            f"{where}: inputs {', '.join(unnamed)} are named by no op; at most one input "
            "may go unnamed (it is the outputs' starting value)"
        )
    return Elementwise(program, ops, outputs)


ELEMENTWISE = ProgramFamily(
    name="elementwise",
    description="element-wise ops over one iteration space, inputs broadcast along the dims they leave out",
    matches=is_elementwise,
    analyse=analyse_elementwise,
    activation_required=True,
)
