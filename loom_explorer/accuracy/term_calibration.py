"""The capture calibration: per-family scale factors on the model's latency terms, fitted to real models'
device-profiler captures, with per-kernel and per-chip adjustments pulled toward the family's value.

Every family's latency is a sum of named terms (``launch``, ``fill``, ``compute``, ``data_movement``,
``write_back``, ...: ``Solution.breakdown``, cycles), each the cost of one mechanism at the hardware file's
constants. ``GROUPS`` gathers them into six groups ``g``; the calibrated time of an op of family ``f``,
kernel ``k`` on a chip of architecture ``a`` (clock ``f_clk``) is

    t = sum_g s_g * x_g / f_clk,     s_g = exp(theta_{f,g} [+ delta_k + eps_a])

``x_g`` the group's cycles. ``exp(theta_{f,g})`` scales a whole family's mechanism (its launch and fixed
costs, its per-tile compute cost, its data-movement rates), one factor per group. A kernel's own factor
``exp(delta_k)`` (a tilize's costs are not a copy's) and an architecture's ``exp(eps_a)``, each on every group
of the op, can be fitted too (``factors``); the shipped fit has neither (``SHIPPED_FACTORS``): out of sample,
leaving one capture out, they did no better overall (``loom-explorer accuracy --by family --factors
kernel,arch`` against ``--by family``: docs/accuracy.md states both). The fit (``fit_term_scales``) minimises over a
family's rows

    sum_i rho(log(t_i / measured_i)) + LAMBDA_family |theta|^2 + LAMBDA_kernel |delta|^2 + LAMBDA_arch |eps|^2

(``least_squares.robust_least_squares``, ``rho`` the Cauchy loss): relative error, over- and under-prediction
alike, a row missed by 10x weighing little. The ridge on ``theta`` keeps a group no row exercises at the
hardware file's cost (scale 1); on ``delta`` and ``eps`` it makes the fit hierarchical: a kernel (or chip)
with few rows keeps about its family's scale, one never seen keeps exactly that. A family with fewer than
``MIN_ROWS`` rows is not fitted (every scale 1).

A family's scales are kept only where they beat the uncalibrated model on captures they were not fitted on
(``gated_fit``: leave one capture out inside the fit; a lower median |error|, no higher 90th percentile, and
no capture's median |error| higher);
elsewhere the family stays uncalibrated. The shipped
scales (``data/capture_calibration.csv``) are the gated fit of the rows of the captures whose role is ``fit``
(``data.CAPTURE_ROLES``); ``python -m loom_explorer.accuracy.calibration_rows`` prints that file.
The solver still optimises the uncalibrated latency; the calibration is what a predicted time of a
measured op is reported as (``ingest``, ``improve``) and what ``accuracy --by`` judges.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from loom_explorer.accuracy.least_squares import Matrix, Vector, robust_least_squares
from loom_explorer.errors import LoomError

if TYPE_CHECKING:
    from loom_explorer.accuracy.calibration_row import CalibrationRow

CALIBRATION_FILE: Path = Path(__file__).resolve().parent.parent / "data" / "capture_calibration.csv"
COLUMNS = ("family", "level", "key", "term", "scale", "rows")
LEVELS = ("family", "kernel", "arch")

GROUP_NAMES = ("launch", "fill", "compute", "data_movement", "write_back", "other")
# a latency term's group; a name not listed (a family's own, e.g. the matmul ``epilogue``) is ``other``
GROUPS: dict[str, str] = {
    "launch": "launch",
    "fill": "fill",
    "compute": "compute",
    "data_movement": "data_movement",
    "write_back": "write_back",
    # attention's terms
    "q_load": "data_movement",
    "kv_streaming": "data_movement",
    "qk_matmul": "compute",
    "pv_matmul": "compute",
    "softmax": "compute",
    "normalize": "compute",
}

MIN_ROWS = 20  # a family with fewer rows is not fitted
# the ridge on each level's log scales: the family's keeps a group no row exercises at scale 1; a kernel's
# or architecture's own adjustment needs rows to earn it
# (chosen among kernel 1, 4, 16, 64 x arch 4, 64 by leave-one-capture-out on the fit captures)
LAMBDA = {"family": 0.5, "kernel": 1.0, "arch": 4.0}
ALL = "all"  # the group name of a kernel's or an architecture's factor: it scales every group of the op
FACTORS = ("kernel", "arch")  # the levels that may have their own factor, beside the family's per group
# the shipped fit's: none. A kernel's and an architecture's own factors (``accuracy --by family --factors
# kernel,arch``) did no better out of sample: a fold often leaves the one capture that speaks for a chip or kernel
SHIPPED_FACTORS: tuple[str, ...] = ()


class CalibrationFileError(LoomError, ValueError):
    """``capture_calibration.csv`` cannot be read; the message names the line and column."""


def group_of(term: str) -> str:
    return GROUPS.get(term, "other")


def grouped(terms: Iterable[tuple[str, int]]) -> Vector:
    """A row's cycles per group, in ``GROUP_NAMES`` order."""
    out = np.zeros(len(GROUP_NAMES))
    for name, cycles in terms:
        out[GROUP_NAMES.index(group_of(name))] += cycles
    return out


