"""``loom-explorer accuracy --by capture|family|chip``: the capture calibration judged out of sample, as
tables (or ``--json``): every method's held-out error per group (``capture_cv``), then the shipped
calibration on the captures it never saw.

A cell reads ``median / p90 / total``: the median and 90th-percentile |predicted / measured - 1| of the
group's rows, and the error on their total device time. ``beats`` names the baselines whose median the model
beats in that group (a family under ``capture_cv.MIN_FAMILY_ROWS`` rows is scored, not judged).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from loom_explorer.accuracy.calibration_rows import CalibrationRow, all_capture_rows
from loom_explorer.accuracy.capture_cv import (
    FOLDS,
    GROUPINGS,
    METHODS,
    GroupScores,
    Score,
    check_scores,
    held_out,
    scores_by,
)
from loom_explorer.accuracy.progress import Progress
from loom_explorer.accuracy.published import Console
from loom_explorer.errors import LoomError

BASELINES = ("roofline", "learned")


class CaptureAccuracyError(LoomError, ValueError):
    """``accuracy --by`` given flags it does not take; the message names them."""


@dataclass(frozen=True, slots=True)
class CaptureAccuracyRequest:
    by: str  # one of capture_cv.GROUPINGS
    folds: str  # one of capture_cv.FOLDS
    json: bool


def cell(s: Score) -> str:
    return f"{100 * s.median_abs_err:.1f}% / {100 * s.p90_abs_err:.1f}% / {100 * s.total_err:+.1f}%"


def beaten(g: GroupScores) -> str:
    """The baselines the model's median beats in ``g``."""
    model = g.of("model").median_abs_err
    won = [b for b in BASELINES if model < g.of(b).median_abs_err]
    return ", ".join(won) or "none"


def markdown(scores: Sequence[GroupScores], by: str) -> list[str]:
    """The table of ``scores``: one line per group, a cell per method (module docstring)."""
    head = f"| {by} | rows | " + " | ".join(METHODS) + " | model beats |"
    lines = [head, "|" + "---|" * (len(METHODS) + 3)]
    for g in scores:
        methods = " | ".join(cell(g.of(m)) for m in METHODS)
        name = f"`{g.group}`" if by == "capture" and g.group != "all" else g.group
        lines.append(f"| {name} | {g.of('model').rows} | {methods} | {beaten(g)} |")
    return lines


def report_lines(rows: Sequence[CalibrationRow], by: str, folds: str, progress: Progress | None = None) -> list[str]:
    """Both tables as markdown (module docstring)."""
    predictions = held_out(rows, folds, progress=progress)
    checks = check_scores(rows, by)
    return [
        f"Held out: leave one {folds} out (median / p90 / total error of each method's held-out predictions).",
        "",
        *markdown(scores_by(rows, predictions, by), by),
        "",
        "Checking: every method fitted on the `fit` captures, scored on the `check` captures (never fitted).",
        "",
        *markdown(checks, by),
    ]


def report_json(rows: Sequence[CalibrationRow], by: str, folds: str, progress: Progress | None = None) -> str:
    predictions = held_out(rows, folds, progress=progress)

    def scored(scores: Sequence[GroupScores]) -> dict[str, dict[str, dict[str, float | int]]]:
        return {g.group: {m: s.as_json() for m, s in g.by_method} for g in scores}

    return json.dumps(
        {
            "by": by,
            "folds": folds,
            "held_out": scored(scores_by(rows, predictions, by)),
            "checking": scored(check_scores(rows, by)),
        },
        indent=1,
    )


def run_capture_accuracy(req: CaptureAccuracyRequest, console: Console) -> None:
    if req.by not in GROUPINGS:
        raise CaptureAccuracyError(f"--by {req.by!r}: expected one of {', '.join(GROUPINGS)}")
    if req.folds not in FOLDS:
        raise CaptureAccuracyError(f"--folds {req.folds!r}: expected one of {', '.join(FOLDS)}")
    with Progress() as progress:
        rows = all_capture_rows()
        if req.json:
            console.out(report_json(rows, req.by, req.folds, progress))
        else:
            console.out("\n".join(report_lines(rows, req.by, req.folds, progress)))
