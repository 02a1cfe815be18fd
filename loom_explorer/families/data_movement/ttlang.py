"""A tiled copy or transpose schedule as a TT-Lang kernel file; every other data-movement schedule refused with
the reason.

What is written (``quantities.py`` is what it must move): a program of one move between two tiled ``[R, C]``
tensors of whole dimensions (no pad, slice or typecast), ``y[R, C] = x[R, C]`` or ``y[R, C] = x[C, R]^T``. Each
working core takes its share and works it block by block, as the model counts:

* a *rectangular* layout gives core ``(cx, cy)`` its rectangle of ``y`` (``per_core_R`` rows of tiles from row
  ``index_R * per_core_R``, ``index_R`` being ``cx``, ``cy`` or the row-by-row core number of a 1-D layout; all
  rows when the rows are on no axis; likewise the columns), worked in blocks of ``BLOCK_H x BLOCK_W`` tiles:
  ``1 x block`` when the columns are on an axis, ``block_rows x C`` when they are whole on the core;
* a *flattened* layout gives core ``k`` the run of tiles ``k*P .. (k+1)*P - 1`` of ``y``'s row-major order,
  ``P = per_core_R*C``, worked ``block`` tiles a step, each tile copied on its own;
* the reader copies the block of ``x`` that lands there (for a transpose, ``x``'s ``BLOCK_W x BLOCK_H`` block
  at the transposed place), the compute stores it into ``y``'s buffer (``ttl.transpose`` of it for a
  transpose), the writer copies it to ``y``.

The host pads both tensors with zeros to whole cores' shares and crops ``y``.

Refused, with the reason: a row-major tensor (the TT-Lang kernels move 32x32 tiles between tiled tensors, so
pages, tilize and untilize have no form here), a pad or slice (a part of a dimension smaller than its whole), a
typecast, a concatenation (several moves), and a program of other than two dimensions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loom_explorer.export.exporter import ExportError
from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.families.data_movement.barriers import WAITED
from loom_explorer.families.data_movement.program import DataMovement, analyse_data_movement
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Problem
from loom_explorer.targets.ttlang.common import (
    COORDS,
    DATAFLOW_TEMPLATE,
    HOST_HELPERS,
    SIM_ADAPTER,
    CoreShares,
    footer,
    header,
    thread_body,
)
from loom_explorer.targets.ttlang.writer import HostTensor, HostTensors, TtlangWriter
from loom_explorer.traffic.transfers import used_cores


def data_movement_unsupported(problem: Problem) -> str | None:
    """Why the writer cannot express ``problem`` (None: it can; module docstring)."""
    program = problem.program
    st = analyse_data_movement(program)
    row_major = [t.name for t in program.tensors if t.layout == "row_major"]
    if row_major:
        return (
            f"{program.name} moves row-major {', '.join(row_major)}: the TT-Lang kernels move 32x32 tiles between "
            "tiled tensors, so row-major pages, tilize and untilize have no TT-Lang form"
        )
    if problem.has_option(WAITED):
        return (
            f"{program.name} with the option {WAITED} costs ttnn's NLP heads readers (a barrier per tile); the "
            "TT-Lang reader streams its tiles"
        )
    if len(st.moves) > 1:
        return f"{program.name} concatenates {len(st.moves)} sources: the TT-Lang writer writes one move"
    if len(st.dims) != 2:
        return f"{program.name} has {len(st.dims)} dimensions: the TT-Lang writer writes [rows, columns] moves"
    cut = [d.name for d in program.dims if d.part_of and problem.elements(d.name) < problem.elements(d.part_of)]
    if cut:
        return f"{program.name} pads or slices {', '.join(cut)}: the TT-Lang writer writes whole-tensor moves"
    formats = {problem.data_format(t.name).value for t in program.tensors}
    if formats != {"bfloat16"}:
        return f"{program.name} moves {', '.join(sorted(formats))}: the TT-Lang writer writes bfloat16 copies only"
    return None


def _unsupported(schedule: SymbolicSchedule) -> str | None:
    return data_movement_unsupported(schedule.problem)


def _transposed(st: DataMovement) -> bool:
    return st.relayout(st.streamed[0]) == "transpose"


def data_movement_source(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    """The kernel file of a tiled copy or transpose (module docstring)."""
    why = data_movement_unsupported(built.problem)
    if why is not None:
        raise ExportError(why)
    return _Writer(built, doc).source()


class _Writer:
    def __init__(self, built: RebuiltSchedule, doc: ScheduleDocument) -> None:
        self.built, self.doc = built, doc
        self.problem = built.problem
        self.st = analyse_data_movement(self.problem.program)
        self.v = built.solution.values()
        self.cand = built.schedule.candidate
        self.flat = next((carried for _, carried in self.cand.axes if "*" in carried), None)
        self.working = used_cores(built.schedule, self.v)
        self.rows, self.cols = self.st.dims
        self.x = self.st.streamed[0]
        self.y = self.st.output
        self.t = _transposed(self.st)
        self.shares = CoreShares(built.schedule, self.v, self.working)

    def _padded_tiles(self) -> tuple[int, int]:
        if self.flat is not None:
            cols = self.problem.tiles(self.cols)
            return -(-len(self.working) * self.v[f"per_core_{self.flat}"] // cols), cols
        return self.shares.padded(self.rows), self.shares.padded(self.cols)

    def _block(self) -> tuple[str, str]:
        """(BLOCK_H, BLOCK_W) of the rectangular layout, as values."""
        if "block" in self.v:
            return "1", str(self.v["block"])
        return str(self.v["block_rows"]), str(self.shares.share(self.cols))

    def _loops(self, inner: str) -> str:
        return self.shares.tile_loops(self.rows, self.cols, self.flat is not None, inner)

    def _hw(self) -> tuple[str, str]:
        return ("1", "1") if self.flat else ("BLOCK_H", "BLOCK_W")

    def _dfbs(self) -> str:
        h, w = self._hw()
        slots = " * BLOCK" if self.flat else ""
        x_shape = f"({w}, {h})" if self.t else f"({h}, {w})"
        return (
            f"{self.x}_dfb = ttl.make_dataflow_buffer_like({self.x}, shape={x_shape}, "
            f"block_count={self.x.upper()}_BUFFER_DEPTH{slots})\n    "
            f"{self.y}_dfb = ttl.make_dataflow_buffer_like({self.y}, shape=({h}, {w}), block_count=2{slots})"
        )

    def _reader(self) -> str:
        h, w = self._hw()
        x = self.x
        part = f"{x}[col:col + {w}, row:row + {h}]" if self.t else f"{x}[row:row + {h}, col:col + {w}]"
        body = f"with {x}_dfb.reserve() as {x}_blk:\n    ttl.copy({part}, {x}_blk).wait()\n"
        return thread_body(self._loops(body), self.cand.is_1d, COORDS)

    def _compute(self) -> str:
        x, y = self.x, self.y
        value = f"ttl.transpose({x}_blk)" if self.t else f"{x}_blk"
        count = "PER_CORE" if self.flat else "(SHARE_ROWS // BLOCK_H) * (SHARE_COLS // BLOCK_W)"
        body = (
            f"for _ in range({count}):\n"
            f"    with {x}_dfb.wait() as {x}_blk, {y}_dfb.reserve() as {y}_blk:\n"
            f"        {y}_blk.store({value})\n"
        )
        return thread_body(body, self.cand.is_1d, COORDS)

    def _writer(self) -> str:
        h, w = self._hw()
        y = self.y
        body = f"with {y}_dfb.wait() as {y}_blk:\n    ttl.copy({y}_blk, {y}[row:row + {h}, col:col + {w}]).wait()\n"
        return thread_body(self._loops(body), self.cand.is_1d, COORDS)

    def source(self) -> str:
        v, problem = self.v, self.problem
        rows_pad, cols_pad = self._padded_tiles()
        x, y = self.x, self.y
        if self.flat is not None:
            geometry = (
                f"PER_CORE = {v[f'per_core_{self.flat}']}                 # tiles per core, a run of the "
                f"row-major order\nBLOCK = {v['block']}                    # tiles per block\n"
                f"COLS_TILES = {cols_pad}               # tiles per row"
            )
        else:
            bh, bw = self._block()
            geometry = (
                f"SHARE_ROWS, SHARE_COLS = {self.shares.share(self.rows)}, {self.shares.share(self.cols)}   "
                f"# a core's rectangle of {y} (tiles)\n"
                f"BLOCK_H, BLOCK_W = {bh}, {bw}          # block of {y} (tiles)"
            )
        depth = f"{x.upper()}_BUFFER_DEPTH = {v[f'{x}_buffer_depth']}    # blocks in {x}'s buffer"
        if self.t:
            build = f"{x}_host = normal(COLS_PAD, ROWS_PAD, COLS, ROWS)"
            reference = f"expected_{y} = {x}_host.float()[:COLS, :ROWS].T"
        else:
            build = f"{x}_host = normal(ROWS_PAD, COLS_PAD, ROWS, COLS)"
            reference = f"expected_{y} = {x}_host.float()[:ROWS, :COLS]"
        build += f"\n    {y}_host = torch.zeros((ROWS_PAD, COLS_PAD), dtype=torch.bfloat16)"
        return DATAFLOW_TEMPLATE.format(
            header=header(self.built, self.doc),
            footer=footer(self.doc),
            adapter=SIM_ADAPTER,
            host_helpers=HOST_HELPERS,
            kernel=problem.program.name,
            gx=v["grid_x"],
            gy=v["grid_y"],
            working=len(self.working),
            geometry=geometry,
            depths=depth,
            rows=self.rows,
            cols=self.cols,
            rows_el=problem.elements(self.rows),
            cols_el=problem.elements(self.cols),
            rows_pad=rows_pad * 32,
            cols_pad=cols_pad * 32,
            params=f"{x}, {y}",
            dfbs=self._dfbs(),
            read=self._reader(),
            compute=self._compute(),
            write=self._writer(),
            build=build,
            args=f"{x}_host, {y}_host",
            reference=reference,
            results=f"{y} = ttnn.to_torch(arguments[1]).float()[:ROWS, :COLS]",
            checks=f"({y}, expected_{y})",
            one_d="row by row (1-D layout)" if self.cand.is_1d else "by grid position",
            write_doc=f"the output {y}",
        )


def host_tensors(built: RebuiltSchedule) -> HostTensors:
    """x in argument 0 (``[C, R]`` for a transpose), y ``[R, C]`` in argument 1, one block each."""
    p, st = built.problem, analyse_data_movement(built.problem.program)
    rows, cols = (p.elements(d) for d in st.dims)
    x_rows, x_cols = (cols, rows) if _transposed(st) else (rows, cols)
    return (
        (HostTensor(st.streamed[0], 0, 1, 0, x_rows, x_cols),),
        (HostTensor(st.output, 1, 1, 0, rows, cols),),
    )


def reference(built: RebuiltSchedule, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """y from x by the program's meaning: the same tiles, or their transpose."""
    st = analyse_data_movement(built.problem.program)
    x = inputs[st.streamed[0]]
    return {st.output: x.transpose(-2, -1) if _transposed(st) else x}


WRITER = TtlangWriter("data_movement", _unsupported, data_movement_source, host_tensors, reference)
"""The data-movement family's TT-Lang writer (module docstring)."""