@dataclass(frozen=True, slots=True)
class OpKey:
    """What an op's scales depend on: its family, kernel and chip architecture."""

    family: str
    kernel: str
    arch: str

    def keys(self) -> tuple[tuple[str, str], ...]:
        """The ``(level, key)`` of each parameter block the op uses, in ``LEVELS`` order."""
        return (("family", ""), ("kernel", self.kernel), ("arch", self.arch))

    @staticmethod
    def of(row: CalibrationRow) -> OpKey:
        return OpKey(row.family, row.kernel, row.arch)


@dataclass(frozen=True, slots=True)
class TermScales:
    """Fitted log scales: ``(family, level, key, group) -> log scale`` (``level`` one of ``LEVELS``; ``key`` the
    kernel or architecture, "" for the family's own; ``group`` one of ``GROUP_NAMES`` for the family's own,
    ``ALL`` for a kernel's and an architecture's), and the rows each family was fitted on."""

    log_scales: dict[tuple[str, str, str, str], float] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)

    def scales(self, op: OpKey) -> Vector:
        """``s_g`` of an op (module docstring), in ``GROUP_NAMES`` order; all 1 for a family never fitted."""
        get = self.log_scales.get
        own = sum(get((op.family, *k, ALL), 0.0) for k in op.keys()[1:])
        logs = np.array([get((op.family, "family", "", g), 0.0) + own for g in GROUP_NAMES], dtype=np.float64)
        out: Vector = np.exp(logs)
        return out

    def cycles(self, op: OpKey, terms: Iterable[tuple[str, int]]) -> float:
        """The calibrated cycles of an op whose uncalibrated latency terms are ``terms``."""
        return float(self.scales(op) @ grouped(terms))

    def predict_ns(self, row: CalibrationRow) -> float:
        return self.cycles(OpKey.of(row), row.terms_cycles) / row.clock_ghz

    def fitted(self, family: str) -> bool:
        return family in self.rows

    # --------------------------------------------------------------------------------------- the file

    def to_csv(self) -> str:
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(COLUMNS)
        for (family, level, key, group), log_scale in sorted(self.log_scales.items()):
            if level != "family" and abs(log_scale) < 5e-4:
                continue  # an adjustment of less than 0.05%: the family's scale speaks for it
            w.writerow([family, level, key, group, f"{math.exp(log_scale):.4f}", self.rows[family]])
        return out.getvalue()

    @staticmethod
    def parse(text: str, source: str) -> TermScales:
        reader = csv.DictReader(io.StringIO(text))
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise CalibrationFileError(f"{source}: header must be {','.join(COLUMNS)}")
        log_scales: dict[tuple[str, str, str, str], float] = {}
        rows: dict[str, int] = {}
        for line, cells in enumerate(reader, start=2):
            try:
                if cells["level"] not in LEVELS:
                    raise ValueError(f"level {cells['level']!r} is not one of {', '.join(LEVELS)}")
                wanted = GROUP_NAMES if cells["level"] == "family" else (ALL,)
                if cells["term"] not in wanted:
                    raise ValueError(f"term {cells['term']!r} of level {cells['level']} is not {' or '.join(wanted)}")
                scale = float(cells["scale"])
                if not (math.isfinite(scale) and scale > 0):
                    raise ValueError(f"scale {cells['scale']!r} is not a positive number")
                log_scales[(cells["family"], cells["level"], cells["key"], cells["term"])] = math.log(scale)
                rows[cells["family"]] = int(cells["rows"])
            except (TypeError, ValueError) as e:
                raise CalibrationFileError(f"{source} line {line}: {e}") from None
        return TermScales(log_scales, rows)


UNCALIBRATED = TermScales()


@cache
def shipped_scales() -> TermScales:
    """The shipped calibration (``data/capture_calibration.csv``)."""
    return TermScales.parse(CALIBRATION_FILE.read_text(encoding="utf-8"), str(CALIBRATION_FILE))


# ------------------------------------------------------------------------------------------- fitting


