"""The statistics of the model against the published SDPA op times (``published`` reads and predicts the
rows; ``accuracy/scoring.py`` holds the statistics every kernel shares): the error of the modelled rows
(``published.MODELLED``), over all of them and per regime (``published.REGIME_KINDS``: the kernel, one core or
the chip, the mask, grouped-query or not, the chunk sizes, the head dimension), in sample and leaving each
problem out (``score_sdpa``), and the JSON ``accuracy --kernel flash_attention --json`` prints
(``scores_json``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loom_explorer.accuracy.scoring import ErrorSummary, summarise_errors
from loom_explorer.families.attention.published import MODELLED, REGIME_KINDS, SdpaRow


def by_regime(rows: list[SdpaRow], errors: list[float | None]) -> dict[str, ErrorSummary]:
    """``"kind: regime"`` -> the summary of the rows in that regime (``REGIME_KINDS``)."""
    groups: dict[str, list[float | None]] = {}
    for row, error in zip(rows, errors, strict=True):
        for kind, regime in row.regimes().items():
            groups.setdefault(f"{kind}: {regime}", []).append(error)
    order = {kind: i for i, kind in enumerate(REGIME_KINDS)}
    return {
        name: summarise_errors(group)
        for name, group in sorted(groups.items(), key=lambda g: (order[g[0].split(": ")[0]], g[0]))
    }


def row_json(row: SdpaRow, cross_validated_pct: float | None = None) -> dict[str, Any]:
    """One row of ``accuracy --kernel flash_attention --json``, in the GEMM rows' contract: the file's own
    cells, then the candidate, the times in ns, the signed error, a ``note`` (why there is no prediction),
    the hardware and its hash; plus the held-out error, the regimes and the latency breakdown."""

    def r(x: float | None, digits: int) -> float | None:
        return None if x is None else round(x, digits)

    return {
        **row.measured.source,
        "line": row.measured.line,
        "candidate": row.candidate,
        "measured_ns": row.measured.time_ns,
        "predicted_ns": r(row.predicted_ns, 1),
        "error_pct": r(row.error_pct, 2),
        "cross_validated_error_pct": r(cross_validated_pct, 2),
        "note": row.conflict,
        "hardware": row.hardware,
        "hardware_sha256": row.hardware_sha256,
        "regimes": row.regimes(),
        "breakdown": row.breakdown,
    }


@dataclass(frozen=True, slots=True)
class SdpaScores:
    """The error of the modelled rows (``MODELLED``), overall (``all modelled rows``, first) and per regime: in
    sample, and leaving each problem out (``held_out``, empty without a cross-validation), with each row's
    held-out error by its line."""

    held_out_by_line: dict[int, float | None]
    in_sample: dict[str, ErrorSummary]
    held_out: dict[str, ErrorSummary]


def score_sdpa(rows: list[SdpaRow], cross_validated: list[SdpaRow] | None) -> SdpaScores:
    """The errors of ``rows`` in sample and of ``cross_validated`` (the same rows predicted by constants
    fitted without their problem; None or empty: no cross-validation)."""
    cv_by_line = {r.measured.line: r.error_pct for r in cross_validated or []}
    scored = [r for r in rows if r.measured.kernel in MODELLED]

    def summaries(values: list[float | None]) -> dict[str, ErrorSummary]:
        return {"all modelled rows": summarise_errors(values)} | by_regime(scored, values)

    in_sample = summaries([r.error_pct for r in scored])
    held_out = summaries([cv_by_line.get(r.measured.line) for r in scored]) if cross_validated else {}
    return SdpaScores(cv_by_line, in_sample, held_out)


def scores_json(rows: list[SdpaRow], scores: SdpaScores, folds: int, data: str) -> dict[str, object]:
    """``accuracy --kernel flash_attention --json``: every row, the in-sample summary and per regime, and the
    cross-validated ones (None without a cross-validation)."""

    def summary_json(summaries: dict[str, ErrorSummary]) -> dict[str, object]:
        every, *rest = summaries.items()
        return {"summary": every[1].to_json(), "by_regime": {k: s.to_json() for k, s in rest}}

    return {
        "data": data,
        "modelled_kernels": list(MODELLED),
        "rows": [row_json(r, scores.held_out_by_line.get(r.measured.line)) for r in rows],
        **summary_json(scores.in_sample),
        "cross_validated": {**summary_json(scores.held_out), "folds": folds} if scores.held_out else None,
    }
