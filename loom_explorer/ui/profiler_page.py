"""The explorer's "Profiler report" section: open a device-profiler report, see its coverage by op code
(``accuracy/op_coverage.py``: each op code's device time, predicted or why not, and the error), every matmul
and attention op with the config it ran, the best config ttnn can run instead and the predicted gain
(``loom-explorer improve``), and open an op in the explorer.

The report is a shipped capture chosen by name, or the user's own ``ops_perf_results_*.csv[.gz]`` uploaded
through the page: its bytes are parsed, its file name only labels it, and no path from the page is ever
opened (``ui/profiler.py``). A report that cannot be read shows its one-line error in the page.

The work (reading, predicting every row as it ran, one solve per op) runs on this section's own worker
thread (``ui/runner.py``; a newer request stops an older one between rows or ops), with its progress in the
status line. Clicking an op sets the explorer's inputs to the op's problem, which the explorer solves as any
problem, and marks the op's measured time, against its prediction as it ran, on the Measure chart; what the
explorer's inputs cannot express of the op (per-tensor formats, fp32 accumulation, bias, L1 placements, the
capture's smaller worker grid) is named beside it.
"""

from __future__ import annotations

import asyncio
import html
import io
import time
from collections.abc import Callable
from functools import partial
from typing import Protocol

import panel as pn
import param
from panel.models.tabulator import CellClickEvent

from loom_explorer.accuracy.improve import Improvement
from loom_explorer.accuracy.progress import Progress
from loom_explorer.data import CAPTURES
from loom_explorer.hardware import list_hardware
from loom_explorer.ui.measure import MeasurePanel
from loom_explorer.ui.profiler import (
    NO_CHOICE,
    Analysis,
    CannotOpen,
    OpenedOp,
    ReportSource,
    analyse,
    coverage_frame,
    open_op,
    ops_frame,
    record,
    summary_lines,
)
from loom_explorer.ui.runner import SolveRunner, Superseded
from loom_explorer.ui.state import ExplorerState


class OpensProblems(Protocol):
    """What the section needs of the explorer it sits in (``ui/explorer.py``'s ``Explorer``)."""

    state: ExplorerState
    measure: MeasurePanel

    def open_problem(self, inputs: dict[str, object]) -> bool: ...


OPS_PAGE = 10  # rows of the ops table per page
PROGRESS_EVERY_S = 0.2  # the status line follows the rows read and predicted at most this often
MAX_MESSAGE_CHARS = 400  # an error line longer than this is cut


def one_line(exc: BaseException) -> str:
    """An error as one line of at most ``MAX_MESSAGE_CHARS`` characters."""
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    text = lines[0] + (" ..." if len(lines) > 1 else "")
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 4] + " ..."


def progress_text(label: str, done: int, total: int) -> str:
    """The status line of a phase of ``improve_report`` (its ``Progress`` phases)."""
    if label == "solving ops":
        return f"solving op {min(done + 1, total)} of {total} ..."
    what = {"reading": "reading the rows", "predicting": "predicting the rows as they ran"}.get(label, label)
    return f"{what}: {done:,} of {total:,} ..."


class PageProgress(Progress):
    """``improve_report``'s progress handed to ``show`` (each op; rows at most every ``PROGRESS_EVERY_S``),
    and the point where a superseded run stops: ``Superseded`` once ``current()`` is false."""

    def __init__(self, show: Callable[[str], None], current: Callable[[], bool]) -> None:
        super().__init__(io.StringIO(), delay_s=0.0)
        self._show, self._current = show, current
        self._label, self._count, self._shown_at = "", 0, 0.0

    def phase(self, label: str, total: int) -> None:
        self._label, self._count = label, total
        self._tell(0, force=True)

    def update(self, done: int) -> None:
        if not self._current():
            raise Superseded
        self._tell(done, force=self._label == "solving ops")

    def close(self) -> None:
        """Nothing to end: the page's status line is replaced when the run ends."""

    def _tell(self, done: int, force: bool) -> None:
        now = time.monotonic()
        if force or now - self._shown_at >= PROGRESS_EVERY_S:
            self._shown_at = now
            self._show(progress_text(self._label, done, self._count))


