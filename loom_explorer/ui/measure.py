"""The explorer's Measure panel: run the selected schedule (on a card when ttnn sees one, otherwise in
tt-lang-sim), record it in the results store, and plot predicted against measured for everything the
store holds for this hardware and kernel. An op of a profiler report opened in the explorer
(``profiler_page.py``) is marked on the chart, measured against predicted as it ran, while the explorer
shows its problem."""

from __future__ import annotations

import asyncio
import html

import panel as pn
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.models.annotations import Slope  # (bokeh.models re-exports it in a way mypy cannot follow)
from bokeh.plotting import figure

from loom_explorer.deploy.runner import Run, pick_runner, run_measurement
from loom_explorer.store import default_store_path, open_store
from loom_explorer.ui.profiler import MeasuredOp, problem_key
from loom_explorer.ui.state import ExplorerState

POINT_COLUMNS = ("predicted_us", "measured_us", "source", "candidate", "shape")


class MeasurePanel:
    def __init__(self, state: ExplorerState) -> None:
        self.state = state
        self.button = pn.widgets.Button(label="Measure the selected schedule", css_classes=["measure"])
        self.button.on_click(self._on_click)
        self.result = pn.pane.Markdown("", css_classes=["measure-result"], sizing_mode="stretch_width")
        self.points = ColumnDataSource(name="measured_points", data={k: [] for k in POINT_COLUMNS})
        # the profiler op opened in the explorer (``mark``), drawn while the explorer shows its problem
        self.marked: MeasuredOp | None = None
        self.marker_point = ColumnDataSource(name="measure_marker", data={k: [] for k in POINT_COLUMNS})
        f = figure(
            name="measure_figure",
            title="predicted vs measured (results store, this hardware and kernel)",
            height=320,
            sizing_mode="stretch_width",
            x_axis_type="log",
            y_axis_type="log",
            x_axis_label="predicted us",
            y_axis_label="measured us",
            toolbar_location="right",
        )
        f.scatter("predicted_us", "measured_us", source=self.points, size=6, alpha=0.7)
        f.scatter(
            "predicted_us",
            "measured_us",
            source=self.marker_point,
            size=16,
            marker="diamond",
            color="#d62728",
            line_color="black",
            legend_label="profiler op (as it ran)",
        )
        f.legend.location = "top_left"
        f.add_layout(Slope(gradient=1, y_intercept=0, line_color="#888", line_dash="dashed"))
        f.add_tools(
            HoverTool(
                tooltips=[
                    ("", "@candidate"),
                    ("shape", "@shape"),
                    ("source", "@source"),
                    ("predicted", "@predicted_us{0,0.00} us"),
                    ("measured", "@measured_us{0,0.00} us"),
                ]
            )
        )
        self.figure = f
        # until the store holds a measurement of this hardware and kernel, a line says so instead of the chart
        self.empty = pn.pane.Markdown("", css_classes=["measure-empty"], sizing_mode="stretch_width")
        self.marked_line = pn.pane.HTML("", css_classes=["measure-marked"], sizing_mode="stretch_width")

    def panel(self) -> pn.viewable.Viewable:
        return pn.Column(
            "### Measure",
            pn.Row(self.button),
            self.result,
            self.empty,
            self.marked_line,
            self.figure,
            sizing_mode="stretch_width",
        )

    def mark(self, op: MeasuredOp | None) -> None:
        """Mark ``op`` on the chart while the explorer shows its problem (None: no mark)."""
        self.marked = op
        with pn.io.unlocked():  # the chart's Bokeh sources change too: one batch of events
            self.refresh()

    def _shown_mark(self) -> MeasuredOp | None:
        st, op = self.state, self.marked
        if op is None or st.session is None:
            return None
        return op if problem_key(st.hardware.name, st.problem) == op.key else None

    def _show_mark(self) -> bool:
        """Draw the marked op (or nothing) and its line; whether it is drawn."""
        op = self._shown_mark()
        self.marker_point.data = (
            {k: [] for k in POINT_COLUMNS}
            if op is None
            else {
                "predicted_us": [op.predicted_us],
                "measured_us": [op.measured_us],
                "source": ["profiler report"],
                "candidate": [f"{op.label} as it ran: {op.candidate}"],
                "shape": [op.shape],
            }
        )
        self.marked_line.object = (
            ""
            if op is None
            else (
                f"<b>&#9670; {html.escape(op.label)}</b> (profiler report): measured {op.measured_us:,.1f} us per "
                f"call, predicted {op.predicted_us:,.1f} us as it ran ({html.escape(op.candidate)})"
            )
        )
        return op is not None

    def refresh(self) -> None:
        """Reload the scatter from the store (every measured row of this hardware and kernel)."""
        st = self.state
        if st.session is None:
            return
        rows, predicted_us, measured_us = [], [], []
        if default_store_path().exists():  # reading creates no store
            with open_store() as store:
                for m in store.measurements(st.hardware.name, st.kernel):
                    if m.measured_ns and m.predicted_ns:
                        rows.append(m)
                        predicted_us.append(m.predicted_ns / 1e3)
                        measured_us.append(m.measured_ns / 1e3)
        shown = self._show_mark()
        self.figure.visible = bool(rows) or shown
        self.figure.legend.visible = shown
        self.empty.object = (
            ""
            if rows
            else (
                f"No measured time of {st.kernel} on {st.hardware.name} in the results store yet: each run of "
                "**Measure** on a card (or `deploy`, `ingest`, `accuracy --record`) adds a point here, predicted "
                "against measured. A simulator run checks numerics and traffic and has no time."
            )
        )
        self.points.data = {
            "predicted_us": predicted_us,
            "measured_us": measured_us,
            "source": [m.source for m in rows],
            "candidate": [m.candidate for m in rows],
            "shape": [",".join(f"{k}={v}" for k, v in m.shape.items()) for m in rows],
        }

    async def _on_click(self, _: object) -> None:
        if self.state.solution is None:
            self.result.object = "nothing to measure: the selected candidate has no schedule"
            return
        doc = self.state.document()
        runner, why = pick_runner("auto")
        self.button.disabled = True
        self.result.object = f"running on the {runner.name} ({why}) ..."
        try:
            run: Run = await asyncio.to_thread(runner.run, doc)
        except (ValueError, RuntimeError) as exc:  # RunnerError, SimulationError, ScheduleFileError, ...
            self.result.object = f"could not measure: {exc}"
            return
        finally:
            self.button.disabled = False
        with open_store() as store:
            row = store.record(run_measurement(doc, run))
        if run.measured_ns is not None:
            self.result.object = (
                f"**{run.source}**: measured {run.measured_ns / 1e3:,.2f} us ({run.measured_what}), "
                f"predicted {doc.prediction.latency_us:,.2f} us; recorded as #{row}"
            )
        else:
            self.result.object = (
                f"**{run.source}**: PCC {run.pcc:.4f}, traffic "
                f"{'equal to the model' if run.traffic_equal else 'DIFFERS from the model'}"
                f" ({run.note or 'every count equal'}); recorded as #{row}"
            )
        with pn.io.unlocked():
            self.refresh()
