"""How well the collective model predicts the published collective times, judged leave one topology out:
``loom-explorer accuracy --collectives``.

The rows (``all_rows``) are every row of ``collective_times.csv`` on its shipped mesh (``collective_rows``),
the measured rows of Tenstorrent's CCL bandwidth benchmark (``ccl_benchmark``: a Wormhole LoudBox, on the
T3000, and a Blackhole Galaxy), and every collective row of the shipped captures that have any, each on the
mesh the capture is told to have run on (``capture_collective.infer_mesh``), one row per device. A row's
**topology** is its mesh.

For each topology ``T``: the constants are fitted on the measured rows of every other topology
(``collective_calibration.fit_constants``) and ``T``'s rows are predicted with them. A measured row's error
is ``|predicted / measured - 1|``; an upper bound (a perf target) is never an error: it counts as held when
``predicted <= bound``. Beside the calibrated model, per topology:

* **first principles**: the family's latency at the mesh files' rates, no constant fitted (``eta = 1``,
  ``c = 0``);
* **naive**: a device's received bytes over its links' nominal line rate, ``(N - 1) * S / (L *
  link_bytes_per_cycle)`` cycles (no framing, no fabric efficiency, no fixed cost, no topology).

The pooled line takes every held-out row alike. The acceptance target is a median |error| <= 15% on each
topology left out of the fit.
"""

from __future__ import annotations

import gzip
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache

from loom_explorer.accuracy.capture_collective import IngestedCollective, MeshChoice, infer_mesh
from loom_explorer.accuracy.ccl_benchmark import RUNS, benchmark_rows, run_spread
from loom_explorer.accuracy.collective_calibration import (
    UNCALIBRATED,
    CollectiveConstants,
    fit_constants,
    shipped_constants,
)
from loom_explorer.accuracy.collective_reading import collective_op
from loom_explorer.accuracy.collective_rows import CollectiveRow, SkippedCollective, published_rows
from loom_explorer.accuracy.ingest import IngestReport, read_ops_perf
from loom_explorer.data import CAPTURES, capture_path
from loom_explorer.hardware.mesh_load import mesh_chip
from loom_explorer.model.collective import CollectiveError

TARGET_MEDIAN = 0.15
FITTED_ON = (
    "measured rows of data/published/collective_times.csv, of the CCL bandwidth benchmark "
    "(data/published/ccl_bandwidth_wormhole.csv, ccl_bandwidth_blackhole.csv) and of the shipped captures' collectives"
)
_WORDS = (b"allgather", b"reducescatter", b"allreduce")


@dataclass(frozen=True, slots=True)
class AllRows:
    rows: tuple[CollectiveRow, ...]
    skipped: tuple[SkippedCollective, ...]


def report_rows(report: IngestReport, choice: MeshChoice) -> tuple[list[CollectiveRow], list[SkippedCollective]]:
    """A report's collective rows on the mesh ``choice`` gives; each skipped with the reason when none, or
    when its ring does not fit the mesh."""
    rows: list[CollectiveRow] = []
    skipped: list[SkippedCollective] = []
    for c in report.collectives:
        case = case_name(report.file.name, c)
        if choice.mesh is None:
            skipped.append(SkippedCollective(case, f"mesh not told: {choice.reason}"))
            continue
        try:
            op = collective_op(c.reading, choice.mesh, mesh_chip(choice.mesh))
        except CollectiveError as exc:
            skipped.append(SkippedCollective(case, str(exc)))
            continue
        rows.append(
            CollectiveRow(
                case=case,
                topology=choice.mesh.name,
                mesh=choice.mesh,
                op=op,
                time_us=c.device_kernel_ns / 1e3,
                upper_bound=False,
                source=f"{report.file.name} row {c.row}",
                device_id=c.device_id,
            )
        )
    return rows, skipped


def case_name(file: str, c: IngestedCollective) -> str:
    device = "" if c.device_id is None else f" device {c.device_id}"
    return f"{file.split('.')[0]} row {c.row}{device}"


def capture_choice(report: IngestReport, given: str | None = None) -> MeshChoice:
    return infer_mesh(report.device_archs, report.device_ids, [c.reading for c in report.collectives], given)