class ProfilerPage:
    """The "Profiler report" section of ``explorer`` (module docstring)."""

    def __init__(self, explorer: OpensProblems) -> None:
        self.explorer = explorer
        self.runner = SolveRunner()
        self.source: ReportSource | None = None
        self.analysis: Analysis | None = None
        self._recorded: Analysis | None = None  # the analysis whose measurements are in the store
        self._running = 0  # the generation of the run in progress (0: none)
        self._build()

    # ------------------------------------------------------------------ widgets
    def _build(self) -> None:
        captures = {"(choose a capture)": "", **{f"{name}: {what}": name for name, what in CAPTURES.items()}}
        self.w_capture = pn.widgets.Select(
            label="Shipped capture", options=captures, value="", width=380, css_classes=["profiler-capture"]
        )
        self.w_upload = pn.widgets.FileInput(accept=".csv,.gz", width=260, css_classes=["profiler-upload"])
        hardware = {"the chip the report names": NO_CHOICE, **{n: n for n in list_hardware()}}
        self.w_hw = pn.widgets.Select(
            label="Predict on", options=hardware, value=NO_CHOICE, width=210, css_classes=["profiler-hw"]
        )
        self.w_skip = pn.widgets.Checkbox(
            label="leave unusable rows out (--skip-bad-rows)", value=False, css_classes=["profiler-skip"]
        )
        self.b_run = pn.widgets.Button(
            label="Find better configs", color="primary", width=170, css_classes=["profiler-run"]
        )
        self.b_record = pn.widgets.Button(
            label="Record its measurements in the results store", disabled=True, css_classes=["profiler-record"]
        )
        self.spinner = pn.indicators.LoadingSpinner(value=False, width=22, height=22, css_classes=["profiler-busy"])
        self.status = pn.pane.HTML("", css_classes=["profiler-status"], sizing_mode="stretch_width")
        self.error = pn.pane.Alert(
            "", alert_type="danger", visible=False, css_classes=["profiler-error"], sizing_mode="stretch_width"
        )
        self.summary = pn.pane.HTML("", css_classes=["profiler-summary"], sizing_mode="stretch_width")
        self.table = pn.widgets.Tabulator(
            None,
            selectable=1,
            disabled=True,
            show_index=False,
            pagination="local",
            page_size=OPS_PAGE,
            sizing_mode="stretch_width",
            layout="fit_data_stretch",
            css_classes=["profiler-ops"],
            formatters={"best candidate / why not": {"type": "textarea"}},
            widths={"best candidate / why not": 380},
        )
        self.coverage = pn.widgets.Tabulator(
            None,
            disabled=True,
            show_index=False,
            pagination="local",
            page_size=OPS_PAGE,
            sizing_mode="stretch_width",
            layout="fit_data_stretch",
            css_classes=["profiler-coverage"],
            formatters={"kernel / why not": {"type": "textarea"}},
            widths={"kernel / why not": 420},
        )
        # the tables join the page with the first report: until then the page is the lighter for them
        self.table_place = pn.Column(sizing_mode="stretch_width")
        self.coverage_place = pn.Column(sizing_mode="stretch_width")
        self.opened = pn.pane.HTML("", css_classes=["profiler-opened"], sizing_mode="stretch_width")
        self.w_capture.param.watch(self._on_capture, "value")
        self.w_upload.param.watch(self._on_upload, "value")
        self.b_run.on_click(self._on_run_click)
        self.b_record.on_click(self._on_record_click)
        # a click opens its row's op, whatever the selection was (a row clicked again opens again)
        self.table.on_click(self._on_table_click)

    def panel(self) -> pn.viewable.Viewable:
        upload = pn.Column(pn.pane.Markdown("or upload `ops_perf_results_*.csv[.gz]`", margin=(0, 10)), self.w_upload)
        return pn.Column(
            "### Profiler report",
            pn.pane.Markdown(
                "A tt-metal device-profiler report: every op code's share of the device time, predicted "
                "or why not, and every matmul and attention op with the config it ran, the best config "
                "ttnn can run instead and the predicted gain (`loom-explorer improve`). Click an op to "
                "open it in the explorer above; the Measure chart below marks its measured time.",
                sizing_mode="stretch_width",
            ),
            pn.FlexBox(
                self.w_capture,
                upload,
                self.w_hw,
                pn.Column(pn.Spacer(height=18), pn.Row(self.b_run, self.spinner)),
                align_items="flex-start",
            ),
            self.w_skip,
            self.status,
            self.error,
            self.summary,
            self.coverage_place,
            self.table_place,
            self.b_record,
            self.opened,
            sizing_mode="stretch_width",
        )

    def close(self) -> None:
        """Stop the running analysis and drop queued work (the browser session closed)."""
        self.runner.new_request()
        self.runner.shutdown()
        self.analysis = self._recorded = None

    # ------------------------------------------------------------------ running
    async def run_async(self, source: ReportSource) -> Analysis | None:
        """Read ``source`` and improve its ops off the event loop, showing progress, then the ops; the
        analysis, or None when it failed (the page says why) or a newer request superseded it."""
        gen = self.runner.new_request()
        self._begin(gen, source)
        loop = asyncio.get_running_loop()

        def show(text: str) -> None:  # on the worker thread: the status changes on the event loop
            loop.call_soon_threadsafe(self._progress, gen, text)

        progress = PageProgress(show, lambda: self.runner.is_current(gen))
        # progress.update raises Superseded before each op once a newer run started
        work = partial(analyse, source, str(self.w_hw.value or NO_CHOICE), bool(self.w_skip.value), progress)
        try:
            analysis = await self.runner.run(gen, work)
        except Exception as exc:  # the page's boundary: say what failed, never spin forever
            self._fail(gen, exc)
            return None
        if analysis is not None:
            self._show(analysis)
        return analysis

    def _begin(self, gen: int, source: ReportSource) -> None:
        self._running = gen
        self.source = source
        self.spinner.value = True
        self.error.object, self.error.visible = "", False
        self.status.object = f"reading {html.escape(source.label)} ..."
        self.summary.object = self.opened.object = ""
        self.analysis = None
        self.b_record.disabled = True
        self._set_table(None)

    def _progress(self, gen: int, text: str) -> None:
        if gen == self._running and self.runner.is_current(gen):
            self.status.object = html.escape(f"{self.source.label if self.source else ''}: {text}")

    def _fail(self, gen: int, exc: Exception) -> None:
        if not self.runner.is_current(gen):
            return
        self._running = 0
        self.spinner.value = False
        message = (
            one_line(exc)
            if isinstance(exc, (ValueError, OSError))
            else (f"could not analyse the report: {type(exc).__name__}: {one_line(exc)}")
        )
        self.status.object = ""
        self.error.object, self.error.visible = html.escape(message), True

    def _show(self, analysis: Analysis) -> None:
        self._running = 0
        self.spinner.value = False
        self.analysis = analysis
        lines = summary_lines(analysis)
        self.summary.object = f"<b>{html.escape(lines[0])}</b><br>" + "<br>".join(html.escape(s) for s in lines[1:])
        self._set_table(analysis)
        n = len(analysis.result.ops)
        self.status.object = (
            f"{n} matmul and attention op{'s' if n != 1 else ''}, biggest predicted gain first: "
            "click one to open it in the explorer"
            if n
            else "no matmul or attention op in this report"
        )
        self.b_record.disabled = analysis is self._recorded

    def _set_table(self, analysis: Analysis | None) -> None:
        self.table.selection = []
        self.table.value = ops_frame(analysis.result) if analysis is not None else None
        self.coverage.value = coverage_frame(analysis) if analysis is not None else None
        if analysis is not None and not self.table_place.objects:
            self.table_place.objects = [self.table]
            self.coverage_place.objects = [
                pn.pane.Markdown(
                    "**Coverage by op code**: every op code's device time, the share the model predicts and "
                    "its error (predicted vs measured), or why it is not predicted",
                    sizing_mode="stretch_width",
                ),
                self.coverage,
            ]

    # ------------------------------------------------------------------ opening an op
    def open(self, key: str) -> OpenedOp | None:
        """Open op ``key`` of the shown report in the explorer: its problem as the explorer's inputs (solved as
        any input change is), its measured time marked on the Measure chart; what was opened, or None when
        the op cannot be (the page says why)."""
        if self.analysis is None:
            return None
        op = self.analysis.op(key)
        try:
            opened = open_op(
                op, self.analysis.hw_name, self.analysis.grid, list(self.explorer.state.param.activation.objects or [])
            )
        except CannotOpen as exc:
            self.opened.object = html.escape(str(exc))
            return None
        self.explorer.measure.mark(opened.marker)
        self.opened.object = opened_text(op, opened)
        try:
            self.explorer.open_problem(opened.inputs)
        except ValueError as exc:  # a hardware or kernel name the explorer's catalog does not offer
            self.opened.object = html.escape(f"{op.key} cannot be opened in the explorer: {one_line(exc)}")
            return None
        return opened

    def _on_table_click(self, event: CellClickEvent) -> None:
        frame = self.table.value
        if frame is not None and 0 <= event.row < len(frame):
            self.open(str(frame.iloc[event.row]["op"]))

    # ------------------------------------------------------------------ widget callbacks
    async def _on_capture(self, event: param.parameterized.Event) -> None:
        if event.new:
            await self.run_async(ReportSource.shipped(str(event.new)))

    async def _on_upload(self, event: param.parameterized.Event) -> None:
        if event.new is None:  # cleared (an empty file is b"", refused as such)
            return
        source = ReportSource.upload(str(self.w_upload.filename or ""), bytes(event.new))
        if self.w_capture.value:
            self.w_capture.value = ""  # the upload is what the page shows now
        await self.run_async(source)

    async def _on_run_click(self, _: object) -> None:
        if self.source is None:
            self.error.object, self.error.visible = "choose a shipped capture or upload a report first", True
            return
        await self.run_async(self.source)

    async def _on_record_click(self, _: object) -> None:
        analysis = self.analysis
        if analysis is None or analysis is self._recorded:
            return
        self.b_record.disabled = True
        try:
            counts = await asyncio.to_thread(record, analysis)
        except Exception as exc:  # the store could not be written: said, the page goes on
            self.error.object, self.error.visible = html.escape(f"could not record: {one_line(exc)}"), True
            self.b_record.disabled = False
            return
        self._recorded = analysis
        where = ", ".join(f"{n} on {hw}" for hw, n in counts.items())
        self.status.object = html.escape(
            f"recorded {sum(counts.values())} measured rows in the results store "
            f"({where}); the Measure chart shows those of the explorer's hardware "
            "and kernel"
        )
        with pn.io.unlocked():  # the chart's Bokeh sources change too
            self.explorer.measure.refresh()


