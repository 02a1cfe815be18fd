"""An element-wise schedule as a TT-Lang kernel file (``quantities.py`` and ``traffic.py`` are what it must move).

The iteration space is rows x columns of tiles. Each working core takes its share and works it block by
block, exactly as the model counts:

* a *rectangular* layout gives core ``(x, y)`` an ``r x c`` rectangle (``per_core_R`` rows of tiles from
  row ``index_R * per_core_R``, where ``index_R`` is ``x``, ``y`` or the row-by-row core number of a 1-D
  layout; all rows when the rows are on no axis; likewise columns), worked in ``block_h x block_w``
  blocks, rows of blocks outer. Per block a full-rank input's block is copied in, a row vector's
  ``1 x block_w`` tiles, a column vector's ``block_h x 1``, and broadcast in compute
  (``ttl.math.broadcast``); a scalar's tile is read once;
* a *flattened* layout gives core ``k`` (row by row) the run of tiles ``k*P .. (k+1)*P - 1`` of the
  row-major order, ``P = per_core_R*C``, worked in blocks of ``block`` tiles, each tile copied on its own
  (a run of tiles crosses rows, and a copy moves a rectangle): one-tile dataflow-buffer slots, ``block``
  of them per block, so the buffers hold what the model's hold; a vector's tile is read per output tile;
* an input multicast (``mcast_x`` / ``mcast_y`` / ``mcast_xy``) is read by the first core of its row /
  column / grid and sent to the others through a ``ttl.PipeNet`` block by block;
* the ops run in the program's order on each output's running value (``program.py``): it
  starts as the first op's ``source``, or the input no op names; an FPU op (add, sub, mul) combines it
  with its operand, an SFPU op applies ``ttl.math.<op>``.

One data-movement kernel reads every input, one input after the other, each copy waited before the next
(the model's ``reads`` count one read latency per step, as ttnn's readers issue every read before one
barrier, ``reader.py``: for this kernel they are short by one latency per further input); the other writes
the outputs. The host pads each tensor with zeros to whole cores' shares (so every working core
moves the slowest core's tiles, as the model assumes) and crops the outputs; a row vector is a ``1 x W``
tensor in row 0 of its tiles, a column vector ``H x 1`` in column 0, a scalar element ``(0, 0)`` of one
tile (TTNN's broadcast operands).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from loom_explorer.export.exporter import ExportError
from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.families.elementwise.program import Elementwise, analyse_elementwise
from loom_explorer.problem import Problem
from loom_explorer.targets.ttlang.common import (
    COORDS,
    DATAFLOW_TEMPLATE,
    HOST_HELPERS,
    SIM_ADAPTER,
    CoreShares,
    footer,
    header,
    pipe_helpers,
    pipes,
    receive_send,
    thread_body,
)
from loom_explorer.targets.ttlang.ops import (
    POSITIVE_DOMAIN,
    SFPU_OPS,
    TTL_FUNCTIONS,
    op_expression,
    op_name,
    reserved_name_reason,
    unknown_op_reason,
)
from loom_explorer.targets.ttlang.writer import HostTensor, HostTensors, TtlangWriter
from loom_explorer.traffic.transfers import used_cores


def elementwise_unsupported(problem: Problem) -> str | None:
    """Why the writer cannot express ``problem`` (None: it can)."""
    st = analyse_elementwise(problem.program)
    clash = reserved_name_reason(problem, ("_dfb", "_blk", "_net", "_host"))
    if clash:
        return clash
    off = [t.name for t in problem.program.tensors if t.optional and not problem.is_enabled(t.name)]
    if off:
        return f"TT-Lang export writes every input of an element-wise program; {', '.join(off)} is off"
    return unknown_op_reason(problem, st.ops)


def _kind(st: Elementwise, t: str) -> str:
    """How the kernel reads ``t``: ``full``, ``row`` (a row vector, indexed by the columns), ``col`` (by the
    rows) or ``scalar``."""
    dims = st.program.tensor(t).dims
    if t in st.full or t in st.outputs:
        return "full"
    if not dims:
        return "scalar"
    return "row" if dims == (st.dims[1],) else "col"


def output_expressions(
    problem: Problem, st: Elementwise, operand: dict[str, str], fn: dict[str, str]
) -> dict[str, str]:
    """Each output's expression: the ops in order on its running value (module docstring). ``operand``: how
    an input (or an earlier output) reads; ``fn``: an SFPU op's function name."""
    named = {t for op in st.ops for t in (op.operand, op.source) if t}
    start = next((operand[t.name] for t in problem.program.inputs if t.name not in named), None)
    values: dict[str, str] = {}
    for op in st.ops:
        current = values.get(op.tensor, operand[op.source] if op.source else start)
        other = operand.get(op.operand or "", values.get(op.operand or "", ""))
        if current is None and (op.unit == "fpu" or not other):
            raise ExportError(
                f"op {op_name(problem, op)} on {op.tensor} has no value to apply to (no source, no input left unnamed)"
            )
        values[op.tensor] = op_expression(problem, op, current or "", other, fn)
    missing = [t for t in st.outputs if t not in values]
    if missing:
        raise ExportError(f"no op computes output {', '.join(missing)}")
    return {t: values[t] for t in st.outputs}


