"""The report of a sweep: per op the predicted latency, utilisation, chosen candidate and parameters, ttnn's
default config's predicted latency for the same op and the speedup (``loom-explorer report``).

Speedup is ttnn's default latency over ours, both predicted by the same model (``predict --ttnn-default``),
so it says how much the chosen schedule gains over the config ttnn would pick, under the model. A group
is the text of an op's label before ``:`` (e.g. ``llama-3-8b prefill 2k``); its totals add the op
latencies once each (an op that runs several times per layer is not multiplied), over the ops that have
both latencies (``priced``), so that the two sums compare.

``report_markdown`` writes the summary and the op tables as Markdown; ``report_html`` the same as one
self-contained HTML page with two Bokeh plots per chip (predicted latency of ours and ttnn's default per
op; speedup against ttnn's default latency), Bokeh's JavaScript inlined.
"""

from __future__ import annotations

import html
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass

from loom_explorer.deploy.store import SweepRecord


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """Latency sums are over the ops that have both ours and ttnn's default (``priced``)."""

    name: str
    ops: int
    failed: int
    priced: int
    ours_us: float
    ttnn_default_us: float | None
    geomean_speedup: float | None
    max_speedup: float | None


def group_of(r: SweepRecord) -> str:
    return r.label.split(":")[0].strip() if ":" in r.label else r.kernel


def summarise(records: list[SweepRecord]) -> list[GroupSummary]:
    """Per (hardware, group): ops, failures, summed latencies, geometric-mean and best speedup."""
    groups: dict[str, list[SweepRecord]] = defaultdict(list)
    for r in records:
        groups[f"{r.hardware}: {group_of(r)}"].append(r)
    out = []
    for name, rs in groups.items():
        ok = [r for r in rs if r.best is not None]
        priced = [r for r in ok if r.speedup]
        speedups = [r.speedup for r in priced if r.speedup]
        out.append(GroupSummary(
            name=name, ops=len(rs), failed=len(rs) - len(ok), priced=len(priced),
            ours_us=sum(r.best.latency_ns for r in priced) / 1e3,  # type: ignore[union-attr]
            ttnn_default_us=sum(r.ttnn_default_ns for r in priced) / 1e3 if priced else None,  # type: ignore[misc]
            geomean_speedup=math.exp(statistics.fmean(math.log(s) for s in speedups)) if speedups else None,
            max_speedup=max(speedups) if speedups else None))
    return out


def _params(r: SweepRecord) -> str:
    if r.best is None:
        return ""
    return ", ".join(f"{k}={v}" for k, v in r.best.params)


def _row(r: SweepRecord) -> list[str]:
    ours = f"{r.best.latency_ns / 1e3:,.1f}" if r.best else "-"
    util = f"{100 * r.best.utilisation:.0f}%" if r.best else "-"
    default = f"{r.ttnn_default_ns / 1e3:,.1f}" if r.ttnn_default_ns else "-"
    speedup = f"{r.speedup:.2f}x" if r.speedup else "-"
    runner = f"{r.runner_up.candidate} ({r.runner_up.latency_ns / 1e3:,.1f} us)" if r.runner_up else "-"
    status = r.status if r.status != "ok" or not r.error else "ok (not all proven)"
    return [r.label or "-", r.kernel, r.shape + (" causal" if r.causal else ""), ours, util,
            r.best.candidate if r.best else (r.error[:120] or status), _params(r), runner, default, speedup, status]


HEADERS = ["op", "kernel", "shape", "ours us", "util", "candidate (or error)", "parameters", "runner-up",
           "ttnn default us", "speedup", "status"]


def report_markdown(records: list[SweepRecord], title: str) -> str:
    lines = [f"# {title}", "", "Predicted by loom-explorer's model (not measured). Speedup = ttnn's default "
             "config's predicted latency over ours.", "", "## Summary", "",
             "| chip: group | ops | failed | priced | ours us (sum) | ttnn default us (sum) | speedup (geomean) | best |",
             "|---|---|---|---|---|---|---|---|"]
    for g in summarise(records):
        default = f"{g.ttnn_default_us:,.1f}" if g.ttnn_default_us is not None else "-"
        geo = f"{g.geomean_speedup:.2f}x" if g.geomean_speedup else "-"
        best = f"{g.max_speedup:.2f}x" if g.max_speedup else "-"
        lines.append(f"| {g.name} | {g.ops} | {g.failed} | {g.priced} | {g.ours_us:,.1f} | {default} | {geo} | {best} |")
    by_hw: dict[str, list[SweepRecord]] = defaultdict(list)
    for r in records:
        by_hw[r.hardware].append(r)
    for hw, rs in by_hw.items():
        lines += ["", f"## {hw}", "", "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in _row(r)) + " |" for r in rs]
    return "\n".join(lines) + "\n"


def _plots(records: list[SweepRecord]) -> str:
    """Bokeh plots per chip as (script, divs) HTML with the library inlined."""
    from bokeh.embed import components
    from bokeh.layouts import column, row
    from bokeh.models import ColumnDataSource, HoverTool
    from bokeh.plotting import figure
    from bokeh.resources import INLINE

    by_hw: dict[str, list[SweepRecord]] = defaultdict(list)
    for r in records:
        if r.best is not None:
            by_hw[r.hardware].append(r)
    layouts = []
    for hw, rs in by_hw.items():
        names = [f"{i + 1}. {r.label or r.shape}" for i, r in enumerate(rs)]
        src = ColumnDataSource({"op": names, "ours": [r.best.latency_ns / 1e3 for r in rs],  # type: ignore[union-attr]
                                "default": [(r.ttnn_default_ns or float("nan")) / 1e3 for r in rs],
                                "speedup": [r.speedup or float("nan") for r in rs]})
        bars = figure(y_range=list(reversed(names)), x_axis_type="log", height=max(250, 22 * len(rs) + 80),
                      width=700, title=f"{hw}: predicted latency (us), ours (blue) and ttnn default (orange)")
        bars.scatter("default", "op", source=src, size=9, color="darkorange", marker="square")
        bars.scatter("ours", "op", source=src, size=9, color="steelblue")
        bars.add_tools(HoverTool(tooltips=[("op", "@op"), ("ours us", "@ours{0,0.0}"),
                                           ("ttnn default us", "@default{0,0.0}"), ("speedup", "@speedup{0.00}x")]))
        scatter = figure(x_axis_type="log", width=450, height=bars.height, title=f"{hw}: speedup over ttnn default",
                         x_axis_label="ttnn default predicted us", y_axis_label="speedup")
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

    summary = [[g.name, str(g.ops), str(g.failed), str(g.priced), f"{g.ours_us:,.1f}",
                f"{g.ttnn_default_us:,.1f}" if g.ttnn_default_us is not None else "-",
                f"{g.geomean_speedup:.2f}x" if g.geomean_speedup else "-",
                f"{g.max_speedup:.2f}x" if g.max_speedup else "-"] for g in summarise(records)]
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px;text-align:left}th{background:#eee}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1>"
            "<p>Predicted by loom-explorer's model (not measured). Speedup = ttnn's default config's predicted "
            "latency over ours.</p><h2>Summary</h2>"
            + table(["chip: group", "ops", "failed", "priced", "ours us (sum)", "ttnn default us (sum)",
                     "speedup (geomean)", "best"], summary)
            + _plots(records) + "<h2>Ops</h2>" + table(["chip", *HEADERS], [[r.hardware, *_row(r)] for r in records])
            + "</body></html>\n")
