"""Recognise a row-reduction program from its ops and access maps: no matmul, one ``Reduce`` op or more
over a reduction dimension that is not contracted, and element-wise ops that use the reduced values
(softmax, RMSNorm, LayerNorm).

The iteration space is rows x columns (``H``, ``W``): the rows are parallel, the columns the reduction
dimension. Tensors are *rows* (indexed ``[H, W]``: the input ``x``, intermediates such as ``x - max``, the
output), *column vectors* (``[H]``: one value per row, e.g. a row's sum), *row vectors* (``[W]``: the same
for every row, e.g. ``gamma``) or *scalars* (``[]``: ``eps``). ``Reduce(op, out, operand)`` turns a rows
tensor into a column vector; an ``Eltwise`` op updates its tensor's running value, which starts from the
``source`` the first op on that tensor names, and combines it with an operand broadcast as its access map
says (an SFPU op applies to the running value).

The properties at the end are what the generic candidate enumerator reads: the rows may be spread; the
columns may be split over a grid axis, or over a 1-D layout, with each reduction's partial results
gathered to the first core along it and the combined values multicast back (as TTNN's sharded LayerNorm
does); the inputs indexed by the columns travel (the full input, row vectors), and so do column vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.program.dsl import Eltwise, Matmul, Reduce, TileProgram
from loom_explorer.program.family import ProgramFamily, ProgramStructureError


@dataclass(frozen=True, slots=True)
class Pass:
    """One pass over a block: a reduction, or a run of consecutive element-wise ops on one tensor (fused in
    the destination registers), storing version ``version`` (1, 2, ...) of ``tensor``."""

    tensor: str
    version: int
    ops: tuple[Eltwise, ...] = ()
    reduce: Reduce | None = None


@dataclass(frozen=True, slots=True)
class RowReduction:
    program: TileProgram
    ops: tuple[Eltwise | Reduce, ...]
    rows_dim: str
    cols_dim: str

    @property
    def dims(self) -> tuple[str, str]:
        return self.rows_dim, self.cols_dim

    @property
    def spread_dims(self) -> tuple[str, ...]:
        return (self.rows_dim,)

    @property
    def split_dims(self) -> tuple[str, ...]:
        return (self.cols_dim,)

    def kind(self, tensor: str) -> str:
        """``rows`` ([H, W]), ``col`` ([H]), ``row`` ([W]) or ``scalar`` ([])."""
        dims = self.program.tensor(tensor).dims
        return {2: "rows", 0: "scalar"}.get(len(dims)) or ("col" if dims == (self.rows_dim,) else "row")

    @property
    def streamed(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.program.inputs)

    @property
    def full(self) -> tuple[str, ...]:
        """Inputs indexed by rows and columns: read block by block."""
        return tuple(t for t in self.streamed if self.kind(t) == "rows")

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.program.outputs)

    @property
    def output(self) -> str:
        return self.outputs[0]

    @property
    def reductions(self) -> tuple[Reduce, ...]:
        return tuple(op for op in self.ops if isinstance(op, Reduce))

    @property
    def held(self) -> tuple[str, ...]:
        """The intermediates and outputs a core keeps for a block, in the order the ops first write them."""
        seen: dict[str, None] = {}
        for op in self.ops:
            seen.setdefault(op.out if isinstance(op, Reduce) else op.tensor, None)
        return tuple(seen)

    @property
    def passes(self) -> tuple[Pass, ...]:
        """The program's ops as passes, in order (:class:`Pass`)."""
        out: list[Pass] = []
        versions: dict[str, int] = {}
        for op in self.ops:
            if isinstance(op, Reduce):
                versions[op.out] = versions.get(op.out, 0) + 1
                out.append(Pass(op.out, versions[op.out], reduce=op))
            elif out and out[-1].reduce is None and out[-1].tensor == op.tensor:
                out[-1] = Pass(op.tensor, out[-1].version, (*out[-1].ops, op))
            else:
                versions[op.tensor] = versions.get(op.tensor, 0) + 1
                out.append(Pass(op.tensor, versions[op.tensor], (op,)))
        return tuple(out)

    flatten: bool = False  # a row's tiles stay together
    gather_1d: bool = True  # the columns alone may be split over a 1-D layout (a decode row on many cores)


def is_row_reduction(program: TileProgram) -> bool:
    """No matmul and at least one ``Reduce``: the row-reduction family's shape."""
    return not any(isinstance(op, Matmul) for op in program.ops) and any(isinstance(op, Reduce) for op in program.ops)