def elementwise_source(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    """The kernel file of an element-wise schedule (module docstring)."""
    problem, sch = built.problem, built.schedule
    why = elementwise_unsupported(problem)
    if why is not None:
        raise ExportError(why)
    st = analyse_elementwise(problem.program)
    v = built.solution.values()
    flat = next((carried for _, carried in sch.candidate.axes if "*" in carried), None)
    return _Writer(built, doc, st, v, flat).source()


class _Writer:
    def __init__(
        self, built: RebuiltSchedule, doc: ScheduleDocument, st: Elementwise, v: dict[str, int], flat: str | None
    ) -> None:
        self.built, self.doc, self.st, self.v, self.flat = built, doc, st, v, flat
        self.problem = built.problem
        self.cand = built.schedule.candidate
        self.working = used_cores(built.schedule, v)
        self.rows, self.cols = st.dims
        self.inputs = [t for t, _ in self.cand.comms]
        self.shares = CoreShares(built.schedule, v, self.working)

    def _padded_tiles(self) -> tuple[int, int]:
        """Rows and columns of tiles of the padded tensors (module docstring)."""
        if self.flat is not None:
            cols = self.problem.tiles(self.cols)
            return -(-len(self.working) * self.v[f"per_core_{self.flat}"] // cols), cols
        return self.shares.padded(self.rows), self.shares.padded(self.cols)

    # ------------------------------------------------------------------ pieces
    def _dfbs(self) -> str:
        lines = []
        bh, bw = ("1", "1") if self.flat else ("BLOCK_H", "BLOCK_W")
        slots = " * BLOCK" if self.flat else ""
        for t in self.inputs:
            kind = _kind(self.st, t)
            shape = {"full": f"({bh}, {bw})", "row": f"(1, {bw})", "col": f"({bh}, 1)", "scalar": "(1, 1)"}[kind]
            count = "1" if kind == "scalar" else f"{t.upper()}_BUFFER_DEPTH{slots}"
            lines.append(f"{t}_dfb = ttl.make_dataflow_buffer_like({t}, shape={shape}, block_count={count})")
        for t in self.st.outputs:
            lines.append(f"{t}_dfb = ttl.make_dataflow_buffer_like({t}, shape=({bh}, {bw}), block_count=2{slots})")
        for t in self.inputs:
            comm = self.cand.comm(t)
            if comm.axis is not None:
                lines.append(f"{t}_net = {pipes(comm, self.working, self.v['grid_x'], COORDS)}")
        return "\n    ".join(lines)

    def _read_tile_range(self, t: str) -> str:
        """The tensor slice of ``t`` one block (a tile, flattened) reads, at tile ``row``, ``col``."""
        kind = _kind(self.st, t)
        h, w = ("1", "1") if self.flat else ("BLOCK_H", "BLOCK_W")
        rows = {"full": f"row:row + {h}", "row": "0:1", "col": f"row:row + {h}", "scalar": "0:1"}[kind]
        cols = {"full": f"col:col + {w}", "row": f"col:col + {w}", "col": "0:1", "scalar": "0:1"}[kind]
        return f"{t}[{rows}, {cols}]"

    def _fill(self, t: str) -> str:
        comm = self.cand.comm(t)
        return f"with {t}_dfb.reserve() as {t}_blk:\n" + textwrap.indent(
            pipe_helpers(t, f"{t}_blk", comm) + receive_send(t, comm, self._read_tile_range(t), f"{t}_blk", COORDS),
            "    ",
        )

    def _loops(self, inner: str) -> str:
        """``inner`` once per block (rectangular) or per tile (flattened), with ``row``, ``col`` its first tile."""
        return self.shares.tile_loops(self.rows, self.cols, self.flat is not None, inner)

    def _reader(self) -> str:
        scalars = [t for t in self.inputs if _kind(self.st, t) == "scalar"]
        streamed = [t for t in self.inputs if t not in scalars]
        held = "".join(self._fill(t) for t in scalars)
        return thread_body(held + self._loops("".join(self._fill(t) for t in streamed)), self.cand.is_1d, COORDS)

    def _writer(self) -> str:
        h, w = ("1", "1") if self.flat else ("BLOCK_H", "BLOCK_W")
        body = "".join(
            f"with {t}_dfb.wait() as {t}_blk:\n    ttl.copy({t}_blk, {t}[row:row + {h}, col:col + {w}]).wait()\n"
            for t in self.st.outputs
        )
        return thread_body(self._loops(body), self.cand.is_1d, COORDS)

    def _compute(self) -> str:
        first_out = f"{self.st.outputs[0]}_blk"
        dims = {"full": None, "row": "[0]", "col": "[1]", "scalar": "[0, 1]"}
        operand = {}
        for t in self.inputs:
            d = dims[_kind(self.st, t)]
            operand[t] = f"{t}_blk" if d is None else f"ttl.math.broadcast({t}_blk, {first_out}, dims={d})"
        exprs = output_expressions(self.problem, self.st, operand, TTL_FUNCTIONS)
        scalars = [t for t in self.inputs if _kind(self.st, t) == "scalar"]
        streamed = [t for t in self.inputs if t not in scalars]
        waits = [f"{t}_dfb.wait() as {t}_blk" for t in streamed] + [
            f"{t}_dfb.reserve() as {t}_blk" for t in self.st.outputs
        ]
        stores = "".join(f"    {t}_blk.store({exprs[t]})\n" for t in self.st.outputs)
        count = "PER_CORE" if self.flat else "(SHARE_ROWS // BLOCK_H) * (SHARE_COLS // BLOCK_W)"
        body = f"for _ in range({count}):\n    with {', '.join(waits)}:\n" + textwrap.indent(stores, "    ")
        if scalars:
            body = (
                f"with {', '.join(f'{t}_dfb.wait() as {t}_blk' for t in scalars)}:  # held for the whole kernel\n"
                + textwrap.indent(body, "    ")
            )
        return thread_body(body, self.cand.is_1d, COORDS)

    # ------------------------------------------------------------------ host side
    def _host(self) -> tuple[str, str, str]:
        """(the host tensors' construction, the reference's operands, the kernel's argument list)."""
        positive = any(op_name(self.problem, op) in POSITIVE_DOMAIN for op in self.st.ops)
        draw = "positive" if positive else "normal"
        build, ref = [], {}
        for t in self.inputs:
            kind = _kind(self.st, t)
            rows, cols = {
                "full": ("ROWS_PAD", "COLS_PAD"),
                "row": ("32", "COLS_PAD"),
                "col": ("ROWS_PAD", "32"),
                "scalar": ("32", "32"),
            }[kind]
            fill = {"full": ("ROWS", "COLS"), "row": ("1", "COLS"), "col": ("ROWS", "1"), "scalar": ("1", "1")}[kind]
            build.append(f"{t}_host = {draw}({rows}, {cols}, {fill[0]}, {fill[1]})")
            ref[t] = f"{t}_host.float()[:{fill[0]}, :{fill[1]}]"
        for t in self.st.outputs:
            build.append(f"{t}_host = torch.zeros((ROWS_PAD, COLS_PAD), dtype=torch.bfloat16)")
        exprs = output_expressions(self.problem, self.st, ref, SFPU_OPS)
        reference = "\n    ".join(f"expected_{t} = {e}" for t, e in exprs.items())
        args = ", ".join(f"{t}_host" for t in [*self.inputs, *self.st.outputs])
        return "\n    ".join(build), reference, args

    def source(self) -> str:
        v, problem = self.v, self.problem
        rows_pad, cols_pad = self._padded_tiles()
        build, reference, args = self._host()
        n_in = len(self.inputs)
        outputs = self.st.outputs
        results = "\n        ".join(
            f"{t} = ttnn.to_torch(arguments[{n_in + i}]).float()[:ROWS, :COLS]" for i, t in enumerate(outputs)
        )
        checks = ", ".join(f"({t}, expected_{t})" for t in outputs)
        if self.flat is not None:
            geometry = (
                f"PER_CORE = {v[f'per_core_{self.flat}']}                 # tiles per core, a run of the "
                f"row-major order\nBLOCK = {v['block']}                    # tiles per block\n"
                f"COLS_TILES = {cols_pad}               # tiles per row"
            )
        else:
            geometry = (
                f"SHARE_ROWS, SHARE_COLS = {self.shares.share(self.rows)}, {self.shares.share(self.cols)}   "
                "# a core's rectangle (tiles)\n"
                f"BLOCK_H, BLOCK_W = {v['block_h']}, {v['block_w']}          # block (tiles)"
            )
        depths = "\n".join(
            f"{t.upper()}_BUFFER_DEPTH = {v[f'{t}_buffer_depth']}    # blocks in {t}'s buffer"
            for t in self.inputs
            if f"{t}_buffer_depth" in v
        )
        params = ", ".join(t for t in [*self.inputs, *outputs])
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
            depths=depths,
            rows=self.rows,
            cols=self.cols,
            rows_el=problem.elements(self.rows),
            cols_el=problem.elements(self.cols),
            rows_pad=rows_pad * 32,
            cols_pad=cols_pad * 32,
            params=params,
            dfbs=self._dfbs(),
            read=self._reader(),
            compute=self._compute(),
            write=self._writer(),
            build=build,
            args=args,
            reference=reference,
            results=results,
            checks=checks,
            one_d="row by row (1-D layout)" if self.cand.is_1d else "by grid position",
            write_doc="the outputs",
        )


def host_tensors(built: RebuiltSchedule) -> HostTensors:
    """Each input in its own argument (full, a row ``[1, W]``, a column ``[H, 1]`` or a scalar ``[1, 1]``),
    then each output ``[H, W]``, one block each."""
    p, st = built.problem, analyse_elementwise(built.problem.program)
    rows, cols = (p.elements(d) for d in st.dims)
    inputs = [t for t, _ in built.schedule.candidate.comms]

    def extent(t: str) -> tuple[int, int]:
        dims = p.program.tensor(t).dims
        if t in st.full or t in st.outputs:
            return rows, cols
        return (1, 1) if not dims else ((1, cols) if dims == (st.dims[1],) else (rows, 1))

    return (
        tuple(HostTensor(t, i, 1, 0, *extent(t)) for i, t in enumerate(inputs)),
        tuple(HostTensor(t, len(inputs) + i, 1, 0, rows, cols) for i, t in enumerate(st.outputs)),
    )


def reference(built: RebuiltSchedule, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The program's own ops, in order, as torch expressions of the inputs."""
    import torch

    st = analyse_elementwise(built.problem.program)
    env: dict[str, Any] = {"torch": torch, **{name: value[0] for name, value in inputs.items()}}
    exprs = output_expressions(built.problem, st, {t: t for t in inputs}, SFPU_OPS)
    return {t: eval(e, env)[None] for t, e in exprs.items()}  # the program's own ops, as torch


WRITER = TtlangWriter(
    "elementwise",
    lambda schedule: elementwise_unsupported(schedule.problem),
    elementwise_source,
    host_tensors,
    reference,
)
