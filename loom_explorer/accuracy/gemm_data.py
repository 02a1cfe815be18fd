"""The model against published matmul measurements (``../shared/data/gemm_flops_calibration.csv`` and the
manual configs of ``gemm_manual_configs.csv``): ``loom-explorer accuracy``.

Every measured row is predicted with the exact config it ran: its manual config (joined on card, grid,
dtype, M, K, N) with its memory placement, or, for out-of-box rows, the config ttnn picks itself
(``ttnn_default_config``), on the row's card (n150 -> wormhole_n150, p150 -> blackhole_p150a) restricted
to the row's grid. Only ``use_trace=True`` rows are used: without trace the time is host dispatch
(``gemm_benchmark_method.md``).

Summary statistics: count, median and 90th-percentile absolute error (%), Spearman rank correlation;
overall, per card and per regime (``small``: ideal compute under 20 us; otherwise ``compute-bound`` when
the ideal compute time exceeds the DRAM bytes at peak bandwidth, else ``dram-bound``). Per pair of a
hand-tuned row and the out-of-box row of the same shape, dtype and fidelity: measured and predicted
speedup.

The baseline is a three-constant roofline, ``max(ideal_compute / e_c, dram_bytes / (bw * e_d)) + t0``,
fitted on the training rows (grid search over ``e_c``, ``e_d``; ``t0`` in closed form, least squares of
the relative error) and scored on the held-out rows beside the model. Rows are held out by shape:
``(7*Mt + 3*Kt + Nt) % 3 == 0`` (tiles) -> held out, about a third of the shapes.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from loom_explorer.accuracy.ttnn_configs import (
    ConfigError,
    TtnnMatmulConfig,
    evaluate_config,
    placements,
    ttnn_default_config,
)
from loom_explorer.deploy.store import Measurement
from loom_explorer.export.schedule_json import hardware_sha256
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.grid import restrict_grid
from loom_explorer.hardware.schema import (
    HardwareSpec,
    parse_data_format,
    parse_fidelity,
)
from loom_explorer.problem import Problem, make_problem
from loom_explorer.program import load_program

CARDS = {"n150": "wormhole_n150", "p150": "blackhole_p150a"}
SMALL_NS = 20_000
REQUIRED = ("card", "config_kind", "M", "K", "N", "use_trace", "grid_x", "grid_y", "in0_storage", "out_storage",
            "dtype", "math_fidelity", "time_ns")


CONFIG_REQUIRED = ("card", "grid_x", "grid_y", "dtype", "M", "K", "N", "program_config", "transpose_mcast",
                   "in0_block_w", "per_core_M", "per_core_N", "out_block_h", "out_block_w", "out_subblock_h",
                   "out_subblock_w", "in0_sharded", "out_sharded")


class DataError(ValueError):
    """A measurement file the report cannot use; the message names the file, row and column."""


def held_out(shape: tuple[int, int, int]) -> bool:
    """Rows of about a third of the shapes are kept out of every fit (module docstring)."""
    m, k, n = (x // 32 for x in shape)
    return (7 * m + 3 * k + n) % 3 == 0


@dataclass(frozen=True, slots=True)
class Row:
    source: dict[str, str]
    card: str
    kind: str
    shape: tuple[int, int, int]
    grid: tuple[int, int]
    dtype: str
    fidelity: str
    measured_ns: float
    predicted_ns: float | None
    ideal_ns: float
    dram_ns: float
    candidate: str
    hardware: str = ""
    hardware_sha256: str = ""
    params: dict[str, int] = field(default_factory=dict)
    breakdown: dict[str, int] = field(default_factory=dict)
    predicted_cycles: int | None = None
    note: str = ""

    @property
    def regime(self) -> str:
        if self.ideal_ns < SMALL_NS:
            return "small"
        return "compute-bound" if self.ideal_ns >= self.dram_ns else "dram-bound"

    @property
    def error_pct(self) -> float | None:
        if self.predicted_ns is None:
            return None
        return 100.0 * (self.predicted_ns - self.measured_ns) / self.measured_ns

    @property
    def held_out(self) -> bool:
        return held_out(self.shape)


@dataclass(frozen=True, slots=True)
class Summary:
    n: int
    median_abs_err_pct: float | None
    p90_abs_err_pct: float | None
    spearman: float | None

    def to_json(self) -> dict[str, object]:
        return {"n": self.n, "median_abs_err_pct": _round(self.median_abs_err_pct),
                "p90_abs_err_pct": _round(self.p90_abs_err_pct), "spearman": _round(self.spearman, 4)}


@dataclass(frozen=True, slots=True)
class Baseline:
    compute_eff: float
    dram_eff: float
    overhead_ns: float

    def predict(self, row: Row) -> float:
        return max(row.ideal_ns / self.compute_eff, row.dram_ns / self.dram_eff) + self.overhead_ns


@dataclass(frozen=True, slots=True)
class Report:
    rows: list[Row]
    skipped: list[str] = field(default_factory=list)


def _round(x: float | None, digits: int = 2) -> float | None:
    return None if x is None else round(x, digits)


def _read(path: str | Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"file {p} does not exist")
    with p.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        rows = list(reader)
    if missing:
        raise DataError(f"{p}: missing columns {', '.join(missing)}")
    return rows


def _config_key(r: dict[str, str]) -> tuple[str, ...]:
    return (r["card"], r["grid_x"], r["grid_y"], r["dtype"].upper(), r["M"], r["K"], r["N"])


def _manual_config(c: dict[str, str]) -> TtnnMatmulConfig:
    memory = {"in0": "L1_BLOCK_SHARDED" if c["in0_sharded"] == "True" else "DRAM",
              "out": "L1_BLOCK_SHARDED" if c["out_sharded"] == "True" else "DRAM"}
    return TtnnMatmulConfig(
        program_config=c["program_config"], compute_with_storage_grid_size=(int(c["grid_x"]), int(c["grid_y"])),
        in0_block_w=int(c["in0_block_w"]), per_core_M=int(c["per_core_M"]), per_core_N=int(c["per_core_N"]),
        out_block_h=int(c["out_block_h"]), out_block_w=int(c["out_block_w"]),
        out_subblock_h=int(c["out_subblock_h"]), out_subblock_w=int(c["out_subblock_w"]),
        transpose_mcast=c["transpose_mcast"] == "True", memory=memory)


@dataclass(frozen=True, slots=True)
class Case:
    """One measured row, ready to predict: its problem and config (None: ttnn's default)."""

    source: dict[str, str]
    where: str
    problem: Problem
    config: TtnnMatmulConfig | None
    grid: tuple[int, int]

    @property
    def card(self) -> str:
        return self.source["card"]

    @property
    def held_out(self) -> bool:
        return held_out(tuple(int(self.source[d]) for d in ("M", "K", "N")))  # type: ignore[arg-type]


def load_cases(data: str | Path, configs: str | Path | None) -> tuple[list[Case], list[str]]:
    """The ``use_trace=True`` rows of ``data`` with their configs, and the rows that cannot be used."""
    measured = _read(data, REQUIRED)
    manual = {_config_key(c): c for c in _read(configs, CONFIG_REQUIRED)} if configs else {}
    program = load_program("gemm")
    cases: list[Case] = []
    skipped: list[str] = []
    for number, r in enumerate(measured, 2):
        if r["use_trace"] != "True":
            continue
        where = f"{data}:{number}"
        if r["card"] not in CARDS:
            raise DataError(f"{where}: card {r['card']!r}: expected one of {', '.join(CARDS)}")
        cfg = None
        if r["config_kind"] == "manual":
            c = manual.get(_config_key(r))
            if c is None:
                skipped.append(f"{where}: no manual config for {_config_key(r)} in {configs}")
                continue
            cfg = _manual_config(c)
        try:
            problem = make_problem(program, f"M={r['M']},K={r['K']},N={r['N']}", parse_data_format(r["dtype"]),
                                   parse_fidelity(r["math_fidelity"]), placements=placements(cfg) if cfg else {})
        except ValueError as exc:
            raise DataError(f"{where}: {exc}") from None
        cases.append(Case(r, where, problem, cfg, (int(r["grid_x"]), int(r["grid_y"]))))
    return cases, skipped


def predict_cases(cases: list[Case], hardware: dict[str, HardwareSpec] | None = None) -> Report:
    """Predict every case on its card's hardware (``hardware``: card -> spec; default the shipped files),
    restricted to the case's grid."""
    base = {card: (hardware or {}).get(card) or load_hardware(name) for card, name in CARDS.items()}
    restricted: dict[tuple[str, int, int], HardwareSpec] = {}
    rows: list[Row] = []
    skipped: list[str] = []
    for case in cases:
        key = (case.card, *case.grid)
        if key not in restricted:
            restricted[key] = restrict_grid(base[case.card], *case.grid)
        hw, problem = restricted[key], case.problem
        try:
            evaluated = evaluate_config(hw, problem, case.config or ttnn_default_config(hw, problem))
        except ConfigError as exc:
            skipped.append(f"{case.where}: {exc}")
            continue
        sol = evaluated.result.solution
        dtype = problem.data_format("out")
        dram_bytes = sum(hw.tile_bytes[dtype] * problem.tiles(a) * problem.tiles(b)
                         for a, b in (("M", "K"), ("K", "N"), ("M", "N")))
        r = case.source
        rows.append(Row(
            source=r, card=case.card, kind=r["config_kind"], shape=(int(r["M"]), int(r["K"]), int(r["N"])),
            grid=case.grid, dtype=dtype.value, fidelity=problem.fidelity.value, measured_ns=float(r["time_ns"]),
            predicted_ns=hw.cycles_to_us(sol.latency_cycles) * 1e3 if sol else None,
            ideal_ns=hw.cycles_to_us(evaluated.schedule.ideal_cycles) * 1e3,
            dram_ns=dram_bytes / (hw.dram.channels * hw.dram.channel_peak_bytes_per_cycle) / hw.clock_ghz,
            candidate=evaluated.result.candidate_name, hardware=hw.name, hardware_sha256=hardware_sha256(hw),
            params=evaluated.values, breakdown=dict(sol.breakdown) if sol else {},
            predicted_cycles=sol.latency_cycles if sol else None,
            note="" if sol else (evaluated.result.conflict.message if evaluated.result.conflict else "")))
    return Report(rows, skipped)


def predict_rows(data: str | Path, configs: str | Path | None,
                 hardware: dict[str, HardwareSpec] | None = None) -> Report:
    """Every ``use_trace=True`` row of ``data`` predicted with its own config (module docstring)."""
    cases, skipped = load_cases(data, configs)
    report = predict_cases(cases, hardware)
    return Report(report.rows, skipped + report.skipped)


def _spearman(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 3:
        return None

    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=lambda i: v[i])
        out = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for t in range(i, j + 1):
                out[order[t]] = (i + j) / 2
            i = j + 1
        return out

    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    var = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return cov / var if var else None


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]


