"""A row-reduction schedule (softmax, RMSNorm, LayerNorm) as a TT-Lang kernel file; the model (``traffic.py``,
``buffers.py``, ``latency.py``) is what it must move.

Core ``(x, y)`` takes an ``r x c`` share of the rows x columns of tiles (``per_core_R`` rows from row
``index_R * per_core_R``, ``index_R`` being ``x``, ``y`` or the row-by-row core number of a 1-D layout; all
rows when they are on no axis; likewise columns) and works it in blocks of ``block_h`` whole tile rows of
its share:

* the reader copies each block of every rows input (``block_h x c`` tiles) and column vector (``block_h x
  1``); a row vector's ``1 x c`` tiles and a scalar's tile once, at the start (a multicast input through a
  ``ttl.PipeNet`` from the first core of its row / column / grid);
* the compute thread runs the ops in the program's order, one pass per run of ops on a tensor and one per
  reduction, each pass storing a new block of its tensor (a buffer per version of a tensor: the compiler
  takes a reduce only as a store of its own). A reduction is ``ttl.math.reduce_sum`` / ``reduce_max`` over
  the columns with a scaler tile of ones (``1/W`` for a mean), its column-vector result broadcast back with
  ``ttl.math.broadcast``;
* with the columns split over ``g`` cores, each reduction's partial column vector goes from every other core
  to the first core along the split (a gather pipe net), which combines the ``g`` partials (add, or ``max``)
  and multicasts the result back; every core then goes on with the combined vector (the writer thread moves
  these tiles, then the block's outputs).

The host pads the rows to whole cores' shares (padding rows are independent of the others); the columns
must split evenly, with no padding (a padded column would enter every reduction): the solve for these
kernels has that as a constraint (``constraints.py``), and a schedule whose columns do not split evenly (one
solved for TTNN's kernels) is refused with the reason.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from loom_explorer.export.exporter import ExportError
from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.families.row_reduction.program import RowReduction, analyse_row_reduction
from loom_explorer.mapping.candidate import Comm
from loom_explorer.problem import Problem
from loom_explorer.program.dsl import Eltwise
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

_MCAST = {"x": Comm.mcast_x, "y": Comm.mcast_y, "xy": Comm.mcast_xy}
_HEAD = {"x": "cx == 0", "y": "cy == 0", "xy": "cx == 0 and cy == 0"}
_GATHER = {
    "x": "[ttl.Pipe(src=(cx, cy), dst=(0, cy)) for cx in range(1, GRID_X) for cy in range(GRID_Y)]",
    "y": "[ttl.Pipe(src=(cx, cy), dst=(cx, 0)) for cx in range(GRID_X) for cy in range(1, GRID_Y)]",
    "xy": "[ttl.Pipe(src=(k % GRID_X, k // GRID_X), dst=(0, 0)) for k in range(1, WORKING_CORES)]",
}


def row_reduction_unsupported(
    problem: Problem, values: dict[str, int] | None = None, split_cores: int = 1
) -> str | None:
    """Why the writer cannot express ``problem`` (with the schedule's ``values`` and the cores its columns are
    split over, when known); None: it can."""
    st = analyse_row_reduction(problem.program)
    why = reserved_name_reason(problem, ("_dfb", "_blk", "_net", "_host", "_out"), digits=True) or unknown_op_reason(
        problem, (op for op in st.ops if isinstance(op, Eltwise))
    )
    if why:
        return why
    written = [p.tensor for p in st.passes]
    for t in st.outputs:
        if (
            written.count(t) > 1
            or any(t in (op.operand, op.source) for op in st.ops if isinstance(op, Eltwise))
            or any(r.operand == t for r in st.reductions)
        ):
            return f"TT-Lang export writes an output in one pass that no later op reads; {t} is not"
        if st.kind(t) != "rows":
            return f"TT-Lang export writes outputs indexed [{st.rows_dim}, {st.cols_dim}]; {t} is not"
    cols = st.cols_dim
    if problem.elements(cols) % 32:
        return (
            f"TT-Lang export reduces whole tiles: {cols}={problem.elements(cols)} is not a multiple of 32 (a "
            "padded column would enter every reduction)"
        )
    if values is not None and split_cores > 1 and values[f"per_core_{cols}"] * split_cores != problem.tiles(cols):
        return (
            f"TT-Lang export splits the columns evenly: {split_cores} cores x per_core_{cols}="
            f"{values[f'per_core_{cols}']} is not the {problem.tiles(cols)} tiles of {cols} (pin per_core_{cols} "
            "to a divisor)"
        )
    return None


def row_reduction_source(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    """The kernel file of a row-reduction schedule (module docstring)."""
    return _Writer(built, doc).source()


def reference_lines(problem: Problem, st: RowReduction, operands: dict[str, str]) -> list[str]:
    """The program's passes as torch statements ``tensor = expression`` (fp32; a reduction over the columns
    keeps its dimension), each input read as ``operands[name]``; the outputs end as variables of their names."""
    env, lines = dict(operands), []
    for p in st.passes:
        if p.reduce is not None:
            r = p.reduce
            fn = {"sum": "sum", "max": "amax", "mean": "mean"}[r.op]
            lines.append(f"{p.tensor} = {env[r.operand]}.{fn}(dim=1, keepdim=True)")
        else:
            value = env[p.ops[0].source] if p.version == 1 and p.ops[0].source else p.tensor
            for op in p.ops:
                value = op_expression(problem, op, value, env[op.operand] if op.operand else "", SFPU_OPS)
            lines.append(f"{p.tensor} = {value}")
        env[p.tensor] = p.tensor
    return lines


class _Writer:
    def __init__(self, built: RebuiltSchedule, doc: ScheduleDocument) -> None:
        self.built, self.doc, self.problem = built, doc, built.problem
        self.st = analyse_row_reduction(self.problem.program)
        self.v = built.solution.values()
        self.cand = built.schedule.candidate
        self.working = used_cores(built.schedule, self.v)
        self.axis = self.cand.gather_axis
        self.shares = CoreShares(built.schedule, self.v, self.working)
        self.split = self.shares.cores_along(self.st.cols_dim)
        why = row_reduction_unsupported(self.problem, self.v, self.split)
        if why is not None:
            raise ExportError(why)
        self.inputs = [t for t, _ in self.cand.comms]
        self.passes = self.st.passes
        self.like = self.st.full[0]  # intermediates' buffers are made like the rows input (as large as any block)

    def _kind(self, t: str) -> str:
        return self.st.kind(t)

    def _buf(self, t: str, version: int) -> str:
        return f"{t}{version}"

    # ------------------------------------------------------------------ buffers
    def _dfbs(self) -> str:
        shape = {"rows": "(BLOCK_H, SHARE_COLS)", "col": "(BLOCK_H, 1)", "row": "(1, SHARE_COLS)", "scalar": "(1, 1)"}
        lines = []
        for t in self.inputs:
            count = f"{t.upper()}_BUFFER_DEPTH" if self._kind(t) in ("rows", "col") else "1"
            lines.append(
                f"{t}_dfb = ttl.make_dataflow_buffer_like({t}, shape={shape[self._kind(t)]}, block_count={count})"
            )
        for p in self.passes:
            blocks = 2 if p.tensor in self.st.outputs else 1
            like = p.tensor if p.tensor in self.st.outputs else self.like
            lines.append(
                f"{self._buf(p.tensor, p.version)}_dfb = ttl.make_dataflow_buffer_like({like}, "
                f"shape={shape[self._kind(p.tensor)]}, block_count={blocks})"
            )
        for name in self._scalers():
            lines.append(f"{name}_dfb = ttl.make_dataflow_buffer_like({self.like}, shape=(1, 1), block_count=1)")
        if self.split > 1:
            column = f"ttl.make_dataflow_buffer_like({self.like}, shape=(BLOCK_H, 1), block_count="
            lines += [
                f"partial_dfb = {column}{len(self.st.reductions)} * (SPLIT - 1))  # the other cores' partials, "
                "a slot per gather pipe (first core)",
                f"own_dfb = {column}1)  # the first core's own partial",
                f"acc_dfb = {column}2)  # the first core's running combination",
                f"combined_dfb = {column}1)  # the result the first core sends",
                f"send_dfb = {column}1)  # the partial another core sends",
                *(
                    f"{self._buf(p.tensor, p.version)}r_dfb = {column}1)  # the result another core receives"
                    for p in self.passes
                    if p.reduce is not None
                ),
                *(
                    f"{self._buf(p.tensor, p.version)}_gather_net = ttl.PipeNet({_GATHER[self.axis or 'xy']})"
                    for p in self.passes
                    if p.reduce is not None
                ),
                # a pipe has one receiving site: a gather and a multicast net per reduction
                *(
                    f"{self._buf(p.tensor, p.version)}_net = "
                    f"{pipes(_MCAST[self.axis or 'xy'], self.working, self.v['grid_x'], COORDS)}"
                    for p in self.passes
                    if p.reduce is not None
                ),
            ]
        for t in self.inputs:
            comm = self.cand.comm(t)
            if comm.axis is not None:
                lines.append(f"{t}_net = {pipes(comm, self.working, self.v['grid_x'], COORDS)}")
        return "\n    ".join(lines)

    def _scalers(self) -> list[str]:
        """The reduce scaler tiles: ones, and 1/W for a mean."""
        ops = {r.op for r in self.st.reductions}
        return [*(["ones"] if ops - {"mean"} else []), *(["inv_cols"] if "mean" in ops else [])]

    # ------------------------------------------------------------------ threads
    def _origin(self) -> str:
        return (
            self.shares.origin(self.st.rows_dim, "r0", "SHARE_ROWS")
            + "\n"
            + self.shares.origin(self.st.cols_dim, "c0", "SHARE_COLS")
            + "\n"
        )

    def _slice(self, t: str) -> str:
        return {
            "rows": f"{t}[row:row + BLOCK_H, c0:c0 + SHARE_COLS]",
            "col": f"{t}[row:row + BLOCK_H, 0:1]",
            "row": f"{t}[0:1, c0:c0 + SHARE_COLS]",
            "scalar": f"{t}[0:1, 0:1]",
        }[self._kind(t)]

    def _fill(self, t: str) -> str:
        comm = self.cand.comm(t)
        return f"with {t}_dfb.reserve() as {t}_blk:\n" + textwrap.indent(
            pipe_helpers(t, f"{t}_blk", comm) + receive_send(t, comm, self._slice(t), f"{t}_blk", COORDS), "    "
        )

    def _blocks(self, inner: str) -> str:
        return "for br in range(SHARE_ROWS // BLOCK_H):\n    row = r0 + br * BLOCK_H\n" + textwrap.indent(inner, "    ")

    def _reader(self) -> str:
        once = "".join(self._fill(t) for t in self.inputs if self._kind(t) in ("row", "scalar"))
        every = "".join(self._fill(t) for t in self.inputs if self._kind(t) in ("rows", "col"))
        return thread_body(self._origin() + once + self._blocks(every), self.cand.is_1d, COORDS)

    def _writer(self) -> str:
        body = ""
        if self.split > 1:
            for r in self.st.reductions:
                p = next(p for p in self.passes if p.reduce is r)
                buf = self._buf(p.tensor, p.version)
                body += textwrap.dedent(f"""\
                    if {_HEAD[self.axis or "xy"]}:  # {r.op} of {r.operand}: the others' partials in, the result out
                        def receive_partial(pipe):
                            with partial_dfb.reserve() as part:
                                ttl.copy(pipe, part).wait()

                        {buf}_gather_net.if_dst(receive_partial)
                        with combined_dfb.wait() as stat:
                            def send_stat(pipe):
                                ttl.copy(stat, pipe).wait()

                            {buf}_net.if_src(send_stat)
                    else:
                        with send_dfb.wait() as part:
                            def send_partial(pipe):
                                ttl.copy(part, pipe).wait()

                            {buf}_gather_net.if_src(send_partial)
                        with {buf}r_dfb.reserve() as stat:
                            def receive_stat(pipe):
                                ttl.copy(pipe, stat).wait()

                            {buf}_net.if_dst(receive_stat)
                    """)
        for t in self.st.outputs:
            p = next(p for p in self.passes if p.tensor == t)
            buf = self._buf(t, p.version)
            body += (
                f"with {buf}_dfb.wait() as {buf}_blk:\n"
                f"    ttl.copy({buf}_blk, {t}[row:row + BLOCK_H, c0:c0 + SHARE_COLS]).wait()\n"
            )
        return thread_body(self._origin() + self._blocks(body), self.cand.is_1d, COORDS)

    def _operand(self, t: str, env: dict[str, str], out: str) -> str:
        """How an op reads ``t`` in a pass storing into block ``out``: broadcast as its access map says."""
        value = env[t]
        dims = {"rows": None, "col": "[1]", "row": "[0]", "scalar": "[0, 1]"}[self._kind(t)]
        return value if dims is None else f"ttl.math.broadcast({value}, {out}, dims={dims})"

    def _passes_code(self, role: str) -> str:
        """The block's passes on a core of ``role``: ``only`` (no split), ``head`` (the first core along the
        split: it combines the partials) or ``other`` (it sends its partial and receives the result). Each
        buffer has one producer and one consumer thread (the compiler's rule), so the result of a reduction
        reaches the first core's passes from its own compute and the others' from their writer thread."""
        env = {t: f"{t}_blk" for t in self.inputs}
        lines: list[str] = []
        depth = 0

        def emit(text: str) -> None:
            lines.extend("    " * depth + line if line else "" for line in text.splitlines())

        for p in self.passes:
            buf = self._buf(p.tensor, p.version)
            out = f"{buf}_out"
            if p.reduce is not None:
                r = p.reduce
                kind = "max" if r.op == "max" else "sum"
                scaler = "inv_cols" if r.op == "mean" else "ones"
                reduced = f"ttl.math.reduce_{kind}({env[r.operand]}, {scaler}, dims=[1])"
                combine = "ttl.math.max({a}, {b})" if kind == "max" else "{a} + {b}"
                if role == "only":
                    emit(f"with {buf}_dfb.reserve() as {out}:\n    {out}.store({reduced})")
                elif role == "other":
                    emit(f"with send_dfb.reserve() as part:\n    part.store({reduced})  # to the first core")
                    buf = f"{buf}r"  # the combined vector, received by the writer thread
                else:
                    emit(
                        textwrap.dedent(f"""\
                        with own_dfb.reserve() as part:
                            part.store({reduced})  # this core's partial
                        with own_dfb.wait() as own, partial_dfb.wait() as part, acc_dfb.reserve() as acc:
                            acc.store({combine.format(a="own", b="part")})
                        for _ in range(SPLIT - 2):
                            with acc_dfb.wait() as pre, partial_dfb.wait() as part, acc_dfb.reserve() as acc:
                                acc.store({combine.format(a="pre", b="part")})
                        with acc_dfb.wait() as total, {buf}_dfb.reserve() as {out}, combined_dfb.reserve() as stat:
                            {out}.store(total)
                            stat.store(total)  # to the other cores""")
                    )
            else:
                value = env[p.ops[0].source] if p.version == 1 and p.ops[0].source else env[p.tensor]
                for op in p.ops:
                    operand = self._operand(op.operand, env, out) if op.operand else ""
                    value = op_expression(self.problem, op, value, operand, TTL_FUNCTIONS)
                emit(f"with {buf}_dfb.reserve() as {out}:\n    {out}.store({value})")
            if p.tensor not in self.st.outputs:
                emit(f"with {buf}_dfb.wait() as {p.tensor}{p.version}_blk:")
                depth += 1
                env[p.tensor] = f"{p.tensor}{p.version}_blk"
        return "\n".join(lines) + "\n"

    def _compute(self) -> str:
        scalers = self._scalers()
        head = "".join(
            f"with {name}_dfb.reserve() as c:\n    c.store(ttl.math.fill(c, "
            f"{'1.0' if name == 'ones' else repr(1.0 / self.problem.elements(self.st.cols_dim))}))\n"
            for name in scalers
        )
        held = [f"{t}_dfb.wait() as {t}_blk" for t in self.inputs if self._kind(t) in ("row", "scalar")]
        waits = held + [f"{name}_dfb.wait() as {name}" for name in scalers]
        streamed = [f"{t}_dfb.wait() as {t}_blk" for t in self.inputs if self._kind(t) in ("rows", "col")]
        if self.split > 1:
            block = (
                f"if {_HEAD[self.axis or 'xy']}:\n"
                + textwrap.indent(self._passes_code("head"), "    ")
                + "else:\n"
                + textwrap.indent(self._passes_code("other"), "    ")
            )
        else:
            block = self._passes_code("only")
        body = "for _ in range(SHARE_ROWS // BLOCK_H):\n" + textwrap.indent(
            f"with {', '.join(streamed)}:\n" + textwrap.indent(block, "    "), "    "
        )
        if waits:
            body = f"with {', '.join(waits)}:  # held for the whole kernel\n" + textwrap.indent(body, "    ")
        return thread_body(head + body, self.cand.is_1d, COORDS)

    # ------------------------------------------------------------------ host side
    def _host(self) -> tuple[str, str, str]:
        positive = any(
            isinstance(op, Eltwise)
            and op_name(self.problem, op) in POSITIVE_DOMAIN
            and (op.operand in self.inputs or op.source in self.inputs)
            for op in self.st.ops
        )
        rows_pad = "ROWS_PAD"
        build, env = [], {}
        for t in self.inputs:
            kind = self._kind(t)
            rows, cols = {
                "rows": (rows_pad, "COLS"),
                "row": ("32", "COLS"),
                "col": (rows_pad, "32"),
                "scalar": ("32", "32"),
            }[kind]
            fill = {"rows": ("ROWS", "COLS"), "row": ("1", "COLS"), "col": ("ROWS", "1"), "scalar": ("1", "1")}[kind]
            draw = "positive" if positive or kind == "scalar" else "normal"
            build.append(f"{t}_host = {draw}({rows}, {cols}, {fill[0]}, {fill[1]})")
            env[t] = f"{t}_host.float()[:{fill[0]}, :{fill[1]}]"
        for t in self.st.outputs:
            build.append(f"{t}_host = torch.zeros((ROWS_PAD, COLS), dtype=torch.bfloat16)")
        lines = reference_lines(self.problem, self.st, env)
        reference = "\n    ".join(lines + [f"expected_{t} = {t}" for t in self.st.outputs])
        args = ", ".join(f"{t}_host" for t in [*self.inputs, *self.st.outputs])
        return "\n    ".join(build), reference, args

    def source(self) -> str:
        v, problem, st = self.v, self.problem, self.st
        rows_share, cols_share = self.shares.share(st.rows_dim), self.shares.share(st.cols_dim)
        build, reference, args = self._host()
        n_in, outputs = len(self.inputs), st.outputs
        results = "\n        ".join(
            f"{t} = ttnn.to_torch(arguments[{n_in + i}]).float()[:ROWS, :COLS]" for i, t in enumerate(outputs)
        )
        geometry = (
            f"SHARE_ROWS, SHARE_COLS = {rows_share}, {cols_share}   # a core's rows and columns (tiles)\n"
            f"BLOCK_H = {v['block_h']}                      # tile rows per block\n"
            f"SPLIT = {self.split}                        # cores a row's columns are split over"
        )
        depths = "\n".join(
            f"{t.upper()}_BUFFER_DEPTH = {v[f'{t}_buffer_depth']}    # blocks in {t}'s buffer"
            for t in self.inputs
            if f"{t}_buffer_depth" in v
        )
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
            rows=st.rows_dim,
            cols=st.cols_dim,
            rows_el=problem.elements(st.rows_dim),
            cols_el=problem.elements(st.cols_dim),
            rows_pad=self.shares.padded(st.rows_dim) * 32,
            cols_pad=problem.elements(st.cols_dim),
            params=", ".join([*self.inputs, *outputs]),
            dfbs=self._dfbs(),
            read=self._reader(),
            compute=self._compute(),
            write=self._writer(),
            build=build,
            args=args,
            reference=reference,
            results=results,
            checks=", ".join(f"({t}, expected_{t})" for t in outputs),
            one_d="row by row (1-D layout)" if self.cand.is_1d else "by grid position",
            write_doc="the reductions' partials and results, then the outputs" if self.split > 1 else "the outputs",
        )