def _fit_family(
    family: str, rows: Sequence[CalibrationRow], factors: tuple[str, ...]
) -> dict[tuple[str, str, str, str], float]:
    """The log scales of one family fitted on ``rows`` (module docstring): ``theta`` (one per group the rows
    exercise), then one ``delta`` per kernel and one ``eps`` per architecture where ``factors`` names them."""
    x_g = np.array([grouped(r.terms_cycles) / r.clock_ghz for r in rows])  # ns per group at scale 1
    groups = [g for g in range(len(GROUP_NAMES)) if x_g[:, g].sum() > 0]
    x_g = x_g[:, groups]
    measured = np.array([r.measured_ns for r in rows])
    keys = [[k for k in OpKey.of(r).keys()[1:] if k[0] in factors] for r in rows]
    shared = sorted({k for ks in keys for k in ks})  # (level, key) of one factor each
    index = {k: i for i, k in enumerate(shared)}
    use = np.zeros((len(rows), len(shared)))  # the shared factors each row takes
    for i, ks in enumerate(keys):
        use[i, [index[k] for k in ks]] = 1.0
    n = len(groups)

    def residuals(p: Vector) -> tuple[Vector, Matrix]:
        per_row = np.exp(p[:n] + (use @ p[n:])[:, None]) * x_g  # ns of each group, scaled
        t = per_row.sum(axis=1)
        share = per_row / t[:, None]
        # d r_i / d theta_g = share_{i,g}; d r_i / d delta_k = use_{i,k} (the shares sum to 1)
        return np.log(t / measured), np.hstack([share, use])

    lam = np.array([LAMBDA["family"]] * n + [LAMBDA[level] for level, _ in shared])
    p = robust_least_squares(residuals, np.zeros(n + len(shared)), np.diag(np.sqrt(lam))).x
    out = {(family, "family", "", GROUP_NAMES[g]): float(p[i]) for i, g in enumerate(groups)}
    out.update({(family, level, key, ALL): float(p[n + i]) for i, (level, key) in enumerate(shared)})
    return out


def fit_term_scales(
    rows: Sequence[CalibrationRow], min_rows: int = MIN_ROWS, factors: tuple[str, ...] = SHIPPED_FACTORS
) -> TermScales:
    """The scales of every family with at least ``min_rows`` of ``rows`` (module docstring), with the kernel's
    and architecture's own factors that ``factors`` names (``FACTORS``)."""
    unknown = set(factors) - set(FACTORS)
    if unknown:
        raise ValueError(f"factors {sorted(unknown)}: expected some of {', '.join(FACTORS)}")
    log_scales: dict[tuple[str, str, str, str], float] = {}
    counts: dict[str, int] = {}
    for family in sorted({r.family for r in rows}):
        mine = [r for r in rows if r.family == family]
        if len(mine) >= min_rows:
            log_scales.update(_fit_family(family, mine, factors))
            counts[family] = len(mine)
    return TermScales(log_scales, counts)


def only(scales: TermScales, families: Iterable[str]) -> TermScales:
    """``scales`` with the families not in ``families`` uncalibrated."""
    keep = set(families)
    return TermScales(
        {k: v for k, v in scales.log_scales.items() if k[0] in keep},
        {f: n for f, n in scales.rows.items() if f in keep},
    )


Fit = Callable[[Sequence["CalibrationRow"]], TermScales]


def p90(errors: list[float]) -> float:
    """The 90th percentile of ``errors`` (inclusive: within their range)."""
    return statistics.quantiles(errors, n=10, method="inclusive")[-1] if len(errors) > 1 else errors[0]


def gated_fit(rows: Sequence[CalibrationRow], fit: Fit = fit_term_scales) -> TermScales:
    """``fit(rows)``, keeping a family's scales only where they predict captures they were not fitted on better
    than the uncalibrated model: each capture of ``rows`` predicted from ``fit`` of the others, a family kept
    when, over its rows, the median |error| is lower calibrated than uncalibrated, the 90th percentile no
    higher, and no capture's own median |error| higher (the gate: a better typical row is bought neither with
    a worse tail nor with a worse capture, as a fit dominated by the captures with the most rows would;
    ``capture_cv`` runs it inside each fold, so that no held-out row decides it)."""
    captures = sorted({r.capture for r in rows})
    errors: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    for capture in captures:
        inner = fit([r for r in rows if r.capture != capture])
        for r in rows:
            if r.capture == capture:
                model, uncalibrated = errors.setdefault(r.family, {}).setdefault(capture, ([], []))
                model.append(abs(inner.predict_ns(r) / r.measured_ns - 1))
                uncalibrated.append(abs(r.uncalibrated_ns / r.measured_ns - 1))
    return only(fit(rows), [f for f, by_capture in errors.items() if _better(by_capture)])


def _better(by_capture: dict[str, tuple[list[float], list[float]]]) -> bool:
    """The gate of ``gated_fit`` on one family's held-out |errors| (calibrated, uncalibrated) by capture."""
    model = [e for m, _ in by_capture.values() for e in m]
    uncalibrated = [e for _, u in by_capture.values() for e in u]
    no_capture_worse = all(statistics.median(m) <= statistics.median(u) for m, u in by_capture.values())
    return (
        statistics.median(model) < statistics.median(uncalibrated)
        and p90(model) <= p90(uncalibrated)
        and no_capture_worse
    )
