"""Stacked bars: the latency breakdown and the L1 circular buffers of a schedule (and of a kept one).

Each chart is one Bokeh figure built once; :meth:`update` replaces its source's columns and its y
factors in place (no new figure, so zoom and layout stay). Bars are stacked by hand (``left``/``right``
per segment) because the set of terms differs between kernels.
"""

from __future__ import annotations

from bokeh.models import ColumnDataSource, FactorRange, HoverTool, Range1d
from bokeh.models.annotations import Span  # (bokeh.models re-exports it in a way mypy cannot follow)
from bokeh.palettes import Category20_20
from bokeh.plotting import figure

from loom_explorer.ui.scene import Columns


def stacked(rows: list[tuple[str, list[tuple[str, int]]]], colours: dict[str, str] | None = None) -> Columns:
    """Segments of horizontal stacked bars: one bar per (label, [(segment, value)...]) row."""
    names = list(dict.fromkeys(n for _, segs in rows for n, _ in segs))
    palette = colours or {n: Category20_20[i % 20] for i, n in enumerate(names)}
    cols: dict[str, list[object]] = {k: [] for k in ("row", "left", "right", "segment", "value", "colour")}
    for label, segs in rows:
        left = 0
        for name, value in segs:
            if value <= 0:
                continue
            for key, v in (
                ("row", label),
                ("left", left),
                ("right", left + value),
                ("segment", name),
                ("value", value),
                ("colour", palette[name]),
            ):
                cols[key].append(v)
            left += value
    return Columns(cols)


class StackedBars:
    """A horizontal stacked-bar figure with hover; ``limit`` draws a vertical line (e.g. L1 capacity)."""

    def __init__(self, title: str, unit: str, height: int = 170) -> None:
        self.source = ColumnDataSource(stacked([]).source_data())
        self.row_range = FactorRange()
        # an explicit x range: a data range would ignore the limit line and leave it off the chart
        self.value_range = Range1d(start=0, end=1)
        self.figure = figure(
            title=title,
            height=height,
            sizing_mode="stretch_width",
            y_range=self.row_range,
            x_range=self.value_range,
            toolbar_location=None,
            x_axis_label=unit,
        )
        self.figure.hbar(
            y="row",
            left="left",
            right="right",
            height=0.6,
            color="colour",
            line_color="white",
            source=self.source,
            legend_field="segment",
        )
        self.figure.add_tools(HoverTool(tooltips=[("", "@segment"), (unit, "@value{0,0}"), ("row", "@row")]))
        self.figure.legend.orientation = "horizontal"
        self.figure.legend.location = "top_left"
        self.figure.legend.label_text_font_size = "8pt"
        self.figure.add_layout(self.figure.legend[0], "below")
        self.limit = Span(
            location=0, dimension="height", line_color="#c0392b", line_dash="dashed", line_width=2, visible=False
        )
        self.figure.add_layout(self.limit)

    def update(self, rows: list[tuple[str, list[tuple[str, int]]]], limit: int | None = None) -> None:
        self.row_range.factors = [label for label, _ in reversed(rows)]
        columns = stacked(rows)
        self.source.data = columns.source_data()
        self.limit.visible = limit is not None
        self.limit.location = limit or 0
        widest = max([float(r) for r in columns.data["right"]] + [float(limit or 0)])  # type: ignore[arg-type]
        self.value_range.start, self.value_range.end = 0, 1.05 * widest or 1
