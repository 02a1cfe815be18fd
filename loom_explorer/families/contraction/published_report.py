"""What ``accuracy`` and ``calibrate`` print of the published matmul measurements (``published``,
``published_scoring``): a table of every row with the file's own words, the error summaries over every row,
per card and per regime, the model beside the fitted roofline per card, and the hand-tuned over automatic
speed-ups; and a fit's errors per config kind. Each function returns the lines to print."""

from __future__ import annotations

from loom_explorer.accuracy.scoring import Summary, pct, rounded
from loom_explorer.families.contraction.published import Row
from loom_explorer.families.contraction.published_scoring import AccuracyTables, ErrorsByKind


def _row_line(r: Row) -> str:
    """One row of the table, with the measurement file's own words (``source``) for card, kind, shape, dtype
    and fidelity, as the JSON rows have them."""
    predicted_ns, error_pct = rounded(r.predicted_ns, 1), rounded(r.error_pct)
    s = r.source
    pred = f"{predicted_ns / 1e3:>12.2f}" if predicted_ns else f"{'illegal':>12}"
    err = f"{error_pct:>6.1f}%" if error_pct is not None else f"{'-':>7}"
    return (
        f"{s['card']:<5} {s['config_kind']:<11} {s['M']:>6} {s['K']:>6} {s['N']:>6} {s['dtype']:<10} "
        f"{s['math_fidelity']:<6} {r.regime:<13} {r.measured_ns / 1e3:>11.2f} {pred} {err}"
    )


def _summary_line(name: str, s: Summary, width: int = 24) -> str:
    spearman = rounded(s.spearman, 4)
    return (
        f"  {name:<{width}} n={s.n:<4} median |err| {pct(rounded(s.median_abs_err_pct))}  "
        f"p90 {pct(rounded(s.p90_abs_err_pct))}  Spearman {'-' if spearman is None else spearman}"
    )


def errors_by_kind_lines(name: str, errors: ErrorsByKind) -> list[str]:
    """One summary line for every row, then one per config kind."""
    return [
        _summary_line(name, errors.all, width=40),
        *(_summary_line(f"  {kind}", s, width=40) for kind, s in errors.by_kind.items()),
    ]


def accuracy_table_lines(tables: AccuracyTables) -> list[str]:
    """The table ``accuracy`` prints (``published_scoring.accuracy_tables``)."""
    out = [
        f"{'card':<5} {'kind':<11} {'M':>6} {'K':>6} {'N':>6} {'dtype':<10} {'fidelity':<6} {'regime':<13} "
        f"{'measured us':>11} {'predicted us':>12} {'error':>7}"
    ]
    out += [_row_line(r) for r in tables.rows]
    out.append("\nsummary (every row):")
    out.append(_summary_line("all", tables.summary))
    out += [_summary_line(name, s) for name, s in {**tables.by_card, **tables.by_regime}.items()]
    out.append(
        "\nthe model beside a three-constant roofline fitted on the same rows (in sample: every row; "
        "cross-validated: leave one shape out)"
    )
    for c in tables.comparisons:
        out.append(
            f"  {c.card} roofline on every row: compute efficiency {c.fit.compute_eff}, DRAM efficiency "
            f"{c.fit.dram_eff}, overhead {round(c.fit.overhead_ns, 1)} ns"
        )
        figures = [
            ("model, in sample", c.model),
            ("roofline, in sample", c.roofline),
            ("roofline, cross-validated", c.roofline_cross_validated),
        ]
        if c.model_cross_validated:
            figures.insert(1, ("model, cross-validated", c.model_cross_validated))
        for label, errors in figures:
            out += errors_by_kind_lines(f"{c.card} {label}", errors)
    if not any(c.model_cross_validated for c in tables.comparisons):
        out.append("  (the model's cross-validated error refits its constants once per shape: --cross-validate)")
    out.append(
        f"\nhand-tuned over automatic speedup: {len(tables.speedups)} pairs, "
        f"median |error| {pct(tables.speedup_median_abs_err_pct)}"
    )
    return out
