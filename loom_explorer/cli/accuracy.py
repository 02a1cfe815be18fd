"""The model against TTNN and measurements: ``predict`` (a TTNN config as the model sees it), ``accuracy``
(the error table on a kernel's published measurements), ``calibrate`` (fit the hardware file's estimated
constants) and ``ingest`` (a device-profiler report, each op predicted with its own config). The commands'
work is the accuracy layer's (``accuracy/predict.py``, ``accuracy/published_runs.py``,
``accuracy/ingest_run.py``); this module parses their flags and prints what they find."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from loom_explorer.accuracy.capture_cv import FOLDS, GROUPINGS
from loom_explorer.accuracy.capture_report import CaptureAccuracyRequest
from loom_explorer.accuracy.published_runs import AccuracyRequest, CalibrateRequest
from loom_explorer.cli.common import (
    Command,
    InputError,
    ProblemRequest,
    add_command,
    add_problem_args,
    add_store_arg,
    grid_size,
    say,
    say_rows,
)
from loom_explorer.errors import EXIT_NO_SCHEDULE, EXIT_OK
from loom_explorer.program import load_program
from loom_explorer.report import predict_table, result_json

if TYPE_CHECKING:
    from loom_explorer.accuracy.csv_input import RowIssue
    from loom_explorer.accuracy.predict import RecordedProblem


class _Terminal:
    """Where the accuracy runs report (``accuracy/published.py``'s ``Console``): the output on stdout, status
    lines on stderr."""

    def out(self, text: str) -> None:
        print(text)

    def say(self, text: str) -> None:
        say(text)

    def say_rows(self, title: str, issues: Sequence[RowIssue]) -> None:
        say_rows(title, issues)


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


def run_predict(req: PredictCommand) -> int:
    from loom_explorer.accuracy.ingest import calibrated_ns
    from loom_explorer.accuracy.predict import (
        check_recorded_problem,
        config_flags,
        evaluate_given,
        given_config,
        restricted,
    )
    from loom_explorer.accuracy.term_calibration import shipped_scales
    from loom_explorer.targets.ttnn.config_text import config_call, config_class, config_fields, op_name
    from loom_explorer.targets.ttnn.op import ttnn_op_of

    given = given_config(load_program(req.problem.kernel), req.ttnn_config, req.op)
    problem_request = req.problem
    p = req.problem
    flags = None if given is None else config_flags(given, p.memory, p.fidelity, p.fp32_acc, str(req.ttnn_config))
    if flags is not None:
        problem_request = dataclasses.replace(
            req.problem, memory=flags.memory, fidelity=flags.fidelity, fp32_acc=flags.fp32_acc
        )
    hw, problem = problem_request.build()
    entry = given.entry if given is not None else None
    if entry is not None and entry.predict_args is not None:
        where = f"--ttnn-config {req.ttnn_config} --op {entry.key}"
        check_recorded_problem(where, req.grid, _recorded_problem(req, where, entry.predict_args), hw, problem)
    hw = restricted(hw, req.grid)
    cfg, evaluated = evaluate_given(hw, problem, given, req.ttnn_config)
    source = req.ttnn_config or "ttnn default"
    op = op_name(cfg, ttnn_op_of(evaluated.schedule.problem, evaluated.schedule.candidate))
    solution = evaluated.result.solution
    calibrated_us = calibrated_ns(shipped_scales(), problem.program, hw, solution.breakdown) / 1e3 if solution else None
    if req.json:
        print(
            json.dumps(
                {
                    "ttnn_config_source": source,
                    "ttnn_op": op,
                    "ttnn_config_class": config_class(cfg),
                    "ttnn_config_fields": config_fields(cfg),
                    **result_json(hw, evaluated.schedule, evaluated.result),
                    "calibrated_latency_us": calibrated_us,
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
                    *([f"calibrated on real captures: {calibrated_us:,.2f} us"] if calibrated_us else []),
                ]
            )
        )
    return EXIT_OK if evaluated.result.solution else EXIT_NO_SCHEDULE


class _RecordedArgs(argparse.ArgumentParser):
    """The parser of an improve entry's ``predict_args``: a bad one is an InputError, never an exit."""

    def error(self, message: str) -> NoReturn:
        raise InputError(message)


def _recorded_problem(req: PredictCommand, where: str, recorded: tuple[str, ...]) -> RecordedProblem:
    """The problem an improve entry's ``predict_args`` (``recorded``) name, read with ``predict``'s own flags;
    its ``build`` makes it with the kernel and hardware given (``accuracy/predict.py``:
    ``check_recorded_problem``)."""
    from loom_explorer.accuracy.predict import RecordedProblem

    parser = _RecordedArgs(prog="predict_args", add_help=False)
    add_problem_args(parser)
    parser.add_argument("--grid", type=grid_size, default=None)
    try:
        args = parser.parse_args(list(recorded))
    except InputError as exc:
        raise InputError(f"{where}: its predict_args cannot be read ({exc})") from None
    kept = dataclasses.replace(ProblemRequest.from_args(args), kernel=req.problem.kernel, hw=req.problem.hw)
    return RecordedProblem(recorded, args.kernel, args.hw, args.grid, lambda: kept.build()[1])


# ------------------------------------------------------------------------------------------ accuracy


@dataclass(frozen=True, slots=True)
class CollectiveAccuracyRequest:
    """``accuracy --collectives``: the collective model judged leave one topology out."""

    json: bool


_PUBLISHED_FLAGS = ("data", "configs", "hw", "record", "cross_validate", "constants", "skip_bad_rows")


def _given(args: argparse.Namespace, *names: str) -> list[str]:
    """The flags among ``names`` (argparse destinations) that the command line set, as ``--flag-name``."""
    return ["--" + name.replace("_", "-") for name in names if getattr(args, name)]


def parse_accuracy(args: argparse.Namespace) -> AccuracyRequest | CaptureAccuracyRequest | CollectiveAccuracyRequest:
    if args.collectives:
        given = _given(args, *_PUBLISHED_FLAGS, "by", "factors")
        if given or args.folds != "capture":
            flags = ", ".join(given) or "--folds"
            raise InputError(f"--collectives judges the collective model on the shipped rows; it takes no {flags}")
        return CollectiveAccuracyRequest(args.json)
    if args.by is not None:
        given = _given(args, *_PUBLISHED_FLAGS)
        if given:
            raise InputError(
                f"--by judges the capture calibration on the shipped captures; it takes no {', '.join(given)}"
            )
        return CaptureAccuracyRequest(args.by, args.folds, args.json, _factors(args.factors))
    if args.folds != "capture" or args.factors is not None:
        raise InputError("--folds and --factors go with --by (the capture calibration's cross-validation)")
    return AccuracyRequest(
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


def _factors(text: str | None) -> tuple[str, ...]:
    """``--factors kernel,arch``: the levels with their own factor (none given: the shipped fit's)."""
    from loom_explorer.accuracy.term_calibration import FACTORS, SHIPPED_FACTORS

    if text is None:
        return SHIPPED_FACTORS
    names = tuple(n.strip() for n in text.split(",") if n.strip() and n.strip() != "none")
    unknown = [n for n in names if n not in FACTORS]
    if unknown:
        raise InputError(f"--factors {text!r}: {', '.join(unknown)} is not one of {', '.join(FACTORS)} (or none)")
    return names


def run_accuracy(req: AccuracyRequest | CaptureAccuracyRequest | CollectiveAccuracyRequest) -> int:
    if isinstance(req, CollectiveAccuracyRequest):
        from loom_explorer.accuracy.collective_accuracy import accuracy_json, accuracy_lines, collective_accuracy

        result = collective_accuracy()
        print(json.dumps(accuracy_json(result), indent=2) if req.json else "\n".join(accuracy_lines(result)))
        return EXIT_OK
    if isinstance(req, CaptureAccuracyRequest):
        from loom_explorer.accuracy.capture_report import run_capture_accuracy

        run_capture_accuracy(req, _Terminal())
        return EXIT_OK
    from loom_explorer.accuracy.published_runs import run_accuracy as accuracy

    accuracy(req, _Terminal())
    return EXIT_OK


# ----------------------------------------------------------------------------------------- calibrate


def parse_calibrate(args: argparse.Namespace) -> CalibrateRequest:
    return CalibrateRequest(
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


def run_calibrate(req: CalibrateRequest) -> int:
    from loom_explorer.accuracy.published_runs import run_calibrate as calibrate

    calibrate(req, _Terminal())
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
    start_signpost: str | None = None
    end_signpost: str | None = None
    trace_replays: str = "each"
    merge_devices: bool = False
    grid: tuple[int, int] | None = None
    uncalibrated: bool = False
    mesh: str | None = None


def parse_ingest(args: argparse.Namespace) -> IngestCommand:
    return IngestCommand(
        args.file,
        args.hw,
        args.dry_run,
        args.skip_bad_rows,
        args.store,
        args.json,
        args.start_signpost,
        args.end_signpost,
        args.trace_replays,
        args.merge_devices,
        args.grid,
        args.uncalibrated,
        args.mesh,
    )


def run_ingest(req: IngestCommand) -> int:
    from collections import Counter

    from loom_explorer.accuracy.capture_window import CaptureWindow
    from loom_explorer.accuracy.coverage import coverage_lines
    from loom_explorer.accuracy.ingest_run import ingest, ingest_json
    from loom_explorer.accuracy.op_coverage import op_code_lines

    window = CaptureWindow(
        req.start_signpost, req.end_signpost, "once" if req.trace_replays == "once" else "each", req.merge_devices
    )
    done = ingest(
        req.file, req.hw, req.dry_run, req.skip_bad_rows, req.store, window, req.grid, req.uncalibrated, req.mesh
    )
    report = done.report
    if not req.dry_run:
        say(f"recorded {done.recorded} measurements in {done.store}")
    if report.bad:
        say_rows(f"skipped {len(report.bad)} unusable rows (--skip-bad-rows):", report.bad)
    if req.json:
        print(json.dumps(ingest_json(done), indent=2))
        return EXIT_OK
    print(
        f"{req.file}: {len(report.ops)} ops"
        + (f" and {len(report.collectives)} collective rows" if report.collectives else "")
        + f" ingested, {len(report.skipped)} rows skipped"
        + (f"; predicted on {done.chip}" if report.ops or report.collectives else "")
    )
    if report.left_out:
        flags = f" ({window.describe()})" if window.describe() else ""
        print(f"  {len(report.left_out)} rows left out of the analysis{flags}:")
        for kind, n in Counter(x.kind for x in report.left_out).most_common():
            first = next(x for x in report.left_out if x.kind == kind)
            print(f"    {n:>6} {kind}, e.g. row {first.row}: {first.reason}")
    for line in coverage_lines(done.coverage):
        print(f"  {line}")
    print("  coverage by op code (most device time first):")
    for line in op_code_lines(done.op_codes):
        print(f"    {line}")
    for op, m in zip(report.ops, done.measurements, strict=True):
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
    for c, m in done.collectives.predicted:
        predicted_us = (m.predicted_ns or 0.0) / 1e3
        print(
            f"  row {c.row:<5} {m.kernel:<15} {c.reading.describe():<34} device {c.device_id!s:<4} measured "
            f"{c.device_kernel_ns / 1e3:10.2f} us  predicted {predicted_us:10.2f} us "
            f"{100 * (m.predicted_ns or 0.0) / c.device_kernel_ns - 100:+6.1f}%"
        )
    for c, why in done.collectives.skipped:
        print(f"  skipped row {c.row} ({c.op_code}): {why}")
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
    from loom_explorer.accuracy.op_mapping import published_kernels

    published = published_kernels()  # the kernels accuracy and calibrate read measurements of, the default first
    kernels = tuple(p.kernel for p in published)
    data_help = "CSV " + ", or ".join(p.data_help for p in published)
    accuracy = add_command(sub, "accuracy", Command(parse_accuracy, run_accuracy))
    accuracy.add_argument(
        "--kernel", choices=kernels, default=kernels[0], help=" or ".join(p.kernel_help for p in published)
    )
    accuracy.add_argument(
        "--by",
        choices=GROUPINGS,
        default=None,
        help="instead: the capture calibration judged on the shipped real-model captures it was not fitted on, "
        "per capture, kernel family or chip, beside the uncalibrated model, a fitted roofline and a learned "
        "regressor",
    )
    accuracy.add_argument(
        "--collectives",
        action="store_true",
        help="instead: the collective model (all-gather, reduce-scatter) on the published collective times and the "
        "captures' collective rows, leave one topology out, beside first principles and a naive baseline",
    )
    accuracy.add_argument(
        "--folds",
        choices=FOLDS,
        default="capture",
        help="with --by: what each fit leaves out (default: one capture; network, shapes, or a chip architecture)",
    )
    accuracy.add_argument(
        "--factors",
        default=None,
        metavar="kernel,arch",
        help="with --by: fit a kernel's and/or an architecture's own factor beside the family's (default: "
        "none, as the shipped calibration; 'none' says so)",
    )
    accuracy.add_argument("--data", default=None, help=data_help)
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
        "--kernel", choices=kernels, default=kernels[0], help=" or ".join(p.calibrate_help for p in published)
    )
    calibrate.add_argument("--data", default=None, help=data_help)
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
    ingest.add_argument(
        "--grid",
        type=grid_size,
        default=None,
        metavar="XxY",
        help="the run's worker grid (columns x rows), for a capture that does not tell it, e.g. 5x4",
    )
    ingest.add_argument(
        "--mesh",
        default=None,
        metavar="MESH",
        help="the mesh a multi-device capture ran on, for its collective ops (default: told from the capture: the "
        "one shipped mesh of its architecture, device count and rings)",
    )
    ingest.add_argument(
        "--uncalibrated",
        action="store_true",
        help="predict with the hardware files' costs as they are, not the capture calibration's factors",
    )
    ingest.add_argument("--dry-run", action="store_true", help="do not record in the results store")
    ingest.add_argument("--json", action="store_true")
    ingest.add_argument(
        "--skip-bad-rows",
        action="store_true",
        help="skip rows with a bad number cell or a wrong number of cells (counted, grouped by "
        "reason) instead of refusing the file at the first",
    )
    ingest.add_argument(
        "--start-signpost",
        default=None,
        metavar="NAME",
        help="analyse only the rows after this signpost's first occurrence (e.g. PERF_DECODE), as tt-perf-report",
    )
    ingest.add_argument(
        "--end-signpost",
        default=None,
        metavar="NAME",
        help="analyse only the rows before this signpost's first occurrence after the start (the next one when "
        "it is the start's name)",
    )
    ingest.add_argument(
        "--trace-replays",
        choices=("each", "once"),
        default="each",
        help="count a trace's ops in every replay session (each, the default) or in its first only (once)",
    )
    ingest.add_argument(
        "--merge-devices",
        action="store_true",
        help="merge the rows of one op on many devices into one (the slowest; a collective's mean), "
        "as tt-perf-report does",
    )
    add_store_arg(ingest)
