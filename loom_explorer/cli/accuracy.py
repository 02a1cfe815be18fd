"""The model against TTNN and measurements: ``predict`` (a TTNN config as the model sees it), ``accuracy``
(the error table on measured matmuls), ``calibrate`` (fit the hardware file's estimated constants) and
``ingest`` (a device-profiler report, each op predicted with its own config)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from loom_explorer.accuracy.gemm_data import Row
from loom_explorer.accuracy.scoring import AccuracyTables, ErrorsByKind, Summary
from loom_explorer.cli.common import (
    Command,
    InputError,
    ProblemRequest,
    add_command,
    add_problem_args,
    add_store_arg,
    grid_size,
    pct,
    say,
    say_rows,
)
from loom_explorer.errors import EXIT_NO_SCHEDULE, EXIT_OK
from loom_explorer.export.files import check_target, write_new
from loom_explorer.hardware import HardwareError, load_hardware
from loom_explorer.hardware.schema import HardwareSpec, parse_fidelity
from loom_explorer.program import load_program
from loom_explorer.report import predict_table, result_json

if TYPE_CHECKING:
    from loom_explorer.accuracy.improve_configs import ImproveEntry
    from loom_explorer.problem import Problem

# ------------------------------------------------------------------------------------------- predict


@dataclass(frozen=True, slots=True)
class PredictCommand:
    problem: ProblemRequest
    ttnn_config: str | None  # a JSON file, or None for the config ttnn picks itself
    grid: tuple[int, int] | None  # (columns, rows) the device grid is restricted to
    json: bool
    op: str | None = None  # the op's key in an `improve -o` configs file


def parse_predict(args: argparse.Namespace) -> PredictCommand:
    if bool(args.ttnn_config) == bool(args.ttnn_default):
        raise InputError("predict needs exactly one of --ttnn-config FILE and --ttnn-default")
    if args.op and not args.ttnn_config:
        raise InputError("--op picks an op of an `improve -o` file given with --ttnn-config")
    return PredictCommand(ProblemRequest.from_args(args), args.ttnn_config, args.grid, args.json, args.op)


def finite_json(text: str) -> object:
    """JSON as Python's reader takes it, less ``NaN``, ``Infinity`` and numbers that overflow a float
    (ValueError naming the token)."""

    def refuse(token: str) -> float:
        raise ValueError(f"{token[:30]} is not a finite number")

    def number(token: str) -> float:
        value = float(token)
        return value if math.isfinite(value) else refuse(token)

    return json.loads(text, parse_constant=refuse, parse_float=number)


def with_compute_config(
    problem: ProblemRequest, compute: dict[str, object], memory: dict[str, str], origin: str
) -> ProblemRequest:
    """``problem`` with a TTNN config's placements added and its ``compute`` block's fidelity and fp32
    accumulation (a flag that contradicts the block is an error, not silently overridden)."""
    fidelity = compute.get("math_fidelity")
    chosen = problem.fidelity
    if fidelity is not None:
        wanted = parse_fidelity(str(fidelity).split(".")[-1])
        if problem.fidelity is not None and parse_fidelity(problem.fidelity) is not wanted:
            raise InputError(f"--fidelity {problem.fidelity} contradicts {origin}: compute.math_fidelity {fidelity}")
        chosen = wanted.value
    return dataclasses.replace(
        problem,
        memory=(*problem.memory, *(f"{t}={p}" for t, p in memory.items())),
        fidelity=chosen,
        fp32_acc=problem.fp32_acc or bool(compute.get("fp32_dest_acc_en")),
    )


def run_predict(req: PredictCommand) -> int:
    from loom_explorer.hardware.grid import restrict_grid
    from loom_explorer.program.structure import program_family
    from loom_explorer.targets.ttnn.config import TtnnConfig
    from loom_explorer.targets.ttnn.config_text import config_call, config_class, config_fields, op_name
    from loom_explorer.targets.ttnn.defaults import evaluate_ttnn_default, interleaved_families
    from loom_explorer.targets.ttnn.evaluate import ConfigError, Evaluated
    from loom_explorer.targets.ttnn.op import problem_ttnn_op, program_ttnn_op

    program = load_program(req.problem.kernel)
    problem_request = req.problem
    given: TtnnConfig | None = None
    family = program_family(program).name
    if req.ttnn_config and family in interleaved_families():
        raise InputError(
            f"--ttnn-config reads matmul and SDPA configs; {program.name} is of the {family} family: "
            "predict ttnn's interleaved default with --ttnn-default, or a sharded layout with "
            "`solve --memory` and its pins"
        )
    entry = None
    if req.ttnn_config:
        raw, entry = _read_ttnn_config(req.ttnn_config, req.op)
        given = program_ttnn_op(program).program_configs().parse(raw, req.ttnn_config)
        problem_request = with_compute_config(
            req.problem,
            dict(given.read_with().get("compute", {})),
            {t: p.value for t, p in given.placements().items()},
            req.ttnn_config,
        )
    hw, problem = problem_request.build()
    if entry is not None and entry.predict_args is not None:
        check_recorded_problem(req, entry.key, entry.predict_args, hw, problem)
    if req.grid:
        try:
            hw = restrict_grid(hw, *req.grid)
        except ValueError as exc:
            raise InputError(f"--grid {req.grid[0]}x{req.grid[1]}: {exc}") from None
    cfg: TtnnConfig
    evaluated: Evaluated
    try:
        if given is None:
            cfg, evaluated = evaluate_ttnn_default(hw, problem)
        else:
            cfg, evaluated = given, problem_ttnn_op(problem).program_configs().evaluate(hw, problem, given)
    except ConfigError as exc:  # a grid or blocks the chip cannot give: name the file the config came from
        if req.ttnn_config is None:
            raise
        raise ConfigError(f"{req.ttnn_config}: {exc}") from None
    source = req.ttnn_config or "ttnn default"
    op = op_name(cfg, decode=evaluated.schedule.candidate.has_tag("kv_split"))
    if req.json:
        print(
            json.dumps(
                {
                    "ttnn_config_source": source,
                    "ttnn_op": op,
                    "ttnn_config_class": config_class(cfg),
                    "ttnn_config_fields": config_fields(cfg),
                    **result_json(hw, evaluated.schedule, evaluated.result),
                    "ttnn_config": cfg.model_dump(mode="json"),
                },
                indent=2,
            )
        )
    else:
        chosen = f"from {req.ttnn_config}" if req.ttnn_config else "what ttnn picks when the call gives none"
        print(
            "\n".join(
                [
                    f"ttnn config costed ({chosen}):",
                    f"  {op}",
                    *(f"  {line}" for line in config_call(cfg)),
                    "",
                    predict_table(hw, problem, evaluated.schedule, evaluated.result),
                ]
            )
        )
    return EXIT_OK if evaluated.result.solution else EXIT_NO_SCHEDULE


def _read_ttnn_config(path: str, op: str | None) -> tuple[object, ImproveEntry | None]:
    """The config of ``--ttnn-config``: a JSON config, or one op (``--op``) of an ``improve -o`` file (JSON
    or Python, read without running it: ``accuracy/improve_configs.py``), with that op's entry."""
    from loom_explorer.accuracy.improve_configs import ImproveFileError, is_improve_file, read_entry

    try:
        text = Path(path).read_text(encoding="utf-8")
        if op is not None or path.endswith(".py") or is_improve_file(text):
            entry = read_entry(path, op, text)
            return entry.config, entry
        return finite_json(text), None
    except ImproveFileError as exc:
        raise InputError(f"--ttnn-config {exc}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise InputError(f"--ttnn-config {path}: {str(exc) or 'nested too deeply'}") from None


class _RecordedArgs(argparse.ArgumentParser):
    """The parser of an improve entry's ``predict_args``: a bad one is an InputError, never an exit."""

    def error(self, message: str) -> NoReturn:
        raise InputError(message)


def check_recorded_problem(
    req: PredictCommand, key: str, recorded: tuple[str, ...], hw: HardwareSpec, problem: Problem
) -> None:
    """``--ttnn-config FILE --op KEY`` costs the op's config on the problem ``improve`` chose it for, which the
    entry records as ``predict`` arguments (``recorded``): kernel, hardware, grid (the whole chip when not
    given), shape, formats, fidelity, fp32 accumulation, placements, bias, activation, program options
    (``--option``, e.g. the causal mask) and target must be the ones given (``hw`` and ``problem``, built
    with the config's own placements and compute block), or the command is refused naming the first that
    differs (InputError) rather than costing the config on another problem."""
    parser = _RecordedArgs(prog="predict_args", add_help=False)
    add_problem_args(parser)
    parser.add_argument("--grid", type=grid_size, default=None)
    where = f"--ttnn-config {req.ttnn_config} --op {key}"
    try:
        args = parser.parse_args(list(recorded))
    except InputError as exc:
        raise InputError(f"{where}: its predict_args cannot be read ({exc})") from None
    rerun = f"predict it with the op's own arguments: {' '.join(recorded)}"

    def refuse(flag: str, given: object, wanted: object) -> NoReturn:
        raise InputError(f"{where}: the config was chosen for {flag} {wanted}, not {given}; {rerun}")

    if args.kernel != problem.program.name:
        refuse("kernel", problem.program.name, args.kernel)
    if args.hw != hw.name:
        refuse("--hw", hw.name, args.hw)
    whole = (hw.grid.columns, hw.grid.rows)
    grids = [g or whole for g in (req.grid, args.grid)]
    if grids[0] != grids[1]:
        refuse("--grid", "x".join(map(str, grids[0])), "x".join(map(str, grids[1])))
    kept = ProblemRequest.from_args(args)
    try:
        _, wanted = dataclasses.replace(kept, kernel=req.problem.kernel, hw=req.problem.hw).build()
    except ValueError as exc:  # ProblemError, InputError: the recorded words do not make a problem
        raise InputError(f"{where}: its predict_args do not make a problem of {problem.program.name} ({exc})") from None

    given, chosen = _problem_flags(problem), _problem_flags(wanted)
    for flag, text in given.items():
        if text != chosen[flag]:
            refuse(flag, text, chosen[flag])


def _problem_flags(problem: Problem) -> dict[str, str]:
    """What each problem flag of ``predict`` says of ``problem``, as text to compare and to show."""

    def pairs(items: tuple[tuple[str, object], ...]) -> str:
        return ",".join(f"{k}={getattr(v, 'value', v)}" for k, v in sorted(items)) or "none"

    def on(flag: bool) -> str:
        return "on" if flag else "off"

    return {
        "--shape": problem.shape_text,
        "--dtype/--format": pairs(problem.formats),
        "--fidelity": problem.fidelity.value,
        "--fp32-acc": on(problem.fp32_acc),
        "--memory": pairs(problem.placements),
        "--bias": on("bias" in problem.enabled),
        "--activation": problem.activation or "none",
        "--option": ",".join(sorted(problem.options)) or "none",
        "--target": problem.target.value,
    }


# ------------------------------------------------------------------------------------------ accuracy


KERNELS = ("gemm", "flash_attention")  # the kernels accuracy and calibrate read measurements of


@dataclass(frozen=True, slots=True)
class AccuracyCommand:
    kernel: str
    data: str | None
    configs: str | None
    card_hw: tuple[str, ...]  # CARD=FILE
    record: bool
    skip_bad_rows: bool
    store: str | None
    json: bool
    cross_validate: bool
    constants: str | None  # --constants a,b: the constants the cross-validation refits


def parse_accuracy(args: argparse.Namespace) -> AccuracyCommand:
    return AccuracyCommand(
        args.kernel,
        args.data,
        args.configs,
        tuple(args.hw),
        args.record,
        args.skip_bad_rows,
        args.store,
        args.json,
        args.cross_validate,
        args.constants,
    )


def measurement_file(kernel: str, data: str | None, flags: dict[str, object]) -> str:
    """The measurement CSV for ``kernel``: ``--data``, or for flash_attention the shipped SDPA op times; GEMM
    options given with flash_attention are refused by name."""
    if kernel == "gemm":
        if data is None:
            raise InputError(
                "--data FILE is required for gemm (e.g. loom_explorer/data/published/gemm_flops_calibration.csv)"
            )
        return data
    given = [name for name, value in flags.items() if value]
    if given:
        raise InputError(
            f"{', '.join(given)}: GEMM options; --kernel flash_attention takes --data, --hw, --json, "
            "--skip-bad-rows and --cross-validate"
        )
    from loom_explorer.accuracy.sdpa_data import shipped_data

    return data or str(shipped_data())


def card_hardware(pins: tuple[str, ...]) -> dict[str, HardwareSpec]:
    """``--hw CARD=FILE`` options: the hardware file to predict one card's rows with (e.g. a calibrated one);
    the file must describe the same chip as the card's shipped file."""
    from loom_explorer.accuracy.gemm_data import CARDS

    chosen: dict[str, HardwareSpec] = {}
    for pin in pins:
        card, sep, name = pin.partition("=")
        if not sep or not name or card not in CARDS:
            raise HardwareError(f"--hw {pin!r}: expected CARD=FILE with CARD one of {', '.join(CARDS)}")
        hw, shipped = load_hardware(name), load_hardware(CARDS[card])
        if hw.arch is not shipped.arch:  # Arch members: one architecture or another
            raise HardwareError(
                f"--hw {pin!r}: {name} describes a {hw.arch.value} chip; card {card} is "
                f"{shipped.arch.value} ({CARDS[card]})"
            )
        chosen[card] = hw
    return chosen


def _rounded(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def _row_line(r: Row) -> str:
    """One row of the table, with the measurement file's own words (``source``) for card, kind, shape, dtype
    and fidelity, as the JSON rows have them."""
    predicted_ns, error_pct = _rounded(r.predicted_ns, 1), _rounded(r.error_pct)
    s = r.source
    pred = f"{predicted_ns / 1e3:>12.2f}" if predicted_ns else f"{'illegal':>12}"
    err = f"{error_pct:>6.1f}%" if error_pct is not None else f"{'-':>7}"
    return (
        f"{s['card']:<5} {s['config_kind']:<11} {s['M']:>6} {s['K']:>6} {s['N']:>6} {s['dtype']:<10} "
        f"{s['math_fidelity']:<6} {r.regime:<13} {r.measured_ns / 1e3:>11.2f} {pred} {err}"
    )


def _summary_line(name: str, s: Summary, width: int = 24) -> str:
    spearman = _rounded(s.spearman, 4)
    return (
        f"  {name:<{width}} n={s.n:<4} median |err| {pct(_rounded(s.median_abs_err_pct))}  "
        f"p90 {pct(_rounded(s.p90_abs_err_pct))}  Spearman {'-' if spearman is None else spearman}"
    )


def print_errors_by_kind(name: str, errors: ErrorsByKind) -> None:
    """One summary line for every row, then one per config kind."""
    print(_summary_line(name, errors.all, width=40))
    for kind, s in errors.by_kind.items():
        print(_summary_line(f"  {kind}", s, width=40))


def print_accuracy_tables(tables: AccuracyTables) -> None:
    print(
        f"{'card':<5} {'kind':<11} {'M':>6} {'K':>6} {'N':>6} {'dtype':<10} {'fidelity':<6} {'regime':<13} "
        f"{'measured us':>11} {'predicted us':>12} {'error':>7}"
    )
    for r in tables.rows:
        print(_row_line(r))
    print("\nsummary (every row):")
    print(_summary_line("all", tables.summary))
    for name, s in {**tables.by_card, **tables.by_regime}.items():
        print(_summary_line(name, s))
    print(
        "\nthe model beside a three-constant roofline fitted on the same rows (in sample: every row; "
        "cross-validated: leave one shape out)"
    )
    for c in tables.comparisons:
        print(
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
            print_errors_by_kind(f"{c.card} {label}", errors)
    if not any(c.model_cross_validated for c in tables.comparisons):
        print("  (the model's cross-validated error refits its constants once per shape: --cross-validate)")
    print(
        f"\nhand-tuned over automatic speedup: {len(tables.speedups)} pairs, "
        f"median |error| {pct(tables.speedup_median_abs_err_pct)}"
    )


def run_accuracy(req: AccuracyCommand) -> int:
    data = measurement_file(
        req.kernel,
        req.data,
        {"--configs": req.configs, "--record": req.record, "--constants": req.constants, "--store": req.store},
    )
    if req.kernel == "flash_attention":
        from loom_explorer.cli.sdpa_accuracy import run_sdpa_accuracy

        return run_sdpa_accuracy(data, card_hardware(req.card_hw), req.skip_bad_rows, req.cross_validate, req.json)
    from loom_explorer.accuracy.calibrate import calibration_notes, chosen_constants, start_values
    from loom_explorer.accuracy.cross_validation import cross_validate
    from loom_explorer.accuracy.gemm_data import (
        CARDS,
        Report,
        load_cases,
        predict_cases,
        unscored,
    )
    from loom_explorer.accuracy.progress import Progress
    from loom_explorer.accuracy.scoring import accuracy_json, accuracy_tables

    constants = chosen_constants(req.constants) if req.constants else None
    hardware = card_hardware(req.card_hw)
    cross_validated: dict[str, ErrorsByKind] = {}
    with Progress() as progress:
        cases, unusable = load_cases(data, req.configs, req.skip_bad_rows)
        predicted = predict_cases(cases, hardware, progress)
        report = Report(predicted.rows, unusable + predicted.skipped)
        for card in sorted({c.card for c in cases}) if req.cross_validate else ():
            name = dict(pin.split("=", 1) for pin in req.card_hw).get(card, CARDS[card])
            start = start_values(hardware.get(card) or load_hardware(name), name)
            # by default the constants the file says were fitted: the cross-validation of how it was made
            refit = constants or tuple(calibration_notes(name))
            cross_validated[card] = cross_validate(start, cases, progress=progress, constants=refit).errors
    if req.record:
        from loom_explorer.accuracy.gemm_data import report_measurements
        from loom_explorer.store import open_store

        with open_store(req.store) as store:
            store.record_many(report_measurements(report))
        say(f"recorded {len(report.rows)} measurements in {store.path}")
    tables = accuracy_tables(report, cross_validated)
    if req.json:
        print(json.dumps(accuracy_json(tables), indent=2))
    else:
        print_accuracy_tables(tables)
    not_scored = unscored(report)
    if not_scored:
        say_rows(f"could not score {len(not_scored)} rows:", not_scored)
    return EXIT_OK


# ----------------------------------------------------------------------------------------- calibrate


@dataclass(frozen=True, slots=True)
class CalibrateCommand:
    kernel: str
    hw: str
    data: str | None
    configs: str | None
    output: str
    force: bool
    skip_bad_rows: bool
    cross_validate: bool
    constants: str | None  # --constants a,b


def parse_calibrate(args: argparse.Namespace) -> CalibrateCommand:
    return CalibrateCommand(
        args.kernel,
        args.hw,
        args.data,
        args.configs,
        args.output,
        args.force,
        args.skip_bad_rows,
        args.cross_validate,
        args.constants,
    )


def run_calibrate(req: CalibrateCommand) -> int:
    from loom_explorer.accuracy.calibrate import (
        CalibrationError,
        calibrate,
        calibrated_yaml,
        chosen_constants,
        is_shipped,
        start_values,
        written_value,
    )
    from loom_explorer.accuracy.cross_validation import cross_validate
    from loom_explorer.accuracy.csv_input import refusal
    from loom_explorer.accuracy.gemm_data import load_cases
    from loom_explorer.accuracy.progress import Progress

    data = measurement_file(req.kernel, req.data, {"--configs": req.configs, "--constants": req.constants})
    constants = chosen_constants(req.constants)  # a bad name is refused before anything is read
    if is_shipped(req.output):
        raise InputError(f"-o {req.output}: calibration never writes a shipped hardware file; choose another path")
    check_target(req.output, force=req.force)  # a target write_new would refuse fails before the fit
    if req.kernel == "flash_attention":
        from loom_explorer.cli.sdpa_accuracy import run_sdpa_calibrate

        return run_sdpa_calibrate(req.hw, data, req.output, req.force, req.skip_bad_rows, req.cross_validate)
    hw = load_hardware(req.hw)
    # every row is checked before the fit: an unusable one stops it unless --skip-bad-rows leaves it out
    cases, unusable = load_cases(data, req.configs, skip_bad_rows=req.skip_bad_rows)
    if unusable and not req.skip_bad_rows:
        raise CalibrationError(refusal(unusable))
    if unusable:
        say_rows(f"skipped {len(unusable)} unusable rows (--skip-bad-rows):", unusable)
    with Progress() as progress:
        start = start_values(hw, req.hw)
        result = calibrate(hw, cases, progress=progress, start=start, constants=constants)
        cross_validated = (
            cross_validate(start, cases, progress=progress, constants=constants) if req.cross_validate else None
        )
    write_new(req.output, calibrated_yaml(req.hw, result, Path(data).name), force=req.force)
    print(f"calibrated {hw.name} on {result.rows} rows of {data}; wrote {req.output}")
    if start != hw:
        print(f"  (the fit starts from the values {req.hw} notes as those before its own calibration)")
    moved = [path for path in result.values if written_value(result, path) != result.given[path]]
    for path in result.values:
        print(f"  {path:<36} {result.shipped[path]:>10g} -> {written_value(result, path):g}")
    if not moved:
        print("  no constant moved: the file's values fit these rows best (the file written keeps every value)")
    assert result.before is not None and result.after is not None  # a GEMM calibration carries both
    print_errors_by_kind("given constants, in sample", result.before)
    print_errors_by_kind("fitted constants, in sample", result.after)
    if cross_validated:
        print_errors_by_kind(
            f"fitted, cross-validated ({cross_validated.folds} shapes, each left out once)", cross_validated.errors
        )
    return EXIT_OK


# -------------------------------------------------------------------------------------------- ingest


@dataclass(frozen=True, slots=True)
class IngestCommand:
    file: str
    hw: str | None
    dry_run: bool
    skip_bad_rows: bool
    store: str | None
    json: bool


def parse_ingest(args: argparse.Namespace) -> IngestCommand:
    return IngestCommand(args.file, args.hw, args.dry_run, args.skip_bad_rows, args.store, args.json)


def run_ingest(req: IngestCommand) -> int:
    from loom_explorer.accuracy.coverage import coverage_lines, coverage_of
    from loom_explorer.accuracy.ingest import choose_hardware, read_ops_perf, report_measurements, summary_json
    from loom_explorer.accuracy.progress import Progress
    from loom_explorer.store import open_store

    ids: list[int] = []
    store_path: Path | None = None
    with Progress() as progress:
        # the whole file is read and checked before anything is predicted or recorded
        report = read_ops_perf(req.file, skip_bad_rows=req.skip_bad_rows, progress=progress)
        hw_name, grid, chip_line = choose_hardware(report, req.hw) if report.ops else (None, None, "")
        measurements = report_measurements(report, hw_name, progress, grid) if hw_name and report.ops else []
        if not req.dry_run:
            with open_store(req.store) as store:
                ids = store.record_many(measurements)
                store_path = store.path
    if not req.dry_run:
        say(f"recorded {len(ids)} measurements in {store_path}")
    if report.bad:
        say_rows(f"skipped {len(report.bad)} unusable rows (--skip-bad-rows):", report.bad)
    coverage = coverage_of(report, measurements)
    if req.json:
        doc = summary_json(report)
        doc["chip"] = chip_line
        doc["predictions"] = [
            {
                "row": op.row,
                "hardware": m.hardware,
                "candidate": m.candidate,
                "predicted_ns": m.predicted_ns,
                "measured_ns": m.measured_ns,
                "note": m.note,
            }
            for op, m in zip(report.ops, measurements, strict=True)
        ]
        doc["coverage"] = coverage.as_json()
        print(json.dumps(doc, indent=2))
        return EXIT_OK
    print(
        f"{req.file}: {len(report.ops)} ops ingested, {len(report.skipped)} rows skipped"
        + (f"; predicted on {chip_line}" if report.ops else "")
    )
    for line in coverage_lines(coverage):
        print(f"  {line}")
    for op, m in zip(report.ops, measurements, strict=True):
        shape = ",".join(f"{k}={v}" for k, v in op.shape.items())
        predicted = f"{m.predicted_ns / 1e3:10.2f} us" if m.predicted_ns is not None else f"{'-':>13}"
        error = (
            f"{100 * (m.predicted_ns - m.measured_ns) / m.measured_ns:+6.1f}%"
            if m.predicted_ns is not None and m.measured_ns
            else ""
        )
        print(
            f"  row {op.row:<5} {op.kernel:<15} {shape:<34} {m.candidate:<36} measured "
            f"{op.device_kernel_ns / 1e3:10.2f} us  predicted {predicted} {error}"
        )
    for s in report.skipped:
        print(f"  skipped {s}")
    return EXIT_OK


def add_predict_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    predict = add_command(sub, "predict", Command(parse_predict, run_predict))
    add_problem_args(predict)
    predict.add_argument(
        "--ttnn-config",
        default=None,
        metavar="FILE",
        help="JSON in the ttnn constructor's argument names (see docs/accuracy.md), or a configs "
        "file of `improve -o` (.json or .py, read without running it) with --op",
    )
    predict.add_argument(
        "--op", default=None, metavar="KEY", help="the op of an `improve -o` configs file (as `improve` prints it)"
    )
    predict.add_argument(
        "--ttnn-default",
        action="store_true",
        help="what ttnn runs itself on DRAM-interleaved tensors (matmul auto-config, SDPA's "
        "32-element chunks, the element-wise and norm/softmax work split)",
    )
    predict.add_argument(
        "--grid", type=grid_size, default=None, metavar="XxY", help="restrict the device grid, e.g. 11x10"
    )


def add_accuracy_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    accuracy = add_command(sub, "accuracy", Command(parse_accuracy, run_accuracy))
    accuracy.add_argument(
        "--kernel", choices=KERNELS, default="gemm", help="gemm (default) or flash_attention (published SDPA op times)"
    )
    accuracy.add_argument(
        "--data",
        default=None,
        help="CSV in the format of loom_explorer/data/published/gemm_flops_calibration.csv "
        "(required for gemm), or of sdpa_op_times.csv for flash_attention (default: "
        "the shipped one)",
    )
    accuracy.add_argument(
        "--configs",
        default=None,
        help="CSV of the manual configs (format of loom_explorer/data/published/gemm_manual_configs.csv)",
    )
    accuracy.add_argument("--json", action="store_true")
    accuracy.add_argument(
        "--hw",
        action="append",
        default=[],
        metavar="CARD=FILE",
        help="predict one card's rows with this hardware file instead of the shipped one, "
        "e.g. p150=p150_fitted.yaml from `calibrate` (repeatable)",
    )
    accuracy.add_argument("--record", action="store_true", help="also record every row in the results store")
    accuracy.add_argument(
        "--skip-bad-rows",
        action="store_true",
        help="leave out rows with a bad cell or a wrong number of cells (listed) instead of refusing the file",
    )
    accuracy.add_argument(
        "--cross-validate",
        action="store_true",
        help="also the model's leave-one-shape-out error: the constants the hardware file "
        "notes as calibrated refitted without each shape, from their values before that "
        "fit, and that shape predicted",
    )
    accuracy.add_argument(
        "--constants",
        default=None,
        metavar="A,B",
        help="with --cross-validate: refit these constants instead (as calibrate --constants)",
    )
    add_store_arg(accuracy)
    calibrate = add_command(sub, "calibrate", Command(parse_calibrate, run_calibrate))
    calibrate.add_argument("--hw", required=True, help="the hardware file to start from (name or path)")
    calibrate.add_argument(
        "--kernel",
        choices=KERNELS,
        default="gemm",
        help="gemm (default: the matmul constants) or flash_attention (the attention "
        "constants, compute.sdpa_softmax_scale)",
    )
    calibrate.add_argument(
        "--data",
        default=None,
        help="CSV in the format of loom_explorer/data/published/gemm_flops_calibration.csv "
        "(required for gemm), or of sdpa_op_times.csv for flash_attention (default: "
        "the shipped one)",
    )
    calibrate.add_argument("--configs", default=None, help="CSV of the manual configs")
    calibrate.add_argument("-o", "--output", required=True, metavar="FILE", help="the new hardware YAML")
    calibrate.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    calibrate.add_argument(
        "--skip-bad-rows",
        action="store_true",
        help="fit without the unusable rows (a bad cell, a wrong number of cells, a manual row "
        "without its config; listed) instead of refusing to fit",
    )
    calibrate.add_argument(
        "--constants",
        default=None,
        metavar="A,B",
        help="fit only these constants (names as printed, e.g. dram.step_read_bytes_per_cycle); default all",
    )
    calibrate.add_argument(
        "--cross-validate",
        action="store_true",
        help="also the fit's leave-one-shape-out error (one more fit per shape; minutes)",
    )


def add_ingest_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ingest = add_command(sub, "ingest", Command(parse_ingest, run_ingest))
    ingest.add_argument("file", help="ops_perf_results_<timestamp>.csv from tt-metal's device profiler")
    ingest.add_argument(
        "--hw", default=None, help="hardware to predict on (default: from the report's DEVICE ARCH column)"
    )
    ingest.add_argument("--dry-run", action="store_true", help="do not record in the results store")
    ingest.add_argument("--json", action="store_true")
    ingest.add_argument(
        "--skip-bad-rows",
        action="store_true",
        help="skip rows with a bad number cell or a wrong number of cells (counted, grouped by "
        "reason) instead of refusing the file at the first",
    )
    add_store_arg(ingest)
