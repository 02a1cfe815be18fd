"""The report of a sweep: per op the predicted latency, utilisation, chosen candidate and parameters, ttnn's
default config's predicted latency for the same op and the speedup (``loom-explorer report``).

Speedup is ttnn's default latency over ours, both predicted by the same model (``predict --ttnn-default``),
so it says how much the chosen schedule gains over the config ttnn would pick, under the model. A group
is the text of an op's label before ``:`` (e.g. ``llama-3-8b prefill 2k``); its totals add the latency of
every op of the group, once per label (a sweep records ops of one shape under each of their labels, so a
layer's two norms or ``w1`` and ``w3`` count twice), over the ops that have both latencies (``priced``),
so that the two sums compare. For a model sweep (``sweep/ops.py``) a group's total is one decoder layer
(two RMSNorms, the q/k/v and output projections, the attention, two residual adds, the FFN's three matmuls
and its SwiGLU) plus the final norm and the LM head, all once; the layers are not multiplied.

Beside every speed-up stands the model's measured error for the op's kernel family (``accuracy/family_error.py``:
median and worst |error| on published timings, "not measured" where there are none) and the speed-up's
floor at those errors, ``s (1 - e) / (1 + e)``; a group counts the priced ops whose floor is above 1 at the
median and at the worst error ("beyond the error"), so a 7x inside the error reads as such.

A mesh sweep's records (``sweep/mesh_task.py``: ``hardware`` a shipped mesh) are one decoder layer per phase,
each op's share of the layer planned by the mesh planner (ours) and by ttnn's hand-written split: the report
gives them a table of layers (ours, ttnn's and the speed-up, ttnn's layer over ours) and, per mesh, a table of
ops with each side's split and collectives instead of the chip table. Both name the precision preset the
weights ran at (``SweepRecord.precision``; "not recorded" for a record written before it was kept), beside
the shape: a mesh record's ``dtype`` is its activations'.

``report_markdown`` writes the summary and the op tables as Markdown; the same as one HTML page with plots
is a view, ``ui/sweep_report.py: report_html``.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass

from loom_explorer.accuracy.family_error import FamilyError, error_for_op, family_of
from loom_explorer.hardware.mesh_load import is_mesh_name, load_mesh
from loom_explorer.store import SweepRecord


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
    beyond_median_error: int  # priced ops whose speed-up floor at the family's median error is above 1
    beyond_worst_error: int  # ... at its worst error


def _shape(r: SweepRecord) -> dict[str, int]:
    return {k: int(v) for k, v in (part.split("=") for part in r.shape.split(",") if "=" in part)}


def record_family(r: SweepRecord) -> str:
    """The kernel family whose measured error speaks for ``r`` (``family_error.family_of``)."""
    return family_of(r.kernel, _shape(r))


def model_error(r: SweepRecord) -> FamilyError | None:
    """The measured error of the model on ``r``'s op (``family_error.error_for_op``; None: never measured),
    on its chip: a mesh record's is its mesh's chip (every device runs it)."""
    chip = load_mesh(r.hardware).chip if is_mesh_name(r.hardware) else r.hardware
    return error_for_op(r.kernel, _shape(r), chip)


def speedup_floors(r: SweepRecord) -> tuple[float, float] | None:
    """``r``'s speed-up floor at its family's median and worst error; None without both."""
    error = model_error(r)
    if r.speedup is None or error is None:
        return None
    return error.floors(r.speedup)


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
        ours_ns = [r.best.latency_ns for r in priced if r.best is not None]  # every priced record has both
        ttnn_default_ns = [r.ttnn_default_ns for r in priced if r.ttnn_default_ns is not None]
        floors = [f for f in map(speedup_floors, priced) if f is not None]
        out.append(
            GroupSummary(
                name=name,
                ops=len(rs),
                failed=len(rs) - len(ok),
                priced=len(priced),
                ours_us=sum(ours_ns) / 1e3,
                ttnn_default_us=sum(ttnn_default_ns) / 1e3 if priced else None,
                geomean_speedup=math.exp(statistics.fmean(math.log(s) for s in speedups)) if speedups else None,
                max_speedup=max(speedups) if speedups else None,
                beyond_median_error=sum(f[0] > 1 for f in floors),
                beyond_worst_error=sum(f[1] > 1 for f in floors),
            )
        )
    return out


def summary_row(g: GroupSummary) -> list[str]:
    return [
        g.name,
        str(g.ops),
        str(g.failed),
        str(g.priced),
        f"{g.ours_us:,.1f}",
        f"{g.ttnn_default_us:,.1f}" if g.ttnn_default_us is not None else "-",
        f"{g.geomean_speedup:.2f}x" if g.geomean_speedup else "-",
        f"{g.max_speedup:.2f}x" if g.max_speedup else "-",
        f"{g.beyond_median_error} / {g.beyond_worst_error} of {g.priced}",
    ]


SUMMARY_HEADERS = [
    "chip: group",
    "ops",
    "failed",
    "priced",
    "ours us (sum)",
    "ttnn default us (sum)",
    "speedup (geomean)",
    "best",
    "beyond the error (median / worst)",
]


def error_rows(records: list[SweepRecord]) -> list[list[str]]:
    """Per chip and kernel family of the report: the model's measured error, or "not measured"."""
    seen: dict[tuple[str, str], FamilyError | None] = {}
    for r in records:
        seen.setdefault((r.hardware, record_family(r)), model_error(r))
    return [
        [hw, family, *((error.figure(), error.source()) if error else ("not measured", "-"))]
        for (hw, family), error in sorted(seen.items())
    ]


