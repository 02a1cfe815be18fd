"""The model against published matmul measurements (``gemm_flops_calibration.csv`` and the manual configs of
``gemm_manual_configs.csv`` in ``loom_explorer/data/published``): ``loom-explorer accuracy``.

Every measured row is predicted with the exact config it ran: its manual config (joined on card, grid,
dtype, M, K, N) with its memory placement, or, for out-of-box rows, the config ttnn picks itself
(``ttnn_default_config``), on the row's card (n150 -> wormhole_n150, p150 -> blackhole_p150a) restricted
to the row's grid. Only ``use_trace=True`` rows are used: without trace the time is host dispatch
(``gemm_benchmark_method.md``).

Both files are checked whole before anything is predicted (``read_measurements``, ``read_configs``, the
rules of ``csv_input``): a bad cell or a short or long row is a ``DataError`` naming file, line and column,
or, when the caller asks to skip bad rows, an unusable row listed with its reason (``RowIssue``). Rows the
model cannot score are listed too (``unscored``). Rows alike (card, grid, problem, config) are predicted
once, so the time is linear in rows plus one evaluation per distinct op.

Summary statistics: count, median and 90th-percentile absolute error (%), Spearman rank correlation;
overall, per card and per regime (``small``: ideal compute under 20 us; otherwise ``compute-bound`` when
the ideal compute time exceeds the DRAM bytes at peak bandwidth, else ``dram-bound``). Per pair of a
hand-tuned row and the out-of-box row of the same shape, dtype and fidelity: measured and predicted
speedup.

The baseline is a three-constant roofline, ``max(ideal_compute / e_c, dram_bytes / (bw * e_d)) + t0``
(grid search over ``e_c``, ``e_d``; ``t0`` in closed form, least squares of the relative error), scored as
the model is: leave one shape out (``cross_validation``).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from loom_explorer.accuracy.csv_input import (
    CellError,
    RowIssue,
    boolean,
    cell_issue,
    csv_records,
    positive_int,
    positive_time,
    read_text,
    refusal,
    width_issue,
)
from loom_explorer.accuracy.progress import Progress
from loom_explorer.accuracy.ttnn_configs import (
    ConfigError,
    TtnnMatmulConfig,
    evaluate_config,
    parse_config,
    placements,
    ttnn_default_evaluated,
)
from loom_explorer.errors import LoomError
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.cards import reference_cards
from loom_explorer.hardware.grid import restrict_grid
from loom_explorer.hardware.schema import (
    DataFormat,
    Fidelity,
    GridSpec,
    HardwareSpec,
    parse_data_format,
    parse_fidelity,
)
from loom_explorer.hashing import hardware_sha256
from loom_explorer.problem import Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.store import Measurement

CARDS = reference_cards()  # card -> shipped chip, of each architecture's reference card (hardware/cards.py)
SMALL_NS = 20_000
REQUIRED = ("card", "config_kind", "M", "K", "N", "use_trace", "grid_x", "grid_y", "in0_storage", "out_storage",
            "dtype", "math_fidelity", "time_ns")


KINDS = ("manual", "out_of_box")
BLOCKING = ("in0_block_w", "per_core_M", "per_core_N", "out_block_h", "out_block_w", "out_subblock_h",
            "out_subblock_w")
CONFIG_REQUIRED = ("card", "grid_x", "grid_y", "dtype", "M", "K", "N", "program_config", "transpose_mcast",
                   *BLOCKING, "in0_sharded", "out_sharded")


class DataError(LoomError, ValueError):
    """A measurement file the report cannot use; the message names the file, row and column."""


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
    file: str = ""
    line: int = 0  # the row's line in ``file``

    @property
    def regime(self) -> str:
        if self.ideal_ns < SMALL_NS:
            return "small"
        return "compute-bound" if self.ideal_ns >= self.dram_ns else "dram-bound"

    @property
    def error_pct(self) -> float | None:
        """Signed relative error, ``100 * (predicted - measured) / measured``: above -100 (both times are
        checked > 0); None when there is no prediction."""
        if self.predicted_ns is None or not self.measured_ns > 0:
            return None
        error = 100.0 * (self.predicted_ns - self.measured_ns) / self.measured_ns
        return error if math.isfinite(error) else None



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
    skipped: list[RowIssue] = field(default_factory=list)  # rows not predicted, and why


def _round(x: float | None, digits: int = 2) -> float | None:
    return None if x is None else round(x, digits)


@dataclass(frozen=True, slots=True)
class Measured:
    """One checked row of the measurement CSV (``line``: its line in the file)."""

    line: int
    source: dict[str, str]
    card: str
    kind: str
    shape: tuple[int, int, int]
    use_trace: bool
    grid: tuple[int, int]
    dtype: DataFormat
    fidelity: Fidelity
    time_ns: float


@dataclass(frozen=True, slots=True)
class ManualConfig:
    """One checked row of the manual-configs CSV."""

    line: int
    key: tuple[str, int, int, DataFormat, int, int, int]  # card, grid_x, grid_y, dtype, M, K, N
    config: TtnnMatmulConfig


def card_cell(text: str) -> str:
    if text not in CARDS:
        raise CellError(text, f"not a card ({', '.join(CARDS)})")
    return text


def _kind(text: str) -> str:
    if text not in KINDS:
        raise CellError(text, f"not a config kind ({', '.join(KINDS)})")
    return text


def data_format_cell(text: str) -> DataFormat:
    try:
        return parse_data_format(text)
    except ValueError:
        raise CellError(text, "not a data format (BFLOAT16, BFLOAT8_B, BFLOAT4_B, FLOAT32)") from None


def fidelity_cell(text: str) -> Fidelity:
    try:
        return parse_fidelity(text)
    except ValueError:
        raise CellError(text, "not a math fidelity (LoFi, HiFi2, HiFi3, HiFi4)") from None


_UNSEEN = object()


class CellChecker:
    """Reads the named columns of a file's rows, each with its parser (``CellError`` -> a ``RowIssue``
    naming file, line and column). Each distinct text of a column is parsed once: rows repeat cards,
    shapes and formats."""

    def __init__(self, file: str, header: list[str], parsers: dict[str, Callable[[str], object]],
                 unique: tuple[str, ...] = ()) -> None:
        self.file = file
        self.columns = [(name, header.index(name), parse, None if name in unique else dict[str, object]())
                        for name, parse in parsers.items()]

    def __call__(self, line: int, cells: list[str]) -> tuple[dict[str, Any], list[RowIssue]]:
        values: dict[str, Any] = {}
        issues: list[RowIssue] = []
        for name, i, parse, memo in self.columns:
            text = cells[i]
            value = _UNSEEN if memo is None else memo.get(text, _UNSEEN)
            if value is _UNSEEN:
                try:
                    value = parse(text)
                except CellError as exc:
                    value = exc
                if memo is not None:
                    memo[text] = value
            if isinstance(value, CellError):
                issues.append(cell_issue(self.file, line, name, value))
            else:
                values[name] = value
        return values, issues


@lru_cache(maxsize=len(CARDS))
def _card_grid(card: str) -> GridSpec:
    return load_hardware(CARDS[card]).grid


def _grid_fits(file: str, line: int, v: dict[str, Any]) -> list[RowIssue]:
    """The row's grid must fit its card's chip (the shipped hardware file's grid)."""
    if "card" not in v or "grid_x" not in v or "grid_y" not in v:
        return []
    chip = _card_grid(v["card"])
    if v["grid_x"] <= chip.columns and v["grid_y"] <= chip.rows:
        return []
    return [RowIssue(file, line, column, "more cores than the card's chip has",
                     f"{v[column]} is more than {CARDS[v['card']]}'s {most}")
            for column, most in (("grid_x", chip.columns), ("grid_y", chip.rows)) if v[column] > most]


def read_table(path: str | Path, required: tuple[str, ...]) -> tuple[str, list[str], list[tuple[int, list[str]]]]:
    """(file name as given, header, data records) of a CSV with ``required`` columns (DataError otherwise)."""
    file = str(path)
    records = csv_records(file, read_text(path, DataError), DataError)
    first = next(records, None)
    if first is None:
        raise DataError(f"{file}: empty file (no header, no data rows)")
    header = [h.strip() for h in first[1]]
    missing = [c for c in required if c not in header]
    if missing:
        raise DataError(f"{file}: missing columns {', '.join(missing)}")
    rows = list(records)
    if not rows:
        raise DataError(f"{file}: no data rows (only the header)")
    return file, header, rows


def checked_records(file: str, header: list[str], records: Iterable[tuple[int, list[str]]], check: CellChecker,
             issues: list[RowIssue]) -> Iterator[tuple[int, list[str], dict[str, Any]]]:
    """(line, cells, checked values) of every record of the right width whose cells pass ``check`` and whose
    grid fits its card; the other records' issues are appended to ``issues``."""
    for line, cells in records:
        wrong = width_issue(file, line, cells, header)
        if wrong:
            issues.append(wrong)
            continue
        v, bad = check(line, cells)
        bad += _grid_fits(file, line, v)
        if bad:
            issues.extend(bad)
            continue
        yield line, cells, v


def read_measurements(path: str | Path) -> tuple[list[Measured], list[RowIssue]]:
    """Every row of a measurement CSV, checked (``csv_input``): the good rows and the unusable ones.

    Checked in every row: ``card`` (n150, p150), ``config_kind`` (manual, out_of_box), ``use_trace``
    (True/False), ``M``, ``K``, ``N``, ``grid_x``, ``grid_y`` (whole numbers >= 1, the grid within the card's
    chip), ``dtype``, ``math_fidelity`` and ``time_ns`` (a finite time > 0 ns). Other columns are not read."""
    file, header, records = read_table(path, REQUIRED)
    check = CellChecker(file, header, {"card": card_cell, "config_kind": _kind, "use_trace": boolean,
                                    **dict.fromkeys(("M", "K", "N", "grid_x", "grid_y"), positive_int),
                                    "dtype": data_format_cell, "math_fidelity": fidelity_cell,
                                    "time_ns": positive_time},
                     unique=("time_ns",))
    good: list[Measured] = []
    issues: list[RowIssue] = []
    for line, cells, v in checked_records(file, header, records, check, issues):
        good.append(Measured(line, dict(zip(header, cells, strict=True)), v["card"], v["config_kind"],
                             (v["M"], v["K"], v["N"]),
                             v["use_trace"], (v["grid_x"], v["grid_y"]), v["dtype"], v["math_fidelity"],
                             v["time_ns"]))
    return good, issues


def read_configs(path: str | Path) -> tuple[dict[tuple[object, ...], ManualConfig], list[RowIssue]]:
    """Every row of a manual-configs CSV, checked: the configs by (card, grid_x, grid_y, dtype, M, K, N), and
    the unusable rows (bad cells as in ``read_measurements``; blocking and sub-block sizes whole numbers
    >= 1; ``transpose_mcast``, ``in0_sharded``, ``out_sharded`` True/False; a config class the model maps;
    a second config for the same key)."""
    file, header, records = read_table(path, CONFIG_REQUIRED)
    check = CellChecker(file, header, {"card": card_cell, "dtype": data_format_cell, "program_config": str.strip,
                                    **dict.fromkeys(("grid_x", "grid_y", "M", "K", "N", *BLOCKING), positive_int),
                                    **dict.fromkeys(("transpose_mcast", "in0_sharded", "out_sharded"), boolean)})
    found: dict[tuple[object, ...], ManualConfig] = {}
    issues: list[RowIssue] = []
    for line, _, v in checked_records(file, header, records, check, issues):
        card, dtype = v["card"], v["dtype"]
        ints = {name: v[name] for name in ("grid_x", "grid_y", "M", "K", "N", *BLOCKING)}
        flags = {name: v[name] for name in ("transpose_mcast", "in0_sharded", "out_sharded")}
        memory = {t: "L1_BLOCK_SHARDED" if flags[f"{t}_sharded"] else "DRAM" for t in ("in0", "out")}
        try:
            config = parse_config({"program_config": v["program_config"],
                                   "compute_with_storage_grid_size": (ints["grid_x"], ints["grid_y"]),
                                   **{b: ints[b] for b in BLOCKING}, "transpose_mcast": flags["transpose_mcast"],
                                   "memory": memory}, "config")
        except ConfigError as exc:
            issues.append(RowIssue(file, line, "program_config", "not a config the model maps",
                                   str(exc).removeprefix("config: ")))
            continue
        key = (card, ints["grid_x"], ints["grid_y"], dtype, ints["M"], ints["K"], ints["N"])
        if key in found:
            issues.append(RowIssue(file, line, None, "a second config for the same card, grid, dtype and shape",
                                   f"a second config for {_key_text(key)} (the first is on line {found[key].line})"))
            continue
        found[key] = ManualConfig(line, key, config)
    return found, issues


def _key_text(key: tuple[object, ...]) -> str:
    card, gx, gy, dtype, m, k, n = key
    return f"{card} {gx}x{gy} {getattr(dtype, 'value', dtype)} M={m},K={k},N={n}"


@dataclass(frozen=True, slots=True)
class Case:
    """One measured row, ready to predict: its problem and config (None: ttnn's default). ``key`` is the same
    for rows the model predicts alike (card, grid, problem, config), so each distinct one is costed once."""

    source: dict[str, str]
    where: str
    problem: Problem
    config: TtnnMatmulConfig | None
    grid: tuple[int, int]
    file: str = ""
    line: int = 0
    key: tuple[object, ...] = ()
    measured_ns: float = 0.0

    @property
    def card(self) -> str:
        return self.source["card"]

    @property
    def shape(self) -> tuple[int, int, int]:
        """(M, K, N): the unit cross-validation leaves out."""
        m, k, n = (int(self.source[d]) for d in ("M", "K", "N"))
        return m, k, n


def load_cases(data: str | Path, configs: str | Path | None,
               skip_bad_rows: bool = False) -> tuple[list[Case], list[RowIssue]]:
    """The ``use_trace=True`` rows of ``data`` with their configs, and the rows that cannot be used.

    Both files are read and checked first (``read_measurements``, ``read_configs``): a bad cell, a short or
    long row is a ``DataError`` naming its file, line and column, unless ``skip_bad_rows``, when those rows
    are returned among the unusable ones. A ``manual`` row without a config in ``configs`` is returned among
    them too (``accuracy`` reports it; ``calibrate`` refuses it without ``--skip-bad-rows``). A file without
    ``use_trace=True`` rows is a ``DataError``."""
    measured, issues = read_measurements(data)
    manual, config_issues = read_configs(configs) if configs else ({}, [])
    bad = issues + config_issues
    if bad and not skip_bad_rows:
        raise DataError(refusal(bad))
    traced = [m for m in measured if m.use_trace]
    if not traced:
        raise DataError(f"{data}: no usable rows with use_trace=True (rows without trace time host dispatch, "
                        "not the op)" + (f"; {len(bad)} unusable rows left out" if bad else ""))
    program = load_program("gemm")
    problems: dict[tuple[object, ...], Problem] = {}
    cases: list[Case] = []
    unusable = list(bad)
    for m in traced:
        where = f"{data}:{m.line}"
        cfg, config_line = None, 0
        if m.kind == "manual":
            found = manual.get((m.card, *m.grid, m.dtype, *m.shape))
            if found is None:
                given = f"in {configs}" if configs else "(no configs file given)"
                unusable.append(RowIssue(str(data), m.line, None, f"manual row without a config {given}",
                                         f"manual row without a config for "
                                         f"{_key_text((m.card, *m.grid, m.dtype, *m.shape))} {given}"))
                continue
            cfg, config_line = found.config, found.line
        place = placements(cfg) if cfg else {}
        pkey = (m.shape, m.dtype, m.fidelity, tuple(sorted((t, p.value) for t, p in place.items())))
        problem = problems.get(pkey)
        if problem is None:
            try:
                problem = make_problem(program, dict(zip("MKN", m.shape, strict=True)), m.dtype, m.fidelity,
                                       placements=place)
            except ValueError as exc:
                unusable.append(RowIssue(str(data), m.line, None, "not a problem the model takes", str(exc)))
                continue
            problems[pkey] = problem
        key = (m.card, m.grid, pkey, config_line)  # config_line 0: ttnn's default config
        cases.append(Case(m.source, where, problem, cfg, m.grid, str(data), m.line, key, m.time_ns))
    return cases, unusable


@dataclass(frozen=True, slots=True)
class _Prediction:
    """What the model says for one distinct case key (shared by every row of that key)."""

    hardware: str
    hardware_sha256: str
    candidate: str
    predicted_ns: float | None
    ideal_ns: float
    dram_ns: float
    params: dict[str, int]
    breakdown: dict[str, int]
    predicted_cycles: int | None
    note: str


def _predict_one(hw: HardwareSpec, sha: str, case: Case) -> _Prediction:
    problem = case.problem
    if case.config is None:
        _, evaluated = ttnn_default_evaluated(hw, problem)
    else:
        evaluated = evaluate_config(hw, problem, case.config)
    sol = evaluated.result.solution
    dtype = problem.data_format("out")
    dram_bytes = sum(hw.tile_bytes[dtype] * problem.tiles(a) * problem.tiles(b)
                     for a, b in (("M", "K"), ("K", "N"), ("M", "N")))
    return _Prediction(
        hardware=hw.name, hardware_sha256=sha, candidate=evaluated.result.candidate_name,
        predicted_ns=hw.cycles_to_us(sol.latency_cycles) * 1e3 if sol else None,
        ideal_ns=hw.cycles_to_us(evaluated.schedule.ideal_cycles) * 1e3,
        dram_ns=dram_bytes / (hw.dram.channels * hw.dram.channel_peak_bytes_per_cycle) / hw.clock_ghz,
        params=evaluated.values, breakdown=dict(sol.breakdown) if sol else {},
        predicted_cycles=sol.latency_cycles if sol else None,
        note="" if sol else (evaluated.result.conflict.message if evaluated.result.conflict else ""))


def predict_cases(cases: list[Case], hardware: dict[str, HardwareSpec] | None = None,
                  progress: Progress | None = None) -> Report:
    """Predict every case on its card's hardware (``hardware``: card -> spec; default the shipped files),
    restricted to the case's grid. Each distinct ``Case.key`` is costed once (rows repeat shapes), so the
    time is linear in rows plus one evaluation per distinct key."""
    base = {card: (hardware or {}).get(card) or load_hardware(name) for card, name in CARDS.items()}
    restricted: dict[tuple[str, int, int], tuple[HardwareSpec, str] | str] = {}
    known: dict[tuple[object, ...], _Prediction | str] = {}
    rows: list[Row] = []
    skipped: list[RowIssue] = []
    if progress:
        progress.phase("predicting", len(cases))
    for i, case in enumerate(cases):
        if progress:
            progress.update(i)
        hit = known.get(case.key)
        if hit is None:
            key = (case.card, *case.grid)
            if key not in restricted:
                try:
                    hw = restrict_grid(base[case.card], *case.grid)
                    restricted[key] = (hw, hardware_sha256(hw))
                except ValueError as exc:
                    restricted[key] = str(exc)
            chip = restricted[key]
            if isinstance(chip, str):
                hit = chip
            else:
                try:
                    hit = _predict_one(*chip, case)
                except ConfigError as exc:
                    hit = str(exc)
            known[case.key] = hit
        if isinstance(hit, str):
            skipped.append(RowIssue(case.file, case.line, None, "the model cannot take its config", hit))
            continue
        r = case.source
        rows.append(Row(
            source=r, card=case.card, kind=r["config_kind"], shape=(int(r["M"]), int(r["K"]), int(r["N"])),
            grid=case.grid, dtype=case.problem.data_format("out").value, fidelity=case.problem.fidelity.value,
            measured_ns=case.measured_ns or float(r["time_ns"]), predicted_ns=hit.predicted_ns,
            ideal_ns=hit.ideal_ns, dram_ns=hit.dram_ns, candidate=hit.candidate, hardware=hit.hardware,
            hardware_sha256=hit.hardware_sha256, params=hit.params, breakdown=hit.breakdown,
            predicted_cycles=hit.predicted_cycles, note=hit.note, file=case.file, line=case.line))
    if progress:
        progress.update(len(cases))
    return Report(rows, skipped)


def predict_rows(data: str | Path, configs: str | Path | None,
                 hardware: dict[str, HardwareSpec] | None = None, skip_bad_rows: bool = False,
                 progress: Progress | None = None) -> Report:
    """Every ``use_trace=True`` row of ``data`` predicted with its own config (module docstring)."""
    cases, skipped = load_cases(data, configs, skip_bad_rows)
    report = predict_cases(cases, hardware, progress)
    return Report(report.rows, skipped + report.skipped)


def unscored(report: Report) -> list[RowIssue]:
    """Every row of the report without an error figure, and why: unusable rows, rows the model cannot take,
    and rows whose config the model finds illegal."""
    illegal = [RowIssue(r.file, r.line, None, "the model finds its config illegal", r.note)
               for r in report.rows if r.predicted_ns is None]
    return sorted([*report.skipped, *illegal], key=lambda i: (i.file, i.line))


def _ranks(v: np.ndarray) -> np.ndarray:
    """0-based ranks of ``v``, ties sharing the mean of their ranks."""
    order = np.argsort(v, kind="stable")
    ordered = v[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]  # the first of each run of equal values
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], len(v)] - 1
    out = np.empty(len(v))
    out[order] = ((first + last) / 2)[np.cumsum(starts) - 1]
    return out


