"""The published matmul measurements of the ``gemm`` kernel (``gemm_flops_calibration.csv`` and the manual
configs of ``gemm_manual_configs.csv`` in ``loom_explorer/data/published``): their rows read and predicted,
for ``loom-explorer accuracy`` and ``calibrate`` (``published_runs``).

Every measured row is predicted with the exact config it ran: its manual config (joined on card, grid,
dtype, M, K, N) with its memory placement, or, for out-of-box rows, the config ttnn picks itself
(``ttnn_default_config``), on the row's card (n150 -> wormhole_n150, p150 -> blackhole_p150a) restricted
to the row's grid. Only ``use_trace=True`` rows are used: without trace the time is host dispatch
(``gemm_benchmark_method.md``). A traced row's time is wall clock over back-to-back ops, so each prediction is
the model's device latency plus the op-to-op gap (``compute.op_to_op_gap_cycles``: the dispatcher's gap between
one op's kernels ending and the next op's starting, which a profiler's device kernel duration leaves out), a
term of its breakdown of its own (``OP_TO_OP_GAP``).

Both files are checked whole before anything is predicted (``read_measurements``, ``read_configs``, the
rules of ``csv_input`` and ``accuracy/published_table.py``): a bad cell or a short or long row is a
``DataError`` naming file, line and column, or, when the caller asks to skip bad rows, an unusable row listed
with its reason (``RowIssue``). Rows the model cannot score are listed too (``unscored``). Rows alike (card,
grid, problem, config) are predicted once, so the time is linear in rows plus one evaluation per distinct
op.

The statistics of the predictions (errors per card and regime, speed-ups, the roofline baseline, the
tables ``loom-explorer accuracy`` prints) are ``published_scoring``'s.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from loom_explorer.accuracy.csv_input import CellError, RowIssue, boolean, positive_int, positive_time, refusal
from loom_explorer.accuracy.progress import Progress
from loom_explorer.accuracy.published_table import (
    CARDS,
    CellChecker,
    DataError,
    card_cell,
    checked_records,
    data_format_cell,
    fidelity_cell,
    read_table,
)
from loom_explorer.families.contraction.ttnn_config import (
    TtnnMatmulConfig,
    evaluate_config,
    parse_config,
    placements,
    ttnn_default_evaluated,
)
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.grid import restrict_grid
from loom_explorer.hardware.schema import DataFormat, Fidelity, HardwareSpec
from loom_explorer.hashing import hardware_sha256
from loom_explorer.problem import Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.store import Measurement
from loom_explorer.targets.ttnn.evaluate import ConfigError

KERNEL = "gemm"  # the kernel the rows time
ERROR_FAMILY = "matmul"  # the family of model_error.csv its figures are
OP_TO_OP_GAP = "op_to_op_gap"  # the breakdown term of the gap a traced wall-clock time adds to each op
SMALL_NS = 20_000
REQUIRED = (
    "card",
    "config_kind",
    "M",
    "K",
    "N",
    "use_trace",
    "grid_x",
    "grid_y",
    "in0_storage",
    "out_storage",
    "dtype",
    "math_fidelity",
    "time_ns",
)


KINDS = ("manual", "out_of_box")
BLOCKING = ("in0_block_w", "per_core_M", "per_core_N", "out_block_h", "out_block_w", "out_subblock_h", "out_subblock_w")
CONFIG_REQUIRED = (
    "card",
    "grid_x",
    "grid_y",
    "dtype",
    "M",
    "K",
    "N",
    "program_config",
    "transpose_mcast",
    *BLOCKING,
    "in0_sharded",
    "out_sharded",
)


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
class Report:
    rows: list[Row]
    skipped: list[RowIssue] = field(default_factory=list)  # rows not predicted, and why


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


def _kind(text: str) -> str:
    if text not in KINDS:
        raise CellError(text, f"not a config kind ({', '.join(KINDS)})")
    return text


def read_measurements(path: str | Path) -> tuple[list[Measured], list[RowIssue]]:
    """Every row of a measurement CSV, checked (``csv_input``): the good rows and the unusable ones.

    Checked in every row: ``card`` (n150, p150), ``config_kind`` (manual, out_of_box), ``use_trace``
    (True/False), ``M``, ``K``, ``N``, ``grid_x``, ``grid_y`` (whole numbers >= 1, the grid within the card's
    chip), ``dtype``, ``math_fidelity`` and ``time_ns`` (a finite time > 0 ns). Other columns are not read."""
    file, header, records = read_table(path, REQUIRED)
    check = CellChecker(
        file,
        header,
        {
            "card": card_cell,
            "config_kind": _kind,
            "use_trace": boolean,
            **dict.fromkeys(("M", "K", "N", "grid_x", "grid_y"), positive_int),
            "dtype": data_format_cell,
            "math_fidelity": fidelity_cell,
            "time_ns": positive_time,
        },
        unique=("time_ns",),
    )
    good: list[Measured] = []
    issues: list[RowIssue] = []
    for line, cells, v in checked_records(file, header, records, check, issues):
        good.append(
            Measured(
                line,
                dict(zip(header, cells, strict=True)),
                v["card"],
                v["config_kind"],
                (v["M"], v["K"], v["N"]),
                v["use_trace"],
                (v["grid_x"], v["grid_y"]),
                v["dtype"],
                v["math_fidelity"],
                v["time_ns"],
            )
        )
    return good, issues


def read_configs(path: str | Path) -> tuple[dict[tuple[object, ...], ManualConfig], list[RowIssue]]:
    """Every row of a manual-configs CSV, checked: the configs by (card, grid_x, grid_y, dtype, M, K, N), and
    the unusable rows (bad cells as in ``read_measurements``; blocking and sub-block sizes whole numbers
    >= 1; ``transpose_mcast``, ``in0_sharded``, ``out_sharded`` True/False; a config class the model maps;
    a second config for the same key)."""
    file, header, records = read_table(path, CONFIG_REQUIRED)
    check = CellChecker(
        file,
        header,
        {
            "card": card_cell,
            "dtype": data_format_cell,
            "program_config": str.strip,
            **dict.fromkeys(("grid_x", "grid_y", "M", "K", "N", *BLOCKING), positive_int),
            **dict.fromkeys(("transpose_mcast", "in0_sharded", "out_sharded"), boolean),
        },
    )
    found: dict[tuple[object, ...], ManualConfig] = {}
    issues: list[RowIssue] = []
    for line, _, v in checked_records(file, header, records, check, issues):
        card, dtype = v["card"], v["dtype"]
        ints = {name: v[name] for name in ("grid_x", "grid_y", "M", "K", "N", *BLOCKING)}
        flags = {name: v[name] for name in ("transpose_mcast", "in0_sharded", "out_sharded")}
        memory = {t: "L1_BLOCK_SHARDED" if flags[f"{t}_sharded"] else "DRAM" for t in ("in0", "out")}
        try:
            config = parse_config(
                {
                    "program_config": v["program_config"],
                    "compute_with_storage_grid_size": (ints["grid_x"], ints["grid_y"]),
                    **{b: ints[b] for b in BLOCKING},
                    "transpose_mcast": flags["transpose_mcast"],
                    "memory": memory,
                },
                "config",
            )
        except ConfigError as exc:
            issues.append(
                RowIssue(file, line, "program_config", "not a config the model maps", str(exc).removeprefix("config: "))
            )
            continue
        key = (card, ints["grid_x"], ints["grid_y"], dtype, ints["M"], ints["K"], ints["N"])
        if key in found:
            issues.append(
                RowIssue(
                    file,
                    line,
                    None,
                    "a second config for the same card, grid, dtype and shape",
                    f"a second config for {_key_text(key)} (the first is on line {found[key].line})",
                )
            )
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


def load_cases(
    data: str | Path, configs: str | Path | None, skip_bad_rows: bool = False
) -> tuple[list[Case], list[RowIssue]]:
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
        raise DataError(
            f"{data}: no usable rows with use_trace=True (rows without trace time host dispatch, "
            "not the op)" + (f"; {len(bad)} unusable rows left out" if bad else "")
        )
    program = load_program(KERNEL)
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
                unusable.append(
                    RowIssue(
                        str(data),
                        m.line,
                        None,
                        f"manual row without a config {given}",
                        f"manual row without a config for {_key_text((m.card, *m.grid, m.dtype, *m.shape))} {given}",
                    )
                )
                continue
            cfg, config_line = found.config, found.line
        place = placements(cfg) if cfg else {}
        pkey = (m.shape, m.dtype, m.fidelity, tuple(sorted((t, p.value) for t, p in place.items())))
        problem = problems.get(pkey)
        if problem is None:
            try:
                problem = make_problem(
                    program, dict(zip("MKN", m.shape, strict=True)), m.dtype, m.fidelity, placements=place
                )
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
    # the benchmark times wall clock over a trace of back-to-back matmuls (gemm_benchmark_method.md): each op's
    # time is its device kernel duration (the model's latency) plus the op-to-op gap the dispatcher leaves
    # between one op's kernels ending and the next op's starting
    gap = hw.compute.op_to_op_gap_cycles
    total = sol.latency_cycles + gap if sol else None
    dtype = problem.data_format("out")
    dram_bytes = sum(
        hw.tile_bytes[dtype] * problem.tiles(a) * problem.tiles(b) for a, b in (("M", "K"), ("K", "N"), ("M", "N"))
    )
    return _Prediction(
        hardware=hw.name,
        hardware_sha256=sha,
        candidate=evaluated.result.candidate_name,
        predicted_ns=hw.cycles_to_us(total) * 1e3 if total is not None else None,
        ideal_ns=hw.cycles_to_us(evaluated.schedule.ideal_cycles) * 1e3,
        dram_ns=dram_bytes / (hw.dram.channels * hw.dram.channel_peak_bytes_per_cycle) / hw.clock_ghz,
        params=evaluated.values,
        breakdown={**dict(sol.breakdown), OP_TO_OP_GAP: gap} if sol else {},
        predicted_cycles=total,
        note="" if sol else (evaluated.result.conflict.message if evaluated.result.conflict else ""),
    )


def predict_cases(
    cases: list[Case], hardware: dict[str, HardwareSpec] | None = None, progress: Progress | None = None
) -> Report:
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
        rows.append(
            Row(
                source=r,
                card=case.card,
                kind=r["config_kind"],
                shape=(int(r["M"]), int(r["K"]), int(r["N"])),
                grid=case.grid,
                dtype=case.problem.data_format("out").value,
                fidelity=case.problem.fidelity.value,
                measured_ns=case.measured_ns or float(r["time_ns"]),
                predicted_ns=hit.predicted_ns,
                ideal_ns=hit.ideal_ns,
                dram_ns=hit.dram_ns,
                candidate=hit.candidate,
                hardware=hit.hardware,
                hardware_sha256=hit.hardware_sha256,
                params=hit.params,
                breakdown=hit.breakdown,
                predicted_cycles=hit.predicted_cycles,
                note=hit.note,
                file=case.file,
                line=case.line,
            )
        )
    if progress:
        progress.update(len(cases))
    return Report(rows, skipped)


def predict_rows(
    data: str | Path,
    configs: str | Path | None,
    hardware: dict[str, HardwareSpec] | None = None,
    skip_bad_rows: bool = False,
    progress: Progress | None = None,
) -> Report:
    """Every ``use_trace=True`` row of ``data`` predicted with its own config (module docstring)."""
    cases, skipped = load_cases(data, configs, skip_bad_rows)
    report = predict_cases(cases, hardware, progress)
    return Report(report.rows, skipped + report.skipped)


def unscored(report: Report) -> list[RowIssue]:
    """Every row of the report without an error figure, and why: unusable rows, rows the model cannot take,
    and rows whose config the model finds illegal."""
    illegal = [
        RowIssue(r.file, r.line, None, "the model finds its config illegal", r.note)
        for r in report.rows
        if r.predicted_ns is None
    ]
    return sorted([*report.skipped, *illegal], key=lambda i: (i.file, i.line))


def report_measurements(report: Report) -> list[Measurement]:
    """The rows as results-store entries (source ``report``: published measurements)."""
    return [
        Measurement(
            source="report",
            hardware=r.hardware,
            hardware_sha256=r.hardware_sha256,
            kernel=KERNEL,
            shape={"M": r.shape[0], "K": r.shape[1], "N": r.shape[2]},
            candidate=r.candidate,
            schedule_json=json.dumps(
                {
                    "candidate": r.candidate,
                    "params": r.params,
                    "dtype": r.dtype,
                    "fidelity": r.fidelity,
                    "config_kind": r.kind,
                }
            ),
            predicted_cycles=r.predicted_cycles,
            predicted_ns=r.predicted_ns,
            breakdown=r.breakdown,
            measured_ns=r.measured_ns,
            measured_what="host wall clock per op with trace (published)",
            note=r.note,
        )
        for r in report.rows
    ]