def _has_collectives(name: str) -> bool:
    return any(w in gzip.decompress(capture_path(name).read_bytes()).lower() for w in _WORDS)


@cache
def all_rows() -> AllRows:
    """Every published collective row and every shipped capture's collective rows (module docstring)."""
    rows, skipped = published_rows()
    bench, left_out = benchmark_rows()
    out, gone = [*rows, *bench], [*skipped, *left_out]
    for name in CAPTURES:
        if not _has_collectives(name):
            continue
        report = read_ops_perf(capture_path(name))
        more, left = report_rows(report, capture_choice(report))
        out += more
        gone += left
    return AllRows(tuple(out), tuple(gone))


def naive_us(row: CollectiveRow) -> float:
    """The naive baseline (module docstring)."""
    op, eth = row.op, row.mesh.ethernet
    cycles = (op.ring_size - 1) * op.slice_bytes / (op.num_links * eth.link_bytes_per_cycle)
    return cycles / mesh_chip(row.mesh).clock_ghz / 1e3


@dataclass(frozen=True, slots=True)
class Errors:
    """|predicted / measured - 1| of some rows, and how many upper bounds held of how many."""

    errors: tuple[float, ...]
    bounds_held: int = 0
    bounds: int = 0

    @property
    def median(self) -> float | None:
        return statistics.median(self.errors) if self.errors else None

    @property
    def p90(self) -> float | None:
        if not self.errors:
            return None
        if len(self.errors) == 1:
            return self.errors[0]
        return statistics.quantiles(self.errors, n=10, method="inclusive")[-1]

    def as_json(self) -> dict[str, object]:
        return {
            "rows": len(self.errors),
            "median_abs_error": self.median,
            "p90_abs_error": self.p90,
            "bounds_held": self.bounds_held,
            "bounds": self.bounds,
        }


def score(rows: Sequence[CollectiveRow], predict_us: list[float]) -> Errors:
    errors = tuple(abs(p / r.time_us - 1) for r, p in zip(rows, predict_us, strict=True) if not r.upper_bound)
    bounds = [p <= r.time_us for r, p in zip(rows, predict_us, strict=True) if r.upper_bound]
    return Errors(errors, sum(bounds), len(bounds))


@dataclass(frozen=True, slots=True)
class HeldOut:
    """One topology left out: the constants fitted without it, and its rows' errors by model."""

    topology: str
    constants: CollectiveConstants
    calibrated: Errors
    first_principles: Errors
    naive: Errors
    predicted_us: tuple[float, ...]  # the calibrated prediction of each of its rows, in ``rows`` order
    rows: tuple[CollectiveRow, ...]
    first_principles_us: tuple[float, ...] = ()  # the first-principles prediction of each row, likewise


@dataclass(frozen=True, slots=True)
class CollectiveAccuracy:
    held_out: tuple[HeldOut, ...]
    pooled: HeldOut  # every held-out row alike (its constants: the shipped ones)
    shipped: CollectiveConstants
    skipped: tuple[SkippedCollective, ...]

    @property
    def met(self) -> int:
        """Topologies whose held-out median |error| is within the target."""
        return sum(1 for h in self.held_out if h.calibrated.median is not None and h.calibrated.median <= TARGET_MEDIAN)


def _held_out(
    topology: str,
    constants: CollectiveConstants,
    rows: Sequence[CollectiveRow],
    predicted: Sequence[float],
    first: Sequence[float],
) -> HeldOut:
    """``rows`` scored with their calibrated (``predicted``), first-principles and naive predictions."""
    return HeldOut(
        topology,
        constants,
        score(rows, list(predicted)),
        score(rows, list(first)),
        score(rows, [naive_us(r) for r in rows]),
        tuple(predicted),
        tuple(rows),
        tuple(first),
    )


def _fold(topology: str, rows: Sequence[CollectiveRow], constants: CollectiveConstants) -> HeldOut:
    predicted = [constants.predict_us(r.op, r.mesh) for r in rows]
    return _held_out(topology, constants, rows, predicted, [UNCALIBRATED.predict_us(r.op, r.mesh) for r in rows])