def _spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rank correlation (Pearson's of the tie-averaged ranks); None under 3 pairs or without
    spread."""
    if len(xs) < 3:
        return None
    rx, ry = _ranks(np.asarray(xs, dtype=float)), _ranks(np.asarray(ys, dtype=float))
    dx, dy = rx - rx.mean(), ry - ry.mean()
    var = math.sqrt(float((dx * dx).sum()) * float((dy * dy).sum()))
    return float((dx * dy).sum()) / var if var else None


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
    """Three-constant roofline fitted on ``rows`` (module docstring): for each grid point ``(e_c, e_d)``,
    ``t0 = max(0, sum((y - b) / y^2) / sum(1 / y^2))`` minimises ``sum(((b + t0 - y) / y)^2)`` with
    ``b = max(ideal / e_c, dram / e_d)``; the point of least loss is kept (the first on a tie)."""
    ideal = np.array([r.ideal_ns for r in rows])
    dram = np.array([r.dram_ns for r in rows])
    ys = np.array([r.measured_ns for r in rows])
    inv2 = 1.0 / ys ** 2
    den = float(inv2.sum())
    best: tuple[float, Baseline] | None = None
    for ec in [x / 100 for x in range(20, 101, 2)]:
        compute = ideal / ec
        for ed in [x / 100 for x in range(10, 101, 3)]:
            base = np.maximum(compute, dram / ed)
            t0 = max(0.0, float(((ys - base) * inv2).sum()) / den)
            loss = float((((base + t0 - ys) / ys) ** 2).sum())
            if best is None or loss < best[0]:
                best = (loss, Baseline(ec, ed, t0))
    assert best is not None
    return best[1]


def speedup_pairs(rows: list[Row]) -> list[tuple[Row, Row]]:
    """(hand-tuned, out-of-box) rows of the same card, shape, dtype and fidelity."""
    oob = {(r.card, r.shape, r.dtype, r.fidelity): r for r in rows if r.kind == "out_of_box"}
    return [(r, oob[(r.card, r.shape, r.dtype, r.fidelity)]) for r in rows
            if r.kind == "manual" and (r.card, r.shape, r.dtype, r.fidelity) in oob]


@dataclass(frozen=True, slots=True)
class ErrorsByKind:
    """Error summaries of one set of predictions: over every row, and per config kind (manual, out_of_box)."""

    all: Summary
    by_kind: dict[str, Summary]

    def to_json(self) -> dict[str, object]:
        return {"all": self.all.to_json(), "by_kind": {k: s.to_json() for k, s in self.by_kind.items()}}


def errors_by_kind(rows: list[Row], predicted: Sequence[float | None] | None = None) -> ErrorsByKind:
    """Summaries of ``predicted`` (aligned with ``rows``; default each row's own prediction) against the
    measurements; rows without a prediction are left out."""
    values = list(predicted) if predicted is not None else [r.predicted_ns for r in rows]

    def pairs(kind: str | None) -> list[tuple[float, float]]:
        return [(p, r.measured_ns) for r, p in zip(rows, values, strict=True) if p and kind in (None, r.kind)]

    return ErrorsByKind(summarise(pairs(None)),
                        {k: summarise(pairs(k)) for k in KINDS if any(r.kind == k for r in rows)})


def roofline_cross_validated(rows: list[Row]) -> list[float | None]:
    """Leave one shape out: each row predicted by a roofline (``fit_baseline``) fitted on the rows of its card
    with another shape (None when its card has no other shape)."""
    predicted: list[float | None] = [None] * len(rows)
    for card, shape in {(r.card, r.shape) for r in rows}:
        train = [r for r in rows if r.card == card and r.shape != shape]
        if train:
            fit = fit_baseline(train)
            for i, r in enumerate(rows):
                if r.card == card and r.shape == shape:
                    predicted[i] = fit.predict(r)
    return predicted


@dataclass(frozen=True, slots=True)
class CardComparison:
    """One card's rows: the model's errors (in sample: the constants as given; and, when asked for, leave one
    shape out: the constants refitted without each shape) beside the three-constant roofline's, fitted on
    the same rows the same ways."""

    card: str
    fit: Baseline  # the roofline on every row of the card
    model: ErrorsByKind
    roofline: ErrorsByKind  # in sample
    roofline_cross_validated: ErrorsByKind
    model_cross_validated: ErrorsByKind | None = None


@dataclass(frozen=True, slots=True)
class Speedup:
    """Hand-tuned over automatic config, ``auto_ns / tuned_ns``, measured and predicted (rounded to 3 digits);
    ``error_pct = 100 * (predicted - measured) / measured`` (2 digits)."""

    tuned: Row
    measured: float
    predicted: float
    error_pct: float


@dataclass(frozen=True, slots=True)
class AccuracyTables:
    """What ``accuracy`` reports: error summaries over every scored row, per card and per regime, the
    comparison with the roofline per card and the speedups (``accuracy_tables``)."""

    rows: list[Row]
    summary: Summary
    by_card: dict[str, Summary]
    by_regime: dict[str, Summary]
    comparisons: list[CardComparison]
    speedups: list[Speedup]
    speedup_median_abs_err_pct: float | None
    skipped: list[RowIssue]


def accuracy_tables(report: Report, cross_validated: dict[str, ErrorsByKind] | None = None) -> AccuracyTables:
    """The summaries, comparisons and speedups of ``report`` (``AccuracyTables``); ``cross_validated``: the
    model's leave-one-shape-out errors per card, when they were computed (``cross_validation``)."""
    ok = [r for r in report.rows if r.predicted_ns is not None]

    def pairs(rows: list[Row]) -> list[tuple[float, float]]:
        return [(r.predicted_ns, r.measured_ns) for r in rows if r.predicted_ns is not None]

    comparisons = []
    for card in sorted({r.card for r in ok}):
        mine = [r for r in ok if r.card == card]
        fit = fit_baseline(mine)
        comparisons.append(CardComparison(
            card, fit, errors_by_kind(mine), errors_by_kind(mine, [fit.predict(r) for r in mine]),
            errors_by_kind(mine, roofline_cross_validated(mine)), (cross_validated or {}).get(card)))
    speedups = []
    for tuned, auto in speedup_pairs(ok):
        assert tuned.predicted_ns is not None and auto.predicted_ns is not None
        measured, predicted = auto.measured_ns / tuned.measured_ns, auto.predicted_ns / tuned.predicted_ns
        speedups.append(Speedup(tuned, round(measured, 3), round(predicted, 3),
                                round(100 * (predicted - measured) / measured, 2)))
    return AccuracyTables(
        rows=report.rows, summary=summarise(pairs(ok)),
        by_card={c: summarise(pairs([r for r in ok if r.card == c])) for c in sorted({r.card for r in ok})},
        by_regime={g: summarise(pairs([r for r in ok if r.regime == g]))
                   for g in ("small", "compute-bound", "dram-bound")},
        comparisons=comparisons, speedups=speedups,
        speedup_median_abs_err_pct=_round(statistics.median(abs(s.error_pct) for s in speedups)) if speedups else None,
        skipped=report.skipped)


def accuracy_json(tables: AccuracyTables) -> dict[str, object]:
    """The ``accuracy --json`` contract: rows, summaries (overall, per card, per regime), the comparison with
    the fitted roofline per card, and the hand-tuned-over-automatic speedups."""
    return {
        "rows": [{**r.source, "candidate": r.candidate, "regime": r.regime, "predicted_ns": _round(r.predicted_ns, 1),
                  "measured_ns": r.measured_ns, "error_pct": _round(r.error_pct), "note": r.note,
                  "hardware": r.hardware, "hardware_sha256": r.hardware_sha256}
                 for r in tables.rows],
        "summary": tables.summary.to_json(),
        "by_card": {c: s.to_json() for c, s in tables.by_card.items()},
        "by_regime": {g: s.to_json() for g, s in tables.by_regime.items()},
        "versus_roofline": {
            c.card: {"roofline_fit": {"compute_eff": c.fit.compute_eff, "dram_eff": c.fit.dram_eff,
                                      "overhead_ns": round(c.fit.overhead_ns, 1)},
                     "model": c.model.to_json(), "roofline": c.roofline.to_json(),
                     "roofline_cross_validated": c.roofline_cross_validated.to_json(),
                     "model_cross_validated": c.model_cross_validated.to_json() if c.model_cross_validated else None}
            for c in tables.comparisons},
        "speedups": {"pairs": [{"card": s.tuned.card, "M": s.tuned.shape[0], "K": s.tuned.shape[1],
                                "N": s.tuned.shape[2], "dtype": s.tuned.dtype, "fidelity": s.tuned.fidelity,
                                "measured": s.measured, "predicted": s.predicted, "error_pct": s.error_pct}
                               for s in tables.speedups],
                     "median_abs_err_pct": tables.speedup_median_abs_err_pct},
        "skipped": [str(s) for s in tables.skipped],
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
