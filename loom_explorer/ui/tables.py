"""The explorer's tables as pandas frames (no widgets): candidates, parameters, and a comparison."""

from __future__ import annotations

import pandas as pd

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.report import solution_metrics
from loom_explorer.result import CandidateResult
from loom_explorer.ui.state import ExplorerState, Snapshot, TtnnDefault

CANDIDATE_COLUMNS = [
    "rank",
    "candidate",
    "status",
    "feasible",
    "latency_us",
    "tflops",
    "roofline_pct",
    "l1_kib",
    "dram_mb",
    "pins",
    "solve_ms",
]


TTNN_DEFAULT = "ttnn default"  # the candidate cell of ttnn's default's row: "ttnn default: <candidate>"
# statuses that prove the candidate has no schedule (under its pins); any other without one is not known yet
NO_SCHEDULE = frozenset({"infeasible", "conflict"})


def _row(
    hw: HardwareSpec, schedule: SymbolicSchedule, r: CandidateResult, rank: int | None, name: str, status: str
) -> dict[str, object]:
    s = r.solution
    m = solution_metrics(hw, schedule, s) if s else {}
    return {
        "rank": rank,
        "candidate": name,
        "status": status,
        "feasible": True if s is not None else (False if r.status in NO_SCHEDULE else None),
        "latency_us": m.get("latency_us"),
        "tflops": m.get("tflops"),
        "roofline_pct": m.get("roofline_pct"),
        "l1_kib": round(s.l1_bytes / 1024, 1) if s else None,
        "dram_mb": round(s.dram_read_bytes / 1e6, 2) if s else None,
        "pins": ", ".join(f"{k}={v}" for k, v in r.pins),
        "solve_ms": round(r.solve_seconds * 1e3, 1),
    }


def candidate_frame(
    hw: HardwareSpec,
    schedules: dict[str, SymbolicSchedule],
    results: list[CandidateResult],
    ttnn_default: TtnnDefault | None = None,
) -> pd.DataFrame:
    """One row per candidate, best first: feasibility, predicted latency, TFLOP/s, % of the compute
    roofline, L1 used, DRAM bytes read, pins and solve time. ``feasible`` is None while it is not known (a
    candidate only proven no faster than the best, or stopped before its search ended); a missing figure is
    None. With ``ttnn_default``, its own first row: ``TTNN_DEFAULT: <candidate>``, no rank, the config's
    values costed (status ``ttnn default``, or ``illegal`` when the model finds it so)."""
    rows = []
    if ttnn_default is not None and ttnn_default.result is not None and ttnn_default.schedule is not None:
        r = ttnn_default.result
        row = _row(
            hw,
            ttnn_default.schedule,
            r,
            None,
            f"{TTNN_DEFAULT}: {r.candidate_name}",
            "ttnn default" if r.solution else "illegal",
        )
        rows.append({**row, "pins": "(the config's values)"})
    rows += [
        _row(hw, schedules[r.candidate_name], r, rank, r.candidate_name, r.status) for rank, r in enumerate(results, 1)
    ]
    # objects: a missing value stays None (an empty cell), never NaN; pandas-stubs say Any for Python 3.10
    frame: pd.DataFrame = pd.DataFrame(rows, columns=CANDIDATE_COLUMNS, dtype=object)
    return frame


def param_frame(state: ExplorerState) -> pd.DataFrame:
    """The selected candidate's parameters: solved value, pin (None when free), domain and meaning."""
    schedule = state.symbolic
    values = state.solution.values() if state.solution else {}
    rows = [
        {
            "parameter": p.name,
            "value": values.get(p.name),
            "pinned": state.pins.get(p.name),
            "domain": p.domain_text(),
            "unit": p.unit,
            "description": p.description,
        }
        for p in schedule.params
    ]
    frame: pd.DataFrame = pd.DataFrame(
        rows, columns=["parameter", "value", "pinned", "domain", "unit", "description"], dtype=object
    )  # a free parameter's pin stays None (an empty cell)
    return frame


def comparison_frame(state: ExplorerState, kept: Snapshot) -> pd.DataFrame:
    """Kept schedule (A) beside the selected one (B): headline figures, every parameter, every term."""
    now = Snapshot(state.candidate, tuple(sorted(state.pins.items())), state.result)
    rows: list[dict[str, object]] = []

    def add(what: str, a: object, b: object) -> None:
        rows.append({"": what, "A (kept)": "-" if a is None else str(a), "B (selected)": "-" if b is None else str(b)})

    add("schedule", kept.label, now.label)
    add("status", kept.result.status, now.result.status)
    sa, sb = kept.result.solution, now.result.solution
    add("latency us", *(round(state.hardware.cycles_to_us(s.latency_cycles), 2) if s else None for s in (sa, sb)))
    add("latency cycles", *(s.latency_cycles if s else None for s in (sa, sb)))
    add("L1 bytes", *(s.l1_bytes if s else None for s in (sa, sb)))
    va, vb = (sa.values() if sa else {}), (sb.values() if sb else {})
    for name in dict.fromkeys([*va, *vb]):
        add(name, va.get(name), vb.get(name))
    ta, tb = (dict(sa.breakdown) if sa else {}), (dict(sb.breakdown) if sb else {})
    for name in dict.fromkeys([*ta, *tb]):
        add(f"term {name}", ta.get(name), tb.get(name))
    frame: pd.DataFrame = pd.DataFrame(rows, columns=["", "A (kept)", "B (selected)"])
    return frame