ERROR_HEADERS = ["chip", "kernel family", "model error: median / worst |error|", "measured on"]
RANKED_HEADERS = ["chip", "op", "kernel", "shape", "speedup", "floor at the median error", "model error"]


def ranked_rows(records: list[SweepRecord]) -> list[list[str]]:
    """The priced ops predicted faster than ttnn's default, by their speed-up floor at the family's median
    error (a family never measured: by its speed-up, floor "-"), then by the speed-up."""
    faster = [r for r in records if r.speedup is not None and r.speedup > 1]

    def floor(r: SweepRecord) -> float | None:
        floors = speedup_floors(r)
        return floors[0] if floors else None

    faster.sort(key=lambda r: (-(floor(r) or 0.0), -(r.speedup or 0.0)))
    out = []
    for r in faster:
        f, error = floor(r), model_error(r)
        floor_text = "-" if f is None else f"{f:.2f}x" + (" (within the error)" if f <= 1 else "")
        out.append(
            [
                r.hardware,
                r.label or "-",
                r.kernel,
                " ".join((r.shape, *r.options)),
                f"{r.speedup:.2f}x",
                floor_text,
                error.figure() if error else "not measured",
            ]
        )
    return out


def _params(r: SweepRecord) -> str:
    if r.best is None:
        return ""
    return ", ".join(f"{k}={v}" for k, v in r.best.params)


def op_row(r: SweepRecord) -> list[str]:
    ours = f"{r.best.latency_ns / 1e3:,.1f}" if r.best else "-"
    util = f"{100 * r.best.utilisation:.0f}%" if r.best else "-"
    default = f"{r.ttnn_default_ns / 1e3:,.1f}" if r.ttnn_default_ns else "-"
    speedup = f"{r.speedup:.2f}x" if r.speedup else "-"
    error = model_error(r)
    floors = speedup_floors(r)
    error_text = error.figure() if error else "not measured"
    floor_text = f"{floors[0]:.2f}x / {floors[1]:.2f}x" if floors else "-"
    runner = f"{r.runner_up.candidate} ({r.runner_up.latency_ns / 1e3:,.1f} us)" if r.runner_up else "-"
    status = r.status if r.status != "ok" or not r.error else "ok (not all proven)"
    return [
        r.label or "-",
        r.kernel,
        " ".join((r.shape, *r.options)),
        ours,
        util,
        r.best.candidate if r.best else (r.error[:120] or status),
        _params(r),
        runner,
        default,
        speedup,
        error_text,
        floor_text,
        status,
    ]


HEADERS = [
    "op",
    "kernel",
    "shape",
    "ours us",
    "util",
    "candidate (or error)",
    "parameters",
    "runner-up",
    "ttnn default us",
    "speedup",
    "model error (median / worst)",
    "speedup floor (median / worst error)",
    "status",
]
ERROR_NOTE = (
    "Model error: the model's median and worst |error| on published timings of the op's kernel "
    "family (held out from every fit, or cross-validated); a speed-up's floor is s (1 - e) / (1 + e), "
    "what it is worth if both predictions are off by e in opposite directions, at the median and the "
    'worst error. "Beyond the error" counts the priced ops whose floor is above 1.'
)


def is_mesh_record(r: SweepRecord) -> bool:
    """Whether ``r`` is an op of a mesh sweep's layer (module docstring)."""
    return is_mesh_name(r.hardware)


MESH_LAYER_HEADERS = ["mesh: layer", "precision", "ops", "ours us (layer)", "ttnn's split us (layer)", "speedup"]


def precision_text(r: SweepRecord) -> str:
    """The precision preset of a mesh record's weights (module docstring)."""
    return r.precision or "not recorded"