def summarise(pairs: list[tuple[float, float]]) -> Summary:
    """(predicted, measured) pairs -> error summary."""
    if not pairs:
        return Summary(0, None, None, None)
    errors = [abs(100.0 * (p - m) / m) for p, m in pairs]
    return Summary(len(pairs), statistics.median(errors), _p90(errors),
                   _spearman([p for p, _ in pairs], [m for _, m in pairs]))


def fit_baseline(rows: list[Row]) -> Baseline:
    """Three-constant roofline fitted on ``rows`` (module docstring)."""
    best: tuple[float, Baseline] | None = None
    for ec in [x / 100 for x in range(20, 101, 2)]:
        for ed in [x / 100 for x in range(10, 101, 3)]:
            base = [max(r.ideal_ns / ec, r.dram_ns / ed) for r in rows]
            ys = [r.measured_ns for r in rows]
            num = sum((y - b) / y ** 2 for b, y in zip(base, ys))
            den = sum(1 / y ** 2 for y in ys)
            t0 = max(0.0, num / den)
            loss = sum(((b + t0 - y) / y) ** 2 for b, y in zip(base, ys))
            if best is None or loss < best[0]:
                best = (loss, Baseline(ec, ed, t0))
    assert best is not None
    return best[1]


def speedup_pairs(rows: list[Row]) -> list[tuple[Row, Row]]:
    """(hand-tuned, out-of-box) rows of the same card, shape, dtype and fidelity."""
    oob = {(r.card, r.shape, r.dtype, r.fidelity): r for r in rows if r.kind == "out_of_box"}
    return [(r, oob[(r.card, r.shape, r.dtype, r.fidelity)]) for r in rows
            if r.kind == "manual" and (r.card, r.shape, r.dtype, r.fidelity) in oob]


