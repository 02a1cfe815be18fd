"""What ``accuracy --kernel flash_attention`` and ``calibrate --kernel flash_attention`` print of the published
SDPA op times (``published``, ``published_scoring``): a table of every row, then the error summaries of the
modelled rows, over all of them and per regime; or the JSON of ``published_scoring.scores_json``."""

from __future__ import annotations

import json

from loom_explorer.accuracy.scoring import ErrorSummary, pct
from loom_explorer.families.attention.published import MODELLED, SdpaRow
from loom_explorer.families.attention.published_scoring import score_sdpa, scores_json


def summary_line(name: str, s: ErrorSummary) -> str:
    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 2)

    bias = "-" if s.median_err_pct is None else f"{s.median_err_pct:+.1f}%"
    illegal = f"  illegal {s.illegal}" if s.illegal else ""
    return (
        f"  {name:<34} n={s.n:<3} median |err| {pct(r(s.median_abs_err_pct))}  worst "
        f"{pct(r(s.worst_abs_err_pct))}  median signed {bias}{illegal}"
    )


def _row_line(row: SdpaRow, cv: float | None) -> str:
    m = row.measured
    shape = ",".join(f"{k}={v}" for k, v in m.shape)
    cfg = m.config
    pred = f"{row.predicted_ns / 1e3:>10.1f}" if row.predicted_ns else f"{'-':>10}"
    err = f"{row.error_pct:+7.1f}%" if row.error_pct is not None else f"{'-':>8}"
    cv_text = f"{cv:+7.1f}%" if cv is not None else f"{'-':>8}"
    mask = "causal" if "causal" in m.options else "full"
    return (
        f"{m.line:>4} {m.kernel:<9} {shape:<36} {mask:<6} q{cfg.q_chunk_size}/k{cfg.k_chunk_size} "
        f"{cfg.compute_with_storage_grid_size[0]}x{cfg.compute_with_storage_grid_size[1]} "
        f"{m.time_ns / 1e3:>10.1f} {pred} {err} {cv_text}"
    )


def sdpa_report(
    rows: list[SdpaRow], cross_validated: list[SdpaRow] | None, folds: int, data: str, as_json: bool
) -> list[str]:
    """The table (or JSON), as the lines to print: every row, then the error of the modelled rows per kernel
    and per regime, in sample and (with ``cross_validated``) leaving each problem out."""
    scores = score_sdpa(rows, cross_validated)
    cv_by_line, in_sample, held_out = scores.held_out_by_line, scores.in_sample, scores.held_out
    if as_json:
        return [json.dumps(scores_json(rows, scores, folds, data), indent=2)]
    out = [
        f"{'line':>4} {'kernel':<9} {'shape':<36} {'mask':<6} chunks  grid {'measured us':>10} "
        f"{'predicted':>10} {'error':>8} {'held out':>8}"
    ]
    out += [_row_line(r, cv_by_line.get(r.measured.line)) for r in rows]
    out.append("\nin sample (the hardware file's constants):")
    out += [summary_line(name, s) for name, s in in_sample.items()]
    if cross_validated:
        out.append(f"\ncross-validated ({folds} problems, each left out of the fit once):")
        out += [summary_line(name, s) for name, s in held_out.items()]
    else:
        out.append("\n(the cross-validated error refits the attention constants once per problem: --cross-validate)")
    not_modelled = [r for r in rows if r.measured.kernel not in MODELLED]
    if not_modelled:
        kinds = sorted({r.measured.kernel for r in not_modelled})
        out.append(f"\nnot modelled, not scored: {len(not_modelled)} rows of the {', '.join(kinds)} kernels")
    return out
