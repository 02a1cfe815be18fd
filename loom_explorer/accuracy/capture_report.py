"""``loom-explorer accuracy --by capture|family|chip``: the capture calibration judged out of sample, as
tables (or ``--json``): every method's held-out error per group (``capture_cv``), then the shipped
calibration on the captures it never saw.

A cell reads ``median / p90 / total``: the median and 90th-percentile |predicted / measured - 1| of the
group's rows, and the error on their total device time. ``beats`` names the baselines whose median the model
beats in that group (a family under ``capture_cv.MIN_FAMILY_ROWS`` rows is scored, not judged).
``python -m loom_explorer.accuracy.capture_report`` prints the tables docs/accuracy.md states (``document``).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from loom_explorer.accuracy.calibration_row import CalibrationRow
from loom_explorer.accuracy.calibration_rows import all_capture_rows
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
from loom_explorer.accuracy.term_calibration import FACTORS, GROUP_NAMES, SHIPPED_FACTORS, TermScales, shipped_scales
from loom_explorer.errors import LoomError

BASELINES = ("roofline", "learned")
# the tables docs/accuracy.md states: (--by, --folds)
DOCUMENTED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("family", "capture", SHIPPED_FACTORS),
    ("capture", "capture", SHIPPED_FACTORS),
    ("family", "network", SHIPPED_FACTORS),
    ("family", "shape", SHIPPED_FACTORS),
    ("chip", "chip", SHIPPED_FACTORS),
    ("family", "capture", FACTORS),
)


class CaptureAccuracyError(LoomError, ValueError):
    """``accuracy --by`` given flags it does not take; the message names them."""


@dataclass(frozen=True, slots=True)
class CaptureAccuracyRequest:
    by: str  # one of capture_cv.GROUPINGS
    folds: str  # one of capture_cv.FOLDS
    json: bool
    factors: tuple[str, ...] = SHIPPED_FACTORS  # the kernel's and architecture's own factors the fits have


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


def report_lines(
    rows: Sequence[CalibrationRow],
    by: str,
    folds: str,
    progress: Progress | None = None,
    checking: bool = True,
    factors: tuple[str, ...] = SHIPPED_FACTORS,
) -> list[str]:
    """Both tables as markdown (module docstring); the first alone without ``checking``."""
    predictions = held_out(rows, folds, progress=progress, factors=factors)
    out = [
        f"Held out: leave one {folds} out (median / p90 / total error of each method's held-out predictions).",
        "",
        *markdown(scores_by(rows, predictions, by), by),
    ]
    if checking:
        out += [
            "",
            "Checking: every method fitted on the `fit` captures, scored on the `check` captures (never fitted).",
            "",
            *markdown(check_scores(rows, by, factors), by),
        ]
    return out


def report_json(
    rows: Sequence[CalibrationRow],
    by: str,
    folds: str,
    progress: Progress | None = None,
    factors: tuple[str, ...] = SHIPPED_FACTORS,
) -> str:
    predictions = held_out(rows, folds, progress=progress, factors=factors)

    def scored(scores: Sequence[GroupScores]) -> dict[str, dict[str, dict[str, float | int]]]:
        return {g.group: {m: s.as_json() for m, s in g.by_method} for g in scores}

    return json.dumps(
        {
            "by": by,
            "folds": folds,
            "factors": list(factors),
            "held_out": scored(scores_by(rows, predictions, by)),
            "checking": scored(check_scores(rows, by, factors)),
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
            console.out(report_json(rows, req.by, req.folds, progress, req.factors))
        else:
            console.out("\n".join(report_lines(rows, req.by, req.folds, progress, factors=req.factors)))


def scales_table(scales: TermScales) -> list[str]:
    """The family scales of the shipped calibration, a column per group, and each family's own factors."""
    head = "| family | rows | " + " | ".join(GROUP_NAMES) + " | per kernel | per architecture |"
    lines = [head, "|" + "---|" * (len(GROUP_NAMES) + 4)]
    for family in sorted(scales.rows):
        get = scales.log_scales.get

        def own(level: str, family: str = family) -> str:
            factors = sorted((k[2], v) for k, v in scales.log_scales.items() if k[0] == family and k[1] == level)
            return ", ".join(f"{key} {math.exp(v):.2f}" for key, v in factors) or "-"

        groups = " | ".join(
            f"{math.exp(v):.2f}" if (v := get((family, "family", "", g))) is not None else "-" for g in GROUP_NAMES
        )
        lines.append(f"| {family} | {scales.rows[family]} | {groups} | {own('kernel')} | {own('arch')} |")
    return lines


def document(rows: Sequence[CalibrationRow] | None = None) -> list[str]:
    """The tables of docs/accuracy.md's calibration section, each headed by the command that prints it."""
    rows = all_capture_rows() if rows is None else rows
    out = ["`python -m loom_explorer.accuracy.calibration_rows` (the shipped file, as factors):", ""]
    out += scales_table(shipped_scales())
    for by, folds, factors in DOCUMENTED:
        flags = f"--by {by}" + ("" if folds == "capture" else f" --folds {folds}")
        flags += f" --factors {','.join(factors)}" if factors != SHIPPED_FACTORS else ""
        first = (by, folds, factors) == DOCUMENTED[0]  # the checking table once: it does not depend on the folds
        out += ["", f"`loom-explorer accuracy {flags}`{'' if first else ' (its first table)'}:", ""]
        out += report_lines(rows, by, folds, checking=first, factors=factors)
    return out


if __name__ == "__main__":
    sys.stdout.write("\n".join(document()) + "\n")
