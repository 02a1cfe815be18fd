"""The report of a sweep as one self-contained HTML page (``loom-explorer report --html``): the summary and op
tables of ``sweep/report.py`` with two Bokeh plots per chip (predicted latency of ours and ttnn's default per
op; speedup against ttnn's default latency), Bokeh's JavaScript inlined.
"""

from __future__ import annotations

import html
from collections import defaultdict

from bokeh.embed import components
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, FactorRange, HoverTool
from bokeh.plotting import figure
from bokeh.resources import INLINE

from loom_explorer.store import SweepRecord
from loom_explorer.sweep.report import (
    ERROR_HEADERS,
    ERROR_NOTE,
    HEADERS,
    SUMMARY_HEADERS,
    error_rows,
    op_row,
    summarise,
    summary_row,
)


def _plots(records: list[SweepRecord]) -> str:
    """Bokeh plots per chip as (script, divs) HTML with the library inlined."""
    by_hw: dict[str, list[SweepRecord]] = defaultdict(list)
    for r in records:
        if r.best is not None:
            by_hw[r.hardware].append(r)
    layouts = []
    for hw, rs in by_hw.items():
        names = [f"{i + 1}. {r.label or r.shape}" for i, r in enumerate(rs)]
        ours_us = [r.best.latency_ns / 1e3 for r in rs if r.best is not None]  # every r here has a best
        src = ColumnDataSource(
            {
                "op": names,
                "ours": ours_us,
                "default": [(r.ttnn_default_ns or float("nan")) / 1e3 for r in rs],
                "speedup": [r.speedup or float("nan") for r in rs],
            }
        )
        bars = figure(
            y_range=FactorRange(factors=list(reversed(names))),
            x_axis_type="log",
            height=max(250, 22 * len(rs) + 80),
            width=700,
            title=f"{hw}: predicted latency (us), ours (blue) and ttnn default (orange)",
        )
        bars.scatter("default", "op", source=src, size=9, color="darkorange", marker="square")
        bars.scatter("ours", "op", source=src, size=9, color="steelblue")
        bars.add_tools(
            HoverTool(
                tooltips=[
                    ("op", "@op"),
                    ("ours us", "@ours{0,0.0}"),
                    ("ttnn default us", "@default{0,0.0}"),
                    ("speedup", "@speedup{0.00}x"),
                ]
            )
        )
        scatter = figure(
            x_axis_type="log",
            width=450,
            height=bars.height,
            title=f"{hw}: speedup over ttnn default",
            x_axis_label="ttnn default predicted us",
            y_axis_label="speedup",
        )
        scatter.scatter("default", "speedup", source=src, size=8)
        scatter.add_tools(HoverTool(tooltips=[("op", "@op"), ("speedup", "@speedup{0.00}x")]))
        layouts.append(row(bars, scatter))
    if not layouts:
        return ""
    script, div = components(column(*layouts))
    return INLINE.render() + script + div


def report_html(records: list[SweepRecord], title: str) -> str:
    def table(header: list[str], rows: list[list[str]]) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px;text-align:left}th{background:#eee}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1>"
        "<p>Predicted by loom-explorer's model (not measured). Speedup = ttnn's default config's predicted "
        f"latency over ours.</p><p>{html.escape(ERROR_NOTE)}</p><h2>Summary</h2>"
        + table(SUMMARY_HEADERS, [summary_row(g) for g in summarise(records)])
        + "<h2>The model's measured error</h2>"
        + table(ERROR_HEADERS, error_rows(records))
        + _plots(records)
        + "<h2>Ops</h2>"
        + table(["chip", *HEADERS], [[r.hardware, *op_row(r)] for r in records])
        + "</body></html>\n"
    )