def host_tensors(built: RebuiltSchedule) -> HostTensors:
    """Each input in its own argument (rows ``[H, W]``, a row ``[1, W]``, a column ``[H, 1]`` or a scalar),
    then each output ``[H, W]``, one block each."""
    p, st = built.problem, analyse_row_reduction(built.problem.program)
    rows, cols = p.elements(st.rows_dim), p.elements(st.cols_dim)
    inputs = [t for t, _ in built.schedule.candidate.comms]
    extent = {"rows": (rows, cols), "row": (1, cols), "col": (rows, 1), "scalar": (1, 1)}
    return (
        tuple(HostTensor(t, i, 1, 0, *extent[st.kind(t)]) for i, t in enumerate(inputs)),
        tuple(HostTensor(t, len(inputs) + i, 1, 0, rows, cols) for i, t in enumerate(st.outputs)),
    )


def reference(built: RebuiltSchedule, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The program's reductions and ops, in order, as torch statements over the inputs."""
    import torch

    st = analyse_row_reduction(built.problem.program)
    env: dict[str, Any] = {"torch": torch, **{name: value[0] for name, value in inputs.items()}}
    exec("\n".join(reference_lines(built.problem, st, {t: t for t in inputs})), env)  # the program's own ops
    return {t: env[t][None] for t in st.outputs}


WRITER = TtlangWriter(
    "row_reduction",
    lambda schedule: row_reduction_unsupported(schedule.problem),
    row_reduction_source,
    host_tensors,
    reference,
)
