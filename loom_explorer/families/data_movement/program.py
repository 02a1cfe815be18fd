"""Recognise a data-movement program from its ops: every op a ``Move`` (``program/dsl.py``).

The iteration space is the output's dimensions, a part of a dimension standing for its whole (``Dim(...,
part_of=...)``), in the output's order: its last dimension is the columns (a row-major tensor's page runs
along it), the others the rows. Each move copies its source to the output: the source's access map may
permute the dimensions (a transpose when it swaps the last two), index a part of one (padded up to it) and
the output a part (sliced); the layouts and data formats of the two may differ (tilize, untilize, typecast).
Several moves into the output concatenate their sources.

What the enumerator reads: every whole dimension may be spread, alone, in pairs, or all tiles flattened
row-major over a 1-D layout; no dimension is split; every source streams block by block (it indexes every
dimension of the iteration, so it is never shared along one and never multicast).
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.program.dsl import Move, TileProgram
from loom_explorer.program.family import ProgramFamily, ProgramStructureError


@dataclass(frozen=True, slots=True)
class DataMovement:
    program: TileProgram
    moves: tuple[Move, ...]
    output: str

    @property
    def dims(self) -> tuple[str, ...]:
        """The iteration space: the output's dimensions as wholes, in the output's order."""
        return tuple(self.program.whole(d) for d in self.program.tensor(self.output).dims)

    @property
    def columns(self) -> str:
        """The last dimension of the iteration (a row-major page runs along it)."""
        return self.dims[-1]

    @property
    def spread_dims(self) -> tuple[str, ...]:
        return tuple(d for d in self.dims if self.program.dim(d).spread)

    @property
    def split_dims(self) -> tuple[str, ...]:
        return ()

    @property
    def streamed(self) -> tuple[str, ...]:
        """Every source, in the order of the moves."""
        return tuple(dict.fromkeys(m.src for m in self.moves))

    flatten: bool = True
    gather_1d: bool = False

    def transposes(self, tensor: str) -> bool:
        """Whether ``tensor`` is laid out with the output's last two dimensions swapped (a transpose-WH of
        each tile), judged on the wholes of its access map."""
        dims = [self.program.whole(d) for d in self.program.tensor(tensor).dims]
        out = list(self.dims)
        return len(out) >= 2 and dims[-2:] == [out[-1], out[-2]]

    def relayout(self, tensor: str) -> str | None:
        """How the compute core re-lays each tile of source ``tensor`` on its way to the output: ``tilize``,
        ``untilize``, ``transpose`` or None (the data-movement cores copy it as it is; a typecast is the
        problem's, ``work.py``)."""
        src, dst = self.program.tensor(tensor).layout, self.program.tensor(self.output).layout
        if src == "row_major" and dst == "tile":
            return "tilize"
        if src == "tile" and dst == "row_major":
            return "untilize"
        if self.transposes(tensor):
            return "transpose"
        return None


def is_data_movement(program: TileProgram) -> bool:
    """Every op a ``Move``: the data-movement family's shape."""
    return bool(program.ops) and all(isinstance(op, Move) for op in program.ops)


def analyse_data_movement(program: TileProgram) -> DataMovement:
    """The data-movement structure of ``program`` (``ProgramStructureError`` naming what is wrong)."""
    where = f"program {program.name}"
    if not is_data_movement(program):
        raise ProgramStructureError(f"{where}: a data-movement program's ops are all Move ops")
    moves = tuple(op for op in program.ops if isinstance(op, Move))
    if program.intermediates:
        raise ProgramStructureError(
            f"{where}: intermediate tensors {', '.join(t.name for t in program.intermediates)}: a data-movement "
            "program moves its inputs straight to its output"
        )
    outputs = [t.name for t in program.outputs]
    if len(outputs) != 1:
        raise ProgramStructureError(
            f"{where}: a data-movement program writes one output, found {', '.join(outputs)} (split into one "
            "program per output)"
        )
    unread = [t.name for t in program.inputs if t.name not in {m.src for m in moves}]
    if unread:
        raise ProgramStructureError(f"{where}: input {unread[0]} is moved by no op")
    return DataMovement(program, moves, outputs[0])


DATA_MOVEMENT = ProgramFamily(
    name="data_movement",
    description="moves and re-layouts: copy, permute, slice, pad, concatenate, tilize, untilize, typecast",
    matches=is_data_movement,
    analyse=analyse_data_movement,
)