def leave_one_topology_out(rows: Sequence[CollectiveRow]) -> tuple[HeldOut, ...]:
    """Each topology predicted by the constants fitted on the others' measured rows (module docstring)."""
    out = []
    for topology in sorted({r.topology for r in rows}):
        train = [r for r in rows if r.topology != topology]
        mine = [r for r in rows if r.topology == topology]
        out.append(_fold(topology, mine, fit_constants(train)))
    return tuple(out)


def collective_accuracy(data: AllRows | None = None) -> CollectiveAccuracy:
    data = data or all_rows()
    held = leave_one_topology_out(data.rows)
    pooled = _held_out(
        "all (pooled)",
        shipped_constants(),
        [r for h in held for r in h.rows],
        [p for h in held for p in h.predicted_us],
        [p for h in held for p in h.first_principles_us],
    )
    return CollectiveAccuracy(held, pooled, shipped_constants(), data.skipped)


@dataclass(frozen=True, slots=True)
class OpGroup:
    """The first-principles errors of one kind of collective on one topology: ``kind`` on a ``fabric`` line or
    ring of ``ring_size`` chips; ``signed`` holds ``predicted / measured - 1`` of each measured row (negative:
    predicted too fast), ``largest`` that of the row with the largest slice (where fixed costs weigh least)."""

    topology: str
    kind: str
    fabric: str
    ring_size: int
    signed: tuple[float, ...]
    largest: float

    @property
    def median_abs(self) -> float:
        return statistics.median(abs(e) for e in self.signed)

    @property
    def median_signed(self) -> float:
        return statistics.median(self.signed)


def by_op(a: CollectiveAccuracy) -> tuple[OpGroup, ...]:
    """The held-out measured rows grouped by topology, kind, fabric topology and ring size."""
    groups: dict[tuple[str, str, str, int], list[tuple[CollectiveRow, float]]] = {}
    for h in a.held_out:
        for r, first in zip(h.rows, h.first_principles_us, strict=True):
            if not r.upper_bound:
                key = (h.topology, r.op.kind.value, r.op.topology.value, r.op.ring_size)
                groups.setdefault(key, []).append((r, first / r.time_us - 1))
    out = []
    for key, pairs in sorted(groups.items()):
        largest = max(pairs, key=lambda pair: pair[0].op.slice_bytes)[1]
        out.append(OpGroup(*key, tuple(e for _, e in pairs), largest))
    return tuple(out)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _cells(e: Errors) -> str:
    return f"{_pct(e.median):>7} {_pct(e.p90):>7}"