def analyse_row_reduction(program: TileProgram) -> RowReduction:
    """The row-reduction structure of ``program`` (``ProgramStructureError`` naming what is wrong)."""
    where = f"program {program.name}"
    kinds = [d.kind for d in program.dims]
    if kinds != ["parallel", "reduction"]:
        raise ProgramStructureError(
            f"{where}: a row reduction has two dimensions, the rows (parallel) then the "
            f"columns (reduction); found {[(d.name, d.kind) for d in program.dims]}"
        )
    rows, cols = (d.name for d in program.dims)
    ops = tuple(op for op in program.ops if isinstance(op, (Eltwise, Reduce)))
    st = RowReduction(program, ops, rows, cols)
    _check_tensor_shapes(st, where)
    for op in ops:
        if isinstance(op, Reduce):
            _check_reduce(st, op, where)
        else:
            _check_eltwise(st, op, where)
    _check_write_order(st, where)
    return st


def _check_tensor_shapes(st: RowReduction, where: str) -> None:
    """Every tensor indexed ``[rows, cols]``, ``[rows]``, ``[cols]`` or ``[]``; every output by the rows
    (``[rows, cols]`` or ``[rows]``); at least one input ``[rows, cols]`` (the rows reduced)."""
    rows, cols = st.dims
    for t in st.program.tensors:
        if t.dims not in ((rows, cols), (rows,), (cols,), ()):
            raise ProgramStructureError(
                f"{where}: tensor {t.name}{list(t.dims)} is not [{rows}, {cols}], [{rows}], [{cols}] or a scalar []"
            )
    for name in st.outputs:
        if st.kind(name) not in ("rows", "col"):
            raise ProgramStructureError(f"{where}: output {name} must be indexed [{rows}, {cols}] or [{rows}]")
    if not st.full:
        raise ProgramStructureError(f"{where}: no input indexed [{rows}, {cols}] (the rows reduced)")


def _check_reduce(st: RowReduction, op: Reduce, where: str) -> None:
    """A ``Reduce`` turns a ``[rows, cols]`` tensor into a ``[rows]`` one that is not an input."""
    rows, cols = st.dims
    if st.kind(op.operand) != "rows" or st.kind(op.out) != "col":
        raise ProgramStructureError(
            f"{where}: Reduce {op.op} reduces a [{rows}, {cols}] tensor into a "
            f"[{rows}] one; {op.operand} -> {op.out} is not that"
        )
    if st.program.tensor(op.out).role == "input":
        raise ProgramStructureError(f"{where}: Reduce {op.op} writes input {op.out}")


def _check_eltwise(st: RowReduction, op: Eltwise, where: str) -> None:
    """An element-wise op runs once (``when='final'``) and writes a tensor indexed by the rows that is not
    an input."""
    if op.when != "final":
        raise ProgramStructureError(
            f"{where}: op {op.op} on {op.tensor} runs per {op.when} step; a row "
            "reduction's ops run once (use when='final')"
        )
    if st.program.tensor(op.tensor).role == "input":
        raise ProgramStructureError(f"{where}: op {op.op} writes input {op.tensor}; ops write outputs or intermediates")
    if st.kind(op.tensor) not in ("rows", "col"):
        raise ProgramStructureError(f"{where}: op {op.op} writes {op.tensor}, which is not indexed by the rows")


def _check_write_order(st: RowReduction, where: str) -> None:
    """In op order, every tensor an op reads is an input or written by an earlier op; the first op on a
    tensor names its ``source``; every output is written by some op."""
    written: set[str] = {t.name for t in st.program.inputs}
    for op in st.ops:
        reads = [op.operand] if isinstance(op, Reduce) else [t for t in (op.operand, op.source) if t]
        unset = [t for t in reads if t not in written]
        if unset:
            raise ProgramStructureError(f"{where}: op {op.op} reads {', '.join(unset)} before any op writes it")
        if isinstance(op, Eltwise) and op.tensor not in written and op.source is None:
            raise ProgramStructureError(
                f"{where}: op {op.op} is the first to write {op.tensor} and names no source "
                "(the tensor its value starts from)"
            )
        written.add(op.out if isinstance(op, Reduce) else op.tensor)
    missing = [t for t in st.outputs if t not in written]
    if missing:
        raise ProgramStructureError(f"{where}: no op writes output {', '.join(missing)}")


ROW_REDUCTION = ProgramFamily(
    name="row_reduction",
    description="reductions along the rows (sum, max, mean) and the element-wise ops that use them: softmax, norms",
    matches=is_row_reduction,
    analyse=analyse_row_reduction,
)