def accuracy_json(report: Report) -> dict[str, object]:
    """The ``accuracy --json`` contract: rows, summaries (overall, per card, per regime), the held-out
    comparison with the fitted roofline baseline per card, and the hand-tuned-over-automatic speedups."""
    ok = [r for r in report.rows if r.predicted_ns is not None]

    def pairs(rows: list[Row]) -> list[tuple[float, float]]:
        return [(r.predicted_ns, r.measured_ns) for r in rows if r.predicted_ns is not None]

    baseline: dict[str, object] = {}
    for card in sorted({r.card for r in ok}):
        train = [r for r in ok if r.card == card and not r.held_out]
        test = [r for r in ok if r.card == card and r.held_out]
        if not train or not test:
            continue
        fit = fit_baseline(train)
        baseline[card] = {"fit": {"compute_eff": fit.compute_eff, "dram_eff": fit.dram_eff,
                                  "overhead_ns": round(fit.overhead_ns, 1)},
                          "held_out_rows": len(test),
                          "baseline": summarise([(fit.predict(r), r.measured_ns) for r in test]).to_json(),
                          "model": summarise(pairs(test)).to_json()}
    speedups = []
    for tuned, auto in speedup_pairs(ok):
        assert tuned.predicted_ns is not None and auto.predicted_ns is not None
        measured, predicted = auto.measured_ns / tuned.measured_ns, auto.predicted_ns / tuned.predicted_ns
        speedups.append({"card": tuned.card, "M": tuned.shape[0], "K": tuned.shape[1], "N": tuned.shape[2],
                         "dtype": tuned.dtype, "fidelity": tuned.fidelity, "measured": round(measured, 3),
                         "predicted": round(predicted, 3),
                         "error_pct": round(100 * (predicted - measured) / measured, 2)})
    return {
        "rows": [{**r.source, "candidate": r.candidate, "regime": r.regime, "predicted_ns": _round(r.predicted_ns, 1),
                  "measured_ns": r.measured_ns, "error_pct": _round(r.error_pct), "note": r.note,
                  "hardware": r.hardware, "hardware_sha256": r.hardware_sha256}
                 for r in report.rows],
        "summary": summarise(pairs(ok)).to_json(),
        "by_card": {c: summarise(pairs([r for r in ok if r.card == c])).to_json() for c in sorted({r.card for r in ok})},
        "by_regime": {g: summarise(pairs([r for r in ok if r.regime == g])).to_json()
                      for g in ("small", "compute-bound", "dram-bound")},
        "held_out_vs_baseline": baseline,
        "speedups": {"pairs": speedups,
                     "median_abs_err_pct": _round(statistics.median(abs(s["error_pct"]) for s in speedups))
                     if speedups else None},
        "skipped": report.skipped,
    }


def report_measurements(report: Report) -> list[Measurement]:
    """The rows as results-store entries (source ``report``: published measurements)."""
    return [Measurement(
        source="report", hardware=r.hardware, hardware_sha256=r.hardware_sha256, kernel="gemm",
        shape={"M": r.shape[0], "K": r.shape[1], "N": r.shape[2]}, candidate=r.candidate,
        schedule_json=json.dumps({"candidate": r.candidate, "params": r.params, "dtype": r.dtype,
                                  "fidelity": r.fidelity, "config_kind": r.kind}),
        predicted_cycles=r.predicted_cycles, predicted_ns=r.predicted_ns, breakdown=r.breakdown,
        measured_ns=r.measured_ns, measured_what="host wall clock per op with trace (published)",
        note=r.note) for r in report.rows]
