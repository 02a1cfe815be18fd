"""Recognise a gather program: one ``Gather`` op and nothing else, ``out[P, C] = sum_j w * table[index[P, j], C]``.

The iteration space is the output's rows ``P`` (parallel, one unit per output row: ``tile=1``) by its row
width ``C`` (parallel, counted in tiles of 32 elements for the compute); the table's first dimension ``R`` is
selected by the index and walked by no iteration, so only the table names it. Tensors: ``table[R, C]``,
``index[P]`` (the ``rows`` row numbers of each output row, and their weights), ``out[P, C]``.

The properties at the end are what the generic candidate enumerator reads: only the output rows spread
(a core writes whole rows, as ttnn's factories deal them), nothing is reduced, the table and the index
stream from where they live.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.program.dsl import Gather, TileProgram
from loom_explorer.program.family import ProgramFamily, ProgramStructureError


@dataclass(frozen=True, slots=True)
class Gathering:
    """A gather program's structure: its op and the names of its three dimensions."""

    program: TileProgram
    op: Gather
    rows_dim: str  # P: output rows
    width_dim: str  # C: a row's elements
    table_dim: str  # R: the table's rows, selected by the index

    @property
    def rows(self) -> int:
        """Table rows read per output row (1: a copy; 4: a bilinear sample)."""
        return self.op.rows

    @property
    def table(self) -> str:
        return self.op.table

    @property
    def index(self) -> str:
        return self.op.index

    @property
    def spread_dims(self) -> tuple[str, ...]:
        return (self.rows_dim,)

    @property
    def split_dims(self) -> tuple[str, ...]:
        return ()

    @property
    def streamed(self) -> tuple[str, ...]:
        return (self.table, self.index)

    @property
    def output(self) -> str:
        return self.op.out

    flatten: bool = False
    gather_1d: bool = False


def is_gather(program: TileProgram) -> bool:
    """A program with a ``Gather`` op: the gather family's."""
    return any(isinstance(op, Gather) for op in program.ops)


def analyse_gather(program: TileProgram) -> Gathering:
    """The gather structure of ``program`` (``ProgramStructureError`` naming what is wrong)."""
    where = f"program {program.name}"
    gathers = [op for op in program.ops if isinstance(op, Gather)]
    if len(program.ops) != 1 or len(gathers) != 1:
        raise ProgramStructureError(f"{where}: a gather program has exactly one op, a Gather; found {program.ops}")
    op = gathers[0]
    if any(d.kind != "parallel" for d in program.dims):
        raise ProgramStructureError(f"{where}: a gather reduces nothing; every dimension is parallel")
    table, index, out = (program.tensor(t) for t in (op.table, op.index, op.out))
    if table.role != "input" or index.role != "input" or out.role != "output":
        raise ProgramStructureError(
            f"{where}: Gather reads inputs {op.table} and {op.index} and writes output {op.out}"
        )
    if len(out.dims) != 2 or len(table.dims) != 2 or index.dims != out.dims[:1]:
        raise ProgramStructureError(
            f"{where}: a gather is out[P, C] from table[R, C] at index[P]; found "
            f"{op.out}{list(out.dims)}, {op.table}{list(table.dims)}, {op.index}{list(index.dims)}"
        )
    rows_dim, width_dim = out.dims
    table_dim = table.dims[0]
    if table.dims[1] != width_dim or table_dim in (rows_dim, width_dim):
        raise ProgramStructureError(
            f"{where}: the table's rows {table_dim} are selected by the index and its columns are the "
            f"output's {width_dim}; {op.table}{list(table.dims)} is not [{table_dim}, {width_dim}]"
        )
    if len(program.tensors) != 3:
        raise ProgramStructureError(f"{where}: a gather has three tensors (table, index, output)")
    if program.dim(rows_dim).tile != 1 or program.dim(table_dim).tile != 1:
        raise ProgramStructureError(f"{where}: {rows_dim} and {table_dim} count rows (tile=1)")
    return Gathering(program, op, rows_dim, width_dim, table_dim)


GATHER = ProgramFamily(
    name="gather",
    description="rows of a table read where an index says: embedding lookups, bilinear grid samples",
    matches=is_gather,
    analyse=analyse_gather,
)