def mesh_layer_rows(records: list[SweepRecord]) -> list[list[str]]:
    """Per mesh and phase: our layer's latency per device (every op planned), ttnn's split's and ttnn's over
    ours (only when every op of the layer has both)."""
    groups: dict[str, list[SweepRecord]] = defaultdict(list)
    for r in records:
        if is_mesh_record(r):
            groups[f"{r.hardware}: {group_of(r)}"].append(r)
    rows = []
    for name, rs in groups.items():
        planned = all(r.best is not None for r in rs)
        ours_ns = sum(r.best.latency_ns for r in rs if r.best is not None)
        ttnn_ns = sum(r.ttnn_default_ns or 0.0 for r in rs)
        whole = planned and all(r.ttnn_default_ns for r in rs) and ours_ns > 0
        rows.append(
            [
                name,
                ", ".join(sorted({precision_text(r) for r in rs})),
                str(len(rs)),
                f"{ours_ns / 1e3:,.1f}" if planned else "-",
                f"{ttnn_ns / 1e3:,.1f}" if whole else "-",
                f"{ttnn_ns / ours_ns:.2f}x" if whole else "-",
            ]
        )
    return rows


MESH_OP_HEADERS = [
    "op",
    "shape",
    "precision",
    "ours: split",
    "ours us",
    "our collectives",
    "ttnn us",
    "ttnn's split and collectives",
    "speedup",
    "status",
]


def mesh_op_row(r: SweepRecord) -> list[str]:
    b = r.best
    return [
        r.label or "-",
        " ".join((r.shape, *r.options)),
        precision_text(r),
        b.candidate if b else (r.error[:120] or r.status),
        f"{b.latency_ns / 1e3:,.1f}" if b else "-",
        "<br>".join(b.collectives) if b and b.collectives else "-",
        f"{r.ttnn_default_ns / 1e3:,.1f}" if r.ttnn_default_ns else "-",
        r.ttnn_default_note.replace("; ", "<br>") or "-",
        f"{r.speedup:.2f}x" if r.speedup else "-",
        r.status,
    ]


MESH_NOTE = (
    "Mesh layers: each op's share of the layer's latency per device, its split's on-chip optimum (or the "
    "fused all-gather + matmul, or the distributed norm with its stats gather) plus the collectives that "
    "convert a tensor for it; ours is the mesh planner's proven split, ttnn's is its hand-written split "
    "(tt_transformers on a T3000, llama3_70b_galaxy on a Galaxy) costed by the same model. Speedup: ttnn's "
    "over ours."
)


def report_markdown(records: list[SweepRecord], title: str) -> str:
    lines = [
        f"# {title}",
        "",
        "Predicted by loom-explorer's model (not measured). Speedup = ttnn's default "
        "config's predicted latency over ours.",
        "",
        "A group's sums add every op of the group once per label (a layer's two norms, one shape under "
        "two labels, count twice), over the ops priced both ways. For a model sweep that is one decoder layer "
        "(norms, projections, attention, residual adds, FFN matmuls, SwiGLU) plus the final norm and the "
        "LM head.",
        "",
        ERROR_NOTE,
        "",
        "## Summary",
        "",
        *_markdown_table(SUMMARY_HEADERS, [summary_row(g) for g in summarise(records)]),
        "",
        "## The model's measured error",
        "",
        *_markdown_table(ERROR_HEADERS, error_rows(records)),
        "",
        "## Speed-ups by their floor at the family's median error",
        "",
        "Every priced op with a predicted speed-up, the most certain first: ranked by the speed-up's floor at "
        "its family's median error, then by the speed-up. A floor at or below 1 is within the error.",
        "",
        *_markdown_table(RANKED_HEADERS, ranked_rows(records)),
    ]
    if any(is_mesh_record(r) for r in records):
        lines += [
            "",
            "## Mesh layers",
            "",
            MESH_NOTE,
            "",
            *_markdown_table(MESH_LAYER_HEADERS, mesh_layer_rows(records)),
        ]
    by_hw: dict[str, list[SweepRecord]] = defaultdict(list)
    for r in records:
        by_hw[r.hardware].append(r)
    for hw, rs in by_hw.items():
        if is_mesh_record(rs[0]):
            lines += ["", f"## {hw} (mesh)", "", *_markdown_table(MESH_OP_HEADERS, [mesh_op_row(r) for r in rs])]
        else:
            lines += ["", f"## {hw}", "", *_markdown_table(HEADERS, [op_row(r) for r in rs])]
    return "\n".join(lines) + "\n"


def _markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows),
    ]