def opened_text(op: Improvement, opened: OpenedOp) -> str:
    """What the page says of an op it opened: the explorer's problem, the op's times and what the explorer's
    inputs leave out (HTML, every value escaped)."""
    i = opened.inputs
    problem = ", ".join(str(v) for v in (i["hw"], f"{i['kernel']} {i['shape']}", i["dtype"], i["fidelity"]))
    options = i.get("program_options")
    if isinstance(options, list) and options:
        problem += "".join(f", {o}" for o in options)
    if i.get("activation") not in (None, "none"):
        problem += f", activation {i['activation']}"
    times = f"measured {op.measured_ns / 1e3:,.1f} us per call over {op.calls} call{'s' if op.calls != 1 else ''}"
    if op.ran_ns is not None:
        times += f", predicted {op.ran_ns / 1e3:,.1f} us as it ran ({op.ran_candidate}; marked on the Measure chart)"
    if op.best_ns is not None and op.best_candidate:
        times += (
            f", best TTNN config {op.best_ns / 1e3:,.1f} us ({op.best_candidate}, the fastest candidate TTNN "
            "has a program config for; the explorer ranks every candidate)"
        )
    parts = [
        f"<b>Opened</b> {html.escape(op.key)} in the explorer: {html.escape(problem)}.",
        html.escape(times[0].upper() + times[1:] + "."),
    ]
    if opened.notes:
        parts.append(
            html.escape(
                "The explorer's inputs cannot express, so its problem leaves out: " + "; ".join(opened.notes) + "."
            )
        )
    if op.note:
        parts.append(html.escape(f"Note: {op.note}."))
    return "<br>".join(parts)