def accuracy_lines(a: CollectiveAccuracy) -> list[str]:
    """The table ``accuracy --collectives`` prints."""
    lines = [
        "collective model, leave one topology out: fitted on the other topologies' measured rows, "
        "|predicted/measured - 1| on the held-out one",
        f"{'held out':<14} {'measured':>8} {'bounds held':>11}   {'calibrated':>15}   "
        f"{'first principles':>16}   {'naive':>15}   fold's eta, extra fixed",
        f"{'':<14} {'rows':>8} {'(pred<=bound)':>11}   {'median     p90':>15}   {'median     p90':>16}   "
        f"{'median     p90':>15}",
    ]
    for h in (*a.held_out, a.pooled):
        c = h.constants
        consts = f"{c.link_efficiency:.3f}, {c.extra_fixed_cycles:,.0f} cycles" if h is not a.pooled else ""
        lines.append(
            f"{h.topology:<14} {len(h.calibrated.errors):>8} {h.calibrated.bounds_held:>5} of {h.calibrated.bounds:<4}"
            f"   {_cells(h.calibrated)}   {_cells(h.first_principles):>16}   {_cells(h.naive)}   {consts}"
        )
    s = a.shipped
    kept = (
        "fitted on"
        if (s.link_efficiency, s.extra_fixed_cycles) != (1.0, 0.0)
        else "the fit not kept (worse held out) on"
    )
    lines.append(
        f"shipped constants (data/collective_calibration.csv): eta {s.link_efficiency:.3f}, extra fixed "
        f"{s.extra_fixed_cycles:,.0f} cycles, {kept} {s.rows} measured rows of {', '.join(s.topologies)}"
    )
    first = sum(
        1 for h in a.held_out if h.first_principles.median is not None and h.first_principles.median <= TARGET_MEDIAN
    )
    lines.append(
        f"target: median <= {100 * TARGET_MEDIAN:.0f}% on a topology left out of the fit: calibrated met on {a.met} "
        f"of {len(a.held_out)} topologies; first principles (nothing fitted) on {first}"
    )
    for run in RUNS:
        cells, median, largest = run_spread(run)
        if cells:
            lines.append(
                f"CCL bandwidth benchmark on {run.mesh}: two runs time {cells} common cells within {_pct(median)} of "
                f"each other at the median, {_pct(largest)} at most"
            )
    lines.append(
        "first principles by op: rows, median |error|, median and largest-slice predicted/measured - 1 "
        "(negative: predicted too fast)"
    )
    for g in by_op(a):
        lines.append(
            f"  {g.topology:<8} {g.kind:<15} {g.fabric:<7} {g.ring_size:>3} chips {len(g.signed):>4} rows "
            f"{_pct(g.median_abs):>7} {100 * g.median_signed:+7.1f}% {100 * g.largest:+7.1f}%"
        )
    for s_row in a.skipped:
        lines.append(f"skipped {s_row.case}: {s_row.reason}")
    return lines


def accuracy_json(a: CollectiveAccuracy) -> dict[str, object]:
    def held(h: HeldOut) -> dict[str, object]:
        return {
            "topology": h.topology,
            "link_efficiency": h.constants.link_efficiency,
            "extra_fixed_cycles": h.constants.extra_fixed_cycles,
            "calibrated": h.calibrated.as_json(),
            "first_principles": h.first_principles.as_json(),
            "naive": h.naive.as_json(),
        }

    return {
        "held_out": [held(h) for h in a.held_out],
        "pooled": held(a.pooled),
        "target_median": TARGET_MEDIAN,
        "met": a.met,
        "by_op": [
            {
                "topology": g.topology,
                "kind": g.kind,
                "fabric": g.fabric,
                "ring_size": g.ring_size,
                "rows": len(g.signed),
                "median_abs_error": g.median_abs,
                "median_signed_error": g.median_signed,
                "largest_slice_signed_error": g.largest,
            }
            for g in by_op(a)
        ],
        "skipped": [{"case": s.case, "reason": s.reason} for s in a.skipped],
    }


def gated_constants(rows: Sequence[CollectiveRow]) -> tuple[CollectiveConstants, str]:
    """The constants to ship and what the file says of them: the fit of every measured row of ``rows`` when,
    leaving one topology out, it beats the first-principles model (a lower pooled median |error|, a 90th
    percentile no higher); else ``eta = 1``, ``c = 0`` (with the rows it was tried on), saying why."""
    held = leave_one_topology_out(rows)
    calibrated = Errors(tuple(e for h in held for e in h.calibrated.errors))
    first = Errors(tuple(e for h in held for e in h.first_principles.errors))
    fitted = fit_constants(rows)
    assert calibrated.median is not None and first.median is not None  # rows has measured rows
    if calibrated.median < first.median and (calibrated.p90 or 0.0) <= (first.p90 or 0.0):
        return fitted, FITTED_ON
    why = (
        f"not kept: the fit (eta {fitted.link_efficiency:.3f}; extra fixed {fitted.extra_fixed_cycles:.0f} cycles) "
        f"predicts held-out topologies worse (median {100 * calibrated.median:.1f}% vs "
        f"{100 * first.median:.1f}% first principles)"
    )
    return replace(UNCALIBRATED, rows=fitted.rows, topologies=fitted.topologies), why


def main() -> None:
    """Print the shipped constants file (``gated_constants`` of ``all_rows``)."""
    constants, fitted_on = gated_constants(all_rows().rows)
    print(constants.to_csv(fitted_on), end="")


if __name__ == "__main__":
    main()
