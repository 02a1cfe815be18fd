"""``loom-explorer``: solve, explore, export, verify and measure schedules for Tenstorrent chips.

Subcommands list hardware and kernels, solve a problem on a chip, route its NoC traffic, export and verify
kernels, predict and score TTNN configs against measurements, deploy, and serve the explorer.

Exit status: 0 when at least one candidate has a schedule, 3 when none has (explanations are still
printed), 1 when ``verify`` finds a numerical or traffic mismatch, 2 for bad input (unknown hardware,
malformed YAML, bad shape, unknown pin, pin outside its domain, a schedule an export format cannot
express, ...), with a message naming the culprit, 130 on Ctrl-C (``solve`` prints what it has proven, the
unfinished candidates marked ``interrupted``; ``solve/interrupt.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from loom_explorer.accuracy.calibrate import CalibrationError
from loom_explorer.accuracy.gemm_data import DataError
from loom_explorer.accuracy.ingest import IngestError
from loom_explorer.accuracy.ttnn_configs import ConfigError
from loom_explorer.deploy.runner import RunnerError
from loom_explorer.deploy.simulator import SimulationError
from loom_explorer.export.files import OutputError, check_target, write_new
from loom_explorer.export.formats import EXPORT_FORMATS, export_text
from loom_explorer.export.npe_workload import npe_workload
from loom_explorer.export.schedule_json import ScheduleFileError
from loom_explorer.export.ttlang import ExportError
from loom_explorer.export.ttnn_config import ttnn_equivalent
from loom_explorer.hardware import HardwareError, list_hardware, load_hardware
from loom_explorer.hardware.schema import (
    HardwareSpec,
    parse_data_format,
    parse_fidelity,
)
from loom_explorer.model.expr import evaluate
from loom_explorer.problem import KernelTarget, Placement, Problem, ProblemError, make_problem
from loom_explorer.program import (
    KernelError,
    ProgramStructureError,
    list_kernels,
    load_program,
)
from loom_explorer.report import (
    result_json,
    solve_json,
    solve_table,
    traffic_json,
    traffic_table,
)
from loom_explorer.result import CandidateResult
from loom_explorer.solve.cpsat import ModelRangeError
from loom_explorer.solve.interrupt import STOP, Interrupted, stop_on_sigint
from loom_explorer.solve.pins import PinError, parse_pins
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.store import StoreError
from loom_explorer.sweep.ops import OpsError
from loom_explorer.sweep.run import SweepError
from loom_explorer.traffic import schedule_transfers, traffic_report

EXIT_OK, EXIT_VERIFY_FAILED, EXIT_BAD_INPUT, EXIT_NO_SCHEDULE = 0, 1, 2, 3
EXIT_INTERRUPTED = 130


class InputError(ValueError):
    pass


# Numeric flags are checked by their argparse ``type``, so that a bad value is refused (exit 2) with the flag
# named before any work starts. Bounds: seconds are finite, > 0 and at most threading.TIMEOUT_MAX (the
# longest wait the platform supports); CP-SAT workers and parallel models at most 1024 threads (each holds a
# copy of the model); CP-SAT's seed is a 32-bit integer; a local sweep runs at most 4 worker processes per
# core (each is single-threaded and holds its own Python, OR-Tools and models: more only adds memory); a TCP
# port is 0..65535.
MAX_THREADS = 1024
MAX_SWEEP_WORKERS = 4 * (os.cpu_count() or 1)
MAX_WHOLE = (1 << 63) - 1


def seconds(text: str) -> float:
    """A flag's duration: a finite number of seconds > 0 (``nan``, ``inf``, 0 and negatives are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and 0 < value <= threading.TIMEOUT_MAX):
        raise argparse.ArgumentTypeError(f"{text}: must be a finite number > 0 "
                                         f"(seconds, at most {threading.TIMEOUT_MAX:.3g})")
    return value


def whole(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """argparse ``type``: a whole number (ASCII digits) in ``minimum..maximum``."""
    top = MAX_WHOLE if maximum is None else maximum

    def parse(text: str) -> int:
        t = text.strip()
        if re.fullmatch(r"[+-]?[0-9]{1,19}", t) and minimum <= int(t) <= top:
            return int(t)
        span = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise argparse.ArgumentTypeError(f"{text}: must be a whole number {span}")

    parse.__name__ = f"whole number {minimum}..{top}"
    return parse


def grid_size(text: str) -> str:
    """``COLUMNSxROWS`` of whole numbers >= 1, e.g. ``11x10`` (returned as given)."""
    if not re.fullmatch(r"\s*[0-9]{1,4}\s*[xX]\s*[0-9]{1,4}\s*", text) or \
            min(int(x) for x in text.lower().split("x")) < 1:
        raise argparse.ArgumentTypeError(f"{text}: expected COLUMNSxROWS of whole numbers >= 1, e.g. 11x10")
    return text


def _pairs(items: Sequence[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise InputError(f"--{what} {item!r} is not TENSOR=VALUE")
        out[key.strip()] = value.strip()
    return out


def cmd_hw(args: argparse.Namespace) -> int:
    if args.action == "list":
        for name in list_hardware():
            hw = load_hardware(name)
            print(f"{name:<18} {hw.grid.columns}x{hw.grid.rows} cores  {hw.clock_ghz} GHz  "
                  f"L1 {hw.l1.usable_bytes:,} B usable  {hw.dram.channels} DRAM channels  {hw.description}")
        return EXIT_OK
    if not args.name:
        raise InputError("hw show needs a hardware name or YAML path")
    hw = load_hardware(args.name)
    if args.json:
        print(json.dumps(hw.model_dump(mode="json"), indent=2))
    else:
        print(f"{hw.name}: {hw.description}")
        for key, value in hw.model_dump(mode="json").items():
            if isinstance(value, dict):
                print(f"  {key}:")
                for k, v in value.items():
                    text = v if not isinstance(v, list) or len(v) < 10 else f"[{len(v)} entries]"
                    print(f"    {k}: {text}")
            else:
                print(f"  {key}: {value}")
    return EXIT_OK


def cmd_kernels(args: argparse.Namespace) -> int:
    names = list_kernels()
    width = max(map(len, names), default=0) + 1
    for name in names:
        program = load_program(name)
        dims = ", ".join(f"{d.name} ({d.kind}" + (f", groups {d.group_of}" if d.group_of else "")
                         + ("" if d.spread else ", not spread") + ")" for d in program.dims)
        print(f"{name:<{width}} {program.description}\n{'':<{width}} dims: {dims}")
    return EXIT_OK


def _problem(args: argparse.Namespace) -> tuple[HardwareSpec, Problem]:
    hw = load_hardware(args.hw)
    program = load_program(args.kernel)
    try:
        dtype = parse_data_format(args.dtype)
        fidelity = parse_fidelity(args.fidelity or "hifi2")
        formats = {k: parse_data_format(v) for k, v in _pairs(args.format, "format").items()}
        placements = {}
        for tensor, where in _pairs(args.memory, "memory").items():
            try:
                placements[tensor] = Placement(where)
            except ValueError:
                raise InputError(f"--memory {tensor}={where}: expected one of "
                                 f"{', '.join(p.value for p in Placement)}") from None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    problem = make_problem(
        program, args.shape, dtype, fidelity, formats=formats,
        placements=placements, fp32_acc=args.fp32_acc, enabled={"bias"} if args.bias else set(),
        activation=args.activation, options={"causal"} if args.causal else set(),
        target=_target(args),
    )
    return hw, problem


def _target(args: argparse.Namespace) -> KernelTarget:
    """``--target``, else the kernels the command writes: ``export --format ttlang`` solves for the TT-Lang
    kernels' buffers, everything else for TTNN's."""
    chosen = getattr(args, "target", None)
    if chosen is not None:
        if getattr(args, "output_format", None) == "ttlang" and args.command == "export" and chosen != "ttlang":
            raise InputError("--target ttnn contradicts --format ttlang: a TT-Lang export is solved for the "
                             "TT-Lang kernels' buffers")
        return KernelTarget(chosen)
    return KernelTarget.ttlang if args.command == "export" and getattr(args, "output_format", None) == "ttlang" \
        else KernelTarget.ttnn


def _deadline(args: argparse.Namespace) -> float:
    """When building the models must be done: the command's start plus ``--time-limit`` (``Session``)."""
    return getattr(args, "started", time.monotonic()) + args.time_limit


def _options(args: argparse.Namespace, top_k: int = 1, fastest: int | None = None) -> SolveOptions:
    return SolveOptions(time_limit_seconds=args.time_limit, workers_per_model=args.workers,
                        parallel_models=args.parallel, top_k=top_k, seed=args.seed, fastest=fastest)


def cmd_solve(args: argparse.Namespace) -> int:
    hw, problem = _problem(args)
    pins = parse_pins(args.pin)
    session = Session(hw, problem, noc_bound=not args.no_noc_bound, deadline=_deadline(args))
    options = _options(args, args.alternatives, args.fastest or None)
    if not session.schedules:
        placed = ", ".join(f"{t}={p.value}" for t, p in problem.placements) or "none"
        print(f"loom-explorer: no mapping candidate fits this problem (L1 placements: {placed}); "
              "see docs/model.md section 2", file=sys.stderr)
    else:
        _say_solving(len(args.candidate) or len(session.schedules))
    results = session.solve(pins, options, candidates=args.candidate or None)
    shown = results[: args.top] if args.top else results
    schedules = {s.candidate.name: s for s in session.schedules}
    if args.json:
        print(json.dumps(solve_json(hw, problem, schedules, shown, pins), indent=2))
    else:
        print(solve_table(hw, problem, schedules, shown))
    if session.stop.stopped:
        print("loom-explorer: interrupted: candidates marked 'interrupted' did not finish", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK if any(r.solution for r in results) else EXIT_NO_SCHEDULE


def _say_solving(candidates: int) -> None:
    """The progress line of a command whose searches Ctrl-C stops (``_STOPPABLE``)."""
    print(f"loom-explorer: solving {candidates} candidates (Ctrl-C stops and prints what is proven)",
          file=sys.stderr, flush=True)


def cmd_traffic(args: argparse.Namespace) -> int:
    if args.npe:
        check_target(args.npe, args.force)  # an unwritable --npe fails before the solve
    hw, problem = _problem(args)
    pins = parse_pins(args.pin)
    session = Session(hw, problem, noc_bound=not args.no_noc_bound, deadline=_deadline(args))
    # only the best schedule is routed: the other candidates need only be proven no faster
    results = session.solve(pins, _options(args, fastest=1), candidates=[args.candidate] if args.candidate else None)
    if session.stop.stopped:
        return _report_interrupted(results, "traffic")
    best = _best(results)
    if best is None or best.solution is None:
        return _report_no_schedule(results, "traffic")
    schedule = session.schedule(best.candidate_name)
    values = best.solution.values()
    transfers = schedule_transfers(hw, schedule, values)
    report = traffic_report(hw, transfers, best.solution.latency_cycles)
    model_bound = evaluate(schedule.noc_bound_cycles, values)
    if args.npe:
        write_new(args.npe, json.dumps(npe_workload(hw, transfers), indent=1) + "\n", force=args.force)
    if args.json:
        print(json.dumps(traffic_json(hw, best.candidate_name, report, model_bound), indent=2))
    else:
        print(traffic_table(hw, problem, best.candidate_name, report, model_bound, args.links))
        if args.npe:
            print(f"\ntt-npe workload ({len(transfers)} transfers) written to {args.npe}")
    return EXIT_OK


def _best(results: list[CandidateResult]) -> CandidateResult | None:
    return next((r for r in results if r.solution), None)


def _report_interrupted(results: list[CandidateResult], what: str) -> int:
    """Ctrl-C during the solve: every candidate's status so far on stderr (a schedule shown for an
    ``interrupted`` one is not proven optimal); nothing is routed or written."""
    for r in results:
        found = f", best found {r.solution.latency_cycles:,} cycles" if r.solution else ""
        print(f"  {r.candidate_name}: {r.status}{found}", file=sys.stderr)
    print(f"loom-explorer: interrupted before the solve finished, so no {what}", file=sys.stderr)
    return EXIT_INTERRUPTED


def _report_no_schedule(results: list[CandidateResult], what: str) -> int:
    for r in results:
        print(f"  {r.candidate_name}: {r.conflict.message if r.conflict else r.status}", file=sys.stderr)
    print(f"loom-explorer: no schedule, so no {what}", file=sys.stderr)
    return EXIT_NO_SCHEDULE


def cmd_export(args: argparse.Namespace) -> int:
    check_target(args.output, args.force)  # an unwritable -o fails before the solve
    hw, problem = _problem(args)
    options = _options(args)
    session = Session(hw, problem, noc_bound=not args.no_noc_bound, deadline=_deadline(args))
    results = session.solve(parse_pins(args.pin), options, candidates=[args.candidate] if args.candidate else None)
    if session.stop.stopped:
        return _report_interrupted(results, "export")
    best = _best(results)
    if best is None:
        return _report_no_schedule(results, "export")
    if args.output_format in ("ttnn", "ttlang") and not args.candidate:
        best = _best_exportable(session, results, args.output_format)
    text = export_text(args.output_format, hw, args.hw, args.kernel, problem, session.schedule(best.candidate_name),
                       best, options, noc_bound=not args.no_noc_bound)
    write_new(args.output, text, force=args.force)
    assert best.solution is not None
    print(f"loom-explorer: wrote {args.output} ({args.output_format}): {best.candidate_name}, predicted "
          f"{hw.cycles_to_us(best.solution.latency_cycles):,.2f} us", file=sys.stderr)
    return EXIT_OK


def _best_exportable(session: Session, results: list[CandidateResult], fmt: str = "ttnn") -> CandidateResult:
    """The best candidate the format can express (``ttnn``: TTNN has a program config for it; ``ttlang``: the
    TT-Lang generator writes it), saying so when it is not the best overall."""
    from loom_explorer.export.ttlang import unsupported_reason

    what = "a TTNN program config" if fmt == "ttnn" else "a TT-Lang export"
    reasons = []
    for r in results:
        if r.solution is None:
            continue
        schedule = session.schedule(r.candidate_name)
        try:
            if fmt == "ttnn":
                ttnn_equivalent(schedule, r.solution.values())
            elif (why := unsupported_reason(schedule)) is not None:
                raise ExportError(why)
        except ExportError as exc:
            reasons.append(str(exc))
            continue
        if reasons:
            print(f"loom-explorer: exporting {r.candidate_name}, the best candidate with {what}; "
                  f"better ones have none ({reasons[0]})", file=sys.stderr)
        return r
    raise ExportError(f"no candidate with a schedule has {what}: " + "; ".join(reasons[:3]))


def cmd_verify(args: argparse.Namespace) -> int:
    from loom_explorer.deploy.verify import verify_kernel_file

    report = verify_kernel_file(args.file, args.timeout, hw_file=args.hw, kernel_file=args.kernel,
                                compile_it=not args.no_compile)
    if args.record:
        from loom_explorer.deploy.runner import run_measurement, simulator_run
        from loom_explorer.store import open_store

        with open_store(args.store) as store:
            row = store.record(run_measurement(report.document, simulator_run(report)))
        print(f"recorded as measurement {row} in {store.path}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(f"{args.file}: candidate {report.candidate}, simulated in {report.seconds:.1f} s")
        print(f"  numerics: PCC {report.pcc:.6f} (needs >= 0.999): {'ok' if report.numerics_ok else 'FAILED'}")
        sim, model = report.simulated, report.predicted
        print(f"  traffic: {'equal to the model' if report.traffic_equal else 'DIFFERS from the model'}: "
              f"DRAM tiles read {dict(sorted(sim.dram_read_tiles.items()))}, written "
              f"{dict(sorted(sim.dram_written_tiles.items()))}, pipe tiles received "
              f"{sum(sim.pipe_received_tiles.values()):,} over {len(sim.pipe_received_tiles)} cores "
              f"(model: {sum(model.pipe_received_tiles.values()):,} over {len(model.pipe_received_tiles)})")
        for line in report.differences():
            print(f"    {line}")
        if report.compiled is None:
            print(f"  compile: {report.compile_note}")
        elif report.compiled.passed:
            print(f"  compile: ok ({report.compiled.compiler}, compile-only; circular buffers "
                  f"{report.compiled.cb_l1_bytes:,} B of the {report.compiled.l1_budget_bytes:,} B budget)")
        else:
            print(f"  compile: FAILED ({report.compiled.compiler}):")
            print(textwrap.indent(report.compiled.message, "    "))
    return EXIT_OK if report.passed else EXIT_VERIFY_FAILED


def cmd_toolchain(args: argparse.Namespace) -> int:
    from loom_explorer.deploy import toolchain as tc

    root = Path(args.path).expanduser() if args.path else None
    if args.action == "status":
        found = tc.find_toolchain(root)
        if found is None:
            print(f"not installed (expected at {root or tc.default_root()}); run `loom-explorer toolchain install`")
            return EXIT_VERIFY_FAILED
        print(f"{found.root}: tt-lang {tc.TT_LANG_VERSION}, ttnn {tc.TTNN_VERSION}, torch {tc.TORCH_VERSION} "
              f"on Python {tc.PYTHON_VERSION} ({found.python})")
        return EXIT_OK
    if args.action == "install" and not args.force and tc.find_toolchain(root) is not None:
        print(f"already installed: {root or tc.default_root()} (--force re-creates it)")
        return EXIT_OK
    try:
        tc.install_toolchain(root, Path(args.python) if args.python else None,
                             log=lambda line: print(line, file=sys.stderr))
    except tc.ToolchainError as exc:
        print(f"loom-explorer: toolchain: {exc}", file=sys.stderr)
        return EXIT_VERIFY_FAILED
    return EXIT_OK


def cmd_predict(args: argparse.Namespace) -> int:
    from loom_explorer.accuracy.sdpa_configs import (
        evaluate_sdpa_config,
        evaluate_ttnn_default,
        parse_sdpa_config,
    )
    from loom_explorer.accuracy.ttnn_configs import (
        evaluate_config,
        parse_config,
        placements,
    )
    from loom_explorer.hardware.grid import restrict_grid
    from loom_explorer.program.attention import is_attention

    if bool(args.ttnn_config) == bool(args.ttnn_default):
        raise InputError("predict needs exactly one of --ttnn-config FILE and --ttnn-default")
    attention = is_attention(load_program(args.kernel))
    cfg: object = None
    if args.ttnn_config:
        try:
            raw = _finite_json(Path(args.ttnn_config).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as exc:
            raise InputError(f"--ttnn-config {args.ttnn_config}: {exc or 'nested too deeply'}") from None
        if attention:
            cfg = parse_sdpa_config(raw, args.ttnn_config)
        else:
            cfg = parse_config(raw, args.ttnn_config)
            args.memory = [*args.memory, *(f"{t}={p.value}" for t, p in placements(cfg).items())]
            _apply_compute_config(args, cfg.compute, args.ttnn_config)
    hw, problem = _problem(args)
    if args.grid:
        try:
            columns, rows = (int(x) for x in args.grid.lower().split("x"))
        except ValueError:
            raise InputError(f"--grid {args.grid}: expected COLUMNSxROWS, e.g. 11x10") from None
        try:
            hw = restrict_grid(hw, columns, rows)
        except ValueError as exc:
            raise InputError(f"--grid {args.grid}: {exc}") from None
    if cfg is None:
        cfg, evaluated = evaluate_ttnn_default(hw, problem)
    elif attention:
        evaluated = evaluate_sdpa_config(hw, problem, cfg)  # type: ignore[arg-type]
    else:
        evaluated = evaluate_config(hw, problem, cfg)  # type: ignore[arg-type]
    if args.json:
        print(json.dumps({**result_json(hw, evaluated.schedule, evaluated.result),
                          "ttnn_config": cfg.model_dump(mode="json")}, indent=2))  # type: ignore[attr-defined]
    else:
        print(solve_table(hw, problem, {evaluated.schedule.candidate.name: evaluated.schedule}, [evaluated.result]))
    return EXIT_OK if evaluated.result.solution else EXIT_NO_SCHEDULE


def _finite_json(text: str) -> object:
    """JSON as Python's reader takes it, less ``NaN``, ``Infinity`` and numbers that overflow a float
    (ValueError naming the token)."""
    def refuse(token: str) -> float:
        raise ValueError(f"{token[:30]} is not a finite number")

    def number(token: str) -> float:
        value = float(token)
        return value if math.isfinite(value) else refuse(token)

    return json.loads(text, parse_constant=refuse, parse_float=number)


def _apply_compute_config(args: argparse.Namespace, compute: dict[str, object], origin: str) -> None:
    """A TTNN config's ``compute`` block sets the fidelity and fp32 accumulation (a conflicting flag is an
    error, not silently overridden)."""
    fidelity = compute.get("math_fidelity")
    if fidelity is not None:
        wanted = parse_fidelity(str(fidelity).split(".")[-1])
        if args.fidelity is not None and parse_fidelity(args.fidelity) is not wanted:
            raise InputError(f"--fidelity {args.fidelity} contradicts {origin}: compute.math_fidelity {fidelity}")
        args.fidelity = wanted.value
    if compute.get("fp32_dest_acc_en"):
        args.fp32_acc = True


def _card_hardware(pins: Sequence[str]) -> dict[str, HardwareSpec]:
    """``--hw CARD=FILE`` options: the hardware file to predict one card's rows with (e.g. a calibrated one);
    the file must describe the same chip as the card's shipped file."""
    from loom_explorer.accuracy.gemm_data import CARDS

    chosen: dict[str, HardwareSpec] = {}
    for pin in pins:
        card, sep, name = pin.partition("=")
        if not sep or not name or card not in CARDS:
            raise HardwareError(f"--hw {pin!r}: expected CARD=FILE with CARD one of {', '.join(CARDS)}")
        hw, shipped = load_hardware(name), load_hardware(CARDS[card])
        if hw.arch != shipped.arch:
            raise HardwareError(f"--hw {pin!r}: {name} describes a {hw.arch} chip; card {card} is "
                                f"{shipped.arch} ({CARDS[card]})")
        chosen[card] = hw
    return chosen


def _say_rows(title: str, issues: Sequence[object]) -> None:
    """``title`` and the grouped reasons of ``issues`` (``RowIssue``s) on stderr."""
    from loom_explorer.accuracy.csv_input import group_issues

    print(title, file=sys.stderr)
    for line in group_issues(list(issues)):  # type: ignore[arg-type]
        print(f"  {line}", file=sys.stderr)


def _pct(value: object, spec: str = "") -> str:
    """An error figure in percent, or ``-`` where there is none (no scored row)."""
    return "-" if value is None else f"{value:{spec}}%"


def cmd_accuracy(args: argparse.Namespace) -> int:
    from loom_explorer.accuracy.gemm_data import accuracy_json, predict_rows, unscored
    from loom_explorer.accuracy.progress import Progress

    hardware = _card_hardware(args.hw)
    with Progress() as progress:
        report = predict_rows(args.data, args.configs, hardware, skip_bad_rows=args.skip_bad_rows,
                              progress=progress)
    doc = accuracy_json(report)
    if args.record:
        from loom_explorer.accuracy.gemm_data import report_measurements
        from loom_explorer.store import open_store

        with open_store(args.store) as store:
            store.record_many(report_measurements(report))
        print(f"recorded {len(report.rows)} measurements in {store.path}", file=sys.stderr)
    not_scored = unscored(report)
    if args.json:
        print(json.dumps(doc, indent=2))
        if not_scored:
            _say_rows(f"could not score {len(not_scored)} rows:", not_scored)
        return EXIT_OK
    print(f"{'card':<5} {'kind':<11} {'M':>6} {'K':>6} {'N':>6} {'dtype':<10} {'fidelity':<6} {'regime':<13} "
          f"{'measured us':>11} {'predicted us':>12} {'error':>7}")
    for r in doc["rows"]:  # type: ignore[union-attr]
        pred = f"{r['predicted_ns'] / 1e3:>12.2f}" if r["predicted_ns"] else f"{'illegal':>12}"
        err = f"{r['error_pct']:>6.1f}%" if r["error_pct"] is not None else f"{'-':>7}"
        print(f"{r['card']:<5} {r['config_kind']:<11} {r['M']:>6} {r['K']:>6} {r['N']:>6} {r['dtype']:<10} "
              f"{r['math_fidelity']:<6} {r['regime']:<13} {float(r['measured_ns']) / 1e3:>11.2f} {pred} {err}")

    def line(name: str, s: dict[str, object]) -> str:
        return (f"  {name:<24} n={s['n']:<4} median |err| {_pct(s['median_abs_err_pct'])}  "
                f"p90 {_pct(s['p90_abs_err_pct'])}  Spearman {'-' if s['spearman'] is None else s['spearman']}")

    print("\nsummary (every row):")
    print(line("all", doc["summary"]))  # type: ignore[arg-type]
    for name, s in {**doc["by_card"], **doc["by_regime"]}.items():  # type: ignore[dict-item]
        print(line(name, s))
    print("\nheld-out rows, model vs three-constant roofline fitted on the other rows:")
    for card, b in doc["held_out_vs_baseline"].items():  # type: ignore[union-attr]
        print(line(f"{card} model", b["model"]))
        fit = b["fit"]
        print(line(f"{card} roofline", b["baseline"]) + f"  (fitted: compute efficiency {fit['compute_eff']}, "
              f"DRAM efficiency {fit['dram_eff']}, overhead {fit['overhead_ns']} ns)")
    sp = doc["speedups"]
    print(f"\nhand-tuned over automatic speedup: {len(sp['pairs'])} pairs, "  # type: ignore[index]
          f"median |error| {_pct(sp['median_abs_err_pct'])}")  # type: ignore[index]
    if not_scored:
        _say_rows(f"could not score {len(not_scored)} rows:", not_scored)
    return EXIT_OK


def cmd_calibrate(args: argparse.Namespace) -> int:
    from loom_explorer.accuracy.calibrate import (
        calibrate,
        calibrated_yaml,
        is_shipped,
        written_value,
    )
    from loom_explorer.accuracy.gemm_data import load_cases, refusal
    from loom_explorer.accuracy.progress import Progress

    if is_shipped(args.output):
        raise InputError(f"-o {args.output}: calibration never writes a shipped hardware file; choose another path")
    check_target(args.output, force=args.force)  # a target write_new would refuse fails before the fit
    hw = load_hardware(args.hw)
    # every row is checked before the fit: an unusable one stops it unless --skip-bad-rows leaves it out
    cases, unusable = load_cases(args.data, args.configs, skip_bad_rows=args.skip_bad_rows)
    if unusable and not args.skip_bad_rows:
        raise CalibrationError(refusal(unusable))
    if unusable:
        _say_rows(f"skipped {len(unusable)} unusable rows (--skip-bad-rows):", unusable)
    with Progress() as progress:
        result = calibrate(hw, cases, progress=progress)
    write_new(args.output, calibrated_yaml(args.hw, result, Path(args.data).name), force=args.force)
    print(f"calibrated {hw.name} on {result.train_rows} rows of {args.data}; wrote {args.output}")
    moved = [path for path in result.values if written_value(result, path) != result.shipped[path]]
    for path in result.values:
        print(f"  {path:<36} {result.shipped[path]:>10g} -> {written_value(result, path):g}")
    if not moved:
        print("  no constant moved: the shipped values fit these rows best (the file written keeps every value)")
    for label, s in (("training rows, shipped", result.train_before), ("training rows, fitted", result.train_after),
                     ("held-out rows, shipped", result.before), ("held-out rows, fitted", result.after)):
        print(f"  {label:<24} n={s.n:<4} median |err| {_pct(s.median_abs_err_pct, '.1f')}  "
              f"p90 {_pct(s.p90_abs_err_pct, '.1f')}")
    return EXIT_OK


def cmd_deploy(args: argparse.Namespace) -> int:
    from loom_explorer.deploy.runner import pick_runner, run_measurement
    from loom_explorer.store import open_store
    from loom_explorer.export.schedule_json import schedule_document

    runner, why = pick_runner(args.runner)
    hw, problem = _problem(args)
    options = _options(args)
    session = Session(hw, problem, noc_bound=not args.no_noc_bound, deadline=_deadline(args))
    _say_solving(1 if args.candidate else len(session.schedules))
    results = session.solve(parse_pins(args.pin), options, candidates=[args.candidate] if args.candidate else None)
    if session.stop.stopped:
        return _report_interrupted(results, "deployment")
    best = _best_exportable(session, results) if runner.name == "card" and not args.candidate else _best(results)
    if best is None:
        return _report_no_schedule(results, "deployment")
    doc = schedule_document(hw, args.hw, args.kernel, problem, best, options, noc_bound=not args.no_noc_bound)
    print(f"loom-explorer: {runner.name} ({why}): {best.candidate_name}", file=sys.stderr)
    run = runner.run(doc, runs=args.runs)
    with open_store(args.store) as store:
        row = store.record(run_measurement(doc, run))
    predicted_us = doc.prediction.latency_us
    if run.measured_ns is not None:
        error = 100 * (predicted_us * 1e3 - run.measured_ns) / run.measured_ns
        print(f"predicted {predicted_us:,.2f} us, measured {run.measured_ns / 1e3:,.2f} us ({run.measured_what}); "
              f"error {error:+.1f}%")
    else:
        print(f"predicted {predicted_us:,.2f} us; {run.measured_what}: PCC {run.pcc:.6f}, traffic "
              f"{'equal to the model' if run.traffic_equal else 'DIFFERS from the model'}")
    print(f"recorded as measurement {row} in {store.path}")
    return EXIT_OK if run.traffic_equal is not False and (run.pcc is None or run.pcc >= 0.999) else EXIT_VERIFY_FAILED


def cmd_ingest(args: argparse.Namespace) -> int:
    from loom_explorer.accuracy.ingest import (
        read_ops_perf,
        report_measurements,
        suggest_hardware,
        summary_json,
    )
    from loom_explorer.accuracy.progress import Progress
    from loom_explorer.store import open_store

    with Progress() as progress:
        # the whole file is read and checked before anything is predicted or recorded
        report = read_ops_perf(args.file, skip_bad_rows=args.skip_bad_rows, progress=progress)
        hw_name = args.hw or suggest_hardware(report)
        if hw_name is None and report.ops:
            raise InputError(f"{args.file}: the report does not say which chip it ran on (no DEVICE ARCH column); "
                             "give --hw, e.g. --hw wormhole_n150")
        measurements = report_measurements(report, hw_name, progress) if report.ops else []
        if not args.dry_run:
            with open_store(args.store) as store:
                ids = store.record_many(measurements)
    if not args.dry_run:
        print(f"recorded {len(ids)} measurements in {store.path}", file=sys.stderr)
    if report.bad:
        _say_rows(f"skipped {len(report.bad)} unusable rows (--skip-bad-rows):", report.bad)
    if args.json:
        doc = summary_json(report)
        doc["predictions"] = [{"row": op.row, "hardware": m.hardware, "candidate": m.candidate,
                               "predicted_ns": m.predicted_ns, "measured_ns": m.measured_ns, "note": m.note}
                              for op, m in zip(report.ops, measurements)]
        print(json.dumps(doc, indent=2))
        return EXIT_OK
    print(f"{args.file}: {len(report.ops)} ops ingested, {len(report.skipped)} rows skipped"
          + (f"; predicted on {hw_name}" if report.ops else ""))
    for op, m in zip(report.ops, measurements):
        shape = ",".join(f"{k}={v}" for k, v in op.shape.items())
        predicted = f"{m.predicted_ns / 1e3:10.2f} us" if m.predicted_ns is not None else f"{'-':>13}"
        error = (f"{100 * (m.predicted_ns - m.measured_ns) / m.measured_ns:+6.1f}%"
                 if m.predicted_ns is not None and m.measured_ns else "")
        print(f"  row {op.row:<5} {op.kernel:<15} {shape:<34} {m.candidate:<36} measured "
              f"{op.device_kernel_ns / 1e3:10.2f} us  predicted {predicted} {error}")
    for s in report.skipped:
        print(f"  skipped {s}")
    return EXIT_OK


def cmd_sweep(args: argparse.Namespace) -> int:
    from loom_explorer.sweep.ops import model_ops, read_shapes, write_shapes
    from loom_explorer.sweep.run import run_sweep
    from loom_explorer.sweep.task import SweepSettings

    if bool(args.shapes) == bool(args.model):
        raise InputError("sweep needs a shapes.csv or --model NAME (not both)")
    hardware = [h.strip() for h in args.hw.split(",") if h.strip()]
    for h in hardware:
        load_hardware(h)  # a bad name fails here, before any worker starts
    ops = model_ops(args.model) if args.model else read_shapes(args.shapes)
    if args.write_shapes:
        write_new(args.write_shapes, write_shapes(ops), force=args.force)
        print(f"wrote {len(ops)} ops to {args.write_shapes}", file=sys.stderr)
    summary = run_sweep(ops, hardware, args.out, scheduler=args.scheduler, workers=args.workers,
                        settings=SweepSettings(time_limit_seconds=args.time_limit))
    print(f"sweep: {summary.solved} solved ({summary.failed} failed), {summary.skipped} already in {args.out}, "
          f"{summary.seconds:.1f} s" + (" (interrupted)" if summary.interrupted else ""))
    return EXIT_INTERRUPTED if summary.interrupted else EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from loom_explorer.store import open_store
    from loom_explorer.sweep.report import report_markdown
    from loom_explorer.ui.sweep_report import report_html

    if not Path(args.store_file).is_file():
        raise InputError(f"{args.store_file}: no such results store")
    with open_store(args.store_file) as store:
        records = store.sweep_results()
    if not records:
        raise InputError(f"{args.store_file}: no sweep results (run loom-explorer sweep first)")
    title = args.title or f"Sweep report: {Path(args.store_file).name}"
    if args.html:
        write_new(args.html, report_html(records, title), force=args.force)
        print(f"wrote {args.html}", file=sys.stderr)
    if args.markdown:
        write_new(args.markdown, report_markdown(records, title), force=args.force)
        print(f"wrote {args.markdown}", file=sys.stderr)
    if not (args.html or args.markdown):
        print(report_markdown(records, title))
    return EXIT_OK


def cmd_results(args: argparse.Namespace) -> int:
    from loom_explorer.store import open_store

    with open_store(args.store) as store:
        rows = store.measurements(args.hw, args.kernel)
        path = store.path
    if args.json:
        print(json.dumps([{k: getattr(m, k) for k in m.__dataclass_fields__ if k != "schedule_json"}
                          for m in rows], indent=2))
        return EXIT_OK
    print(f"{len(rows)} measurements in {path}")
    for m in rows:
        measured = f"{m.measured_ns / 1e3:10.2f} us" if m.measured_ns is not None else f"{'-':>13}"
        predicted = f"{m.predicted_ns / 1e3:10.2f} us" if m.predicted_ns is not None else f"{'-':>13}"
        extra = f" pcc {m.pcc:.4f} traffic {'equal' if m.traffic_equal else 'DIFFERS'}" if m.pcc is not None else ""
        print(f"{m.created}  {m.source:<9} {m.hardware:<22} {m.kernel:<15} {m.candidate:<36} predicted {predicted}"
              f"  measured {measured}{extra}")
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        from loom_explorer.ui.app import ServeConfig, ServeError, serve
        from loom_explorer.ui.catalog import Catalog, CatalogError
    except ImportError as exc:
        raise InputError(f"serve needs the app extra: pip install 'loom-explorer[app]' ({exc})") from None
    try:
        catalog = Catalog.build(args.hw or (), args.kernel or (), args.hw_dir or (), args.kernel_dir or ())
        serve(ServeConfig(catalog, port=args.port, address=args.address, allow_hosts=tuple(args.allow_host or ())),
              show=args.show)
    except (CatalogError, ServeError) as exc:
        raise InputError(str(exc)) from None
    return EXIT_OK


def _add_problem_args(p: argparse.ArgumentParser, tensor_format_flag: str = "--format") -> None:
    p.add_argument("kernel", help="shipped kernel name (see `kernels list`) or path to a .py file")
    p.add_argument("--hw", required=True, help="shipped hardware name or path to a YAML file")
    p.add_argument("--shape", required=True, help="extents in elements, e.g. M=4096,K=4096,N=4096")
    p.add_argument("--dtype", default="bf16", help="data format of every tensor (default bf16)")
    p.add_argument(tensor_format_flag, dest="format", action="append", default=[], metavar="TENSOR=FORMAT",
                   help="data format of one tensor, e.g. in1=bfp8_b (repeatable)")
    p.add_argument("--memory", action="append", default=[], metavar="TENSOR=PLACEMENT",
                   help="where a tensor lives: dram (interleaved, default), l1_height, l1_width, l1_block "
                        "(TTNN shardings) or l1 (sharded as each candidate needs) (repeatable)")
    p.add_argument("--fidelity", default=None, help="lofi, hifi2 (default), hifi3, hifi4")
    p.add_argument("--fp32-acc", action="store_true", help="accumulate in fp32 (Dst holds 4 tiles)")
    p.add_argument("--target", choices=[t.value for t in KernelTarget], default=None,
                   help="whose kernels run the schedule, so whose circular buffers L1 holds: ttnn (TTNN's ops; "
                        "the default) or ttlang (the exported TT-Lang kernels; the default of export --format ttlang)")
    p.add_argument("--bias", action="store_true", help="turn the kernel's optional bias on")
    p.add_argument("--activation", default=None, help="fused activation, e.g. gelu")
    p.add_argument("--causal", action="store_true",
                   help="causal mask (kernels with a 'causal' option, e.g. flash_attention)")
    p.add_argument("--pin", action="append", default=[], metavar="NAME=VALUE",
                   help="fix a parameter (repeatable)")
    p.add_argument("--no-noc-bound", action="store_true",
                   help="leave the NoC link/bank bound out of the latency (to see what it changes)")
    p.add_argument("--time-limit", type=seconds, default=30.0,
                   help="seconds per candidate (default 30): building every candidate's model must end within "
                        "this many seconds of the command's start, and each candidate's solve (its model, "
                        "search, alternatives and conflict explanation) within this many of its own start")
    p.add_argument("--workers", type=whole(1, MAX_THREADS), default=4,
                   help="CP-SAT workers per candidate (default 4)")
    p.add_argument("--parallel", type=whole(0, MAX_THREADS), default=1,
                   help="candidates solved at once (default 1; 0: one per CPU core)")
    p.add_argument("--seed", type=whole(0, 2**31 - 1), default=0, help="CP-SAT's random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object (the machine contract)")


def _add_store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=None,
                   help="results store file (default: $LOOM_EXPLORER_STORE or ~/.local/share/loom-explorer/results.sqlite)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loom-explorer", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    hw = sub.add_parser("hw", help="list or show hardware descriptions")
    hw.add_argument("action", choices=["list", "show"])
    hw.add_argument("name", nargs="?", help="shipped name or path to a YAML file")
    hw.add_argument("--json", action="store_true")
    hw.set_defaults(func=cmd_hw)
    kernels = sub.add_parser("kernels", help="list shipped tile programs")
    kernels.add_argument("action", choices=["list"])
    kernels.set_defaults(func=cmd_kernels)
    solve = sub.add_parser("solve", help="solve every mapping candidate of a problem to optimality")
    _add_problem_args(solve)
    solve.add_argument("--candidate", action="append", default=[], metavar="NAME",
                       help="solve only this candidate (repeatable)")
    solve.add_argument("--top", type=whole(0), default=0, help="show only the N best candidates")
    solve.add_argument("--alternatives", type=whole(1), default=1, metavar="K",
                       help="K best distinct schedules per candidate (default 1)")
    solve.add_argument("--fastest", type=whole(0), default=0, metavar="N",
                       help="solve only the N fastest candidates to their optimum and prove every other one "
                            "no faster (status 'dominated'); much faster than the default, which solves every "
                            "candidate (0)")
    solve.set_defaults(func=cmd_solve)
    traffic = sub.add_parser("traffic", help="route the NoC traffic of the best (or a chosen) schedule")
    _add_problem_args(traffic)
    traffic.add_argument("--candidate", default=None, metavar="NAME", help="this candidate (default: the best)")
    traffic.add_argument("--links", type=whole(1), default=10, help="busiest links shown per NoC (default 10)")
    traffic.add_argument("--npe", default=None, metavar="FILE", help="also write a tt-npe workload JSON")
    traffic.add_argument("--force", action="store_true", help="overwrite the --npe file if it exists")
    traffic.set_defaults(func=cmd_traffic)
    export = sub.add_parser("export", help="write the best (or a chosen) schedule as a kernel file or JSON")
    _add_problem_args(export, tensor_format_flag="--tensor-format")
    export.add_argument("--format", dest="output_format", choices=EXPORT_FORMATS, required=True,
                        help="ttlang: TT-Lang kernel (runs in tt-lang-sim); ttnn: TTNN program config and "
                             "the call; json: the schedule document; npe: tt-npe workload")
    export.add_argument("-o", "--output", required=True, metavar="FILE", help="file to write (never half-written)")
    export.add_argument("--candidate", default=None, metavar="NAME", help="this candidate (default: the best)")
    export.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    export.set_defaults(func=cmd_export)
    verify = sub.add_parser("verify", help="check an exported TT-Lang kernel: numerics and traffic in tt-lang-sim, "
                                           "and the real TT-Lang compiler (compile-only)")
    verify.add_argument("file", help="a file written by `export --format ttlang`")
    verify.add_argument("--timeout", type=seconds, default=600.0, help="seconds the simulator may take (default 600)")
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    verify.add_argument("--no-compile", action="store_true",
                        help="skip the TT-Lang compiler (the simulator only; the report says it was not compiled)")
    verify.add_argument("--record", action="store_true", help="also record the run in the results store")
    verify.add_argument("--hw", default=None, metavar="FILE",
                        help="the hardware YAML the kernel was exported for, when it is not a shipped chip")
    verify.add_argument("--kernel", default=None, metavar="FILE",
                        help="the tile program (.py) it was exported from, when it is not a shipped kernel")
    _add_store_arg(verify)
    verify.set_defaults(func=cmd_verify)
    toolchain = sub.add_parser("toolchain", help="install or show the Python 3.12 environment of Tenstorrent's tools "
                                                 "(the TT-Lang compiler, ttnn) that verify and the card-path tests use")
    toolchain.add_argument("action", choices=["install", "status"])
    toolchain.add_argument("--python", default=None, metavar="PYTHON3.12",
                           help="the Python 3.12 to build on (default: python3.12 on PATH, else pyenv's)")
    toolchain.add_argument("--path", default=None, metavar="DIR",
                           help="where the environment lives (default: $LOOM_TOOLCHAIN, else ~/.cache/loom-explorer/...)")
    toolchain.add_argument("--force", action="store_true", help="re-create an installed toolchain")
    toolchain.set_defaults(func=cmd_toolchain)
    predict = sub.add_parser("predict", help="evaluate an existing TTNN program config (matmul or SDPA) with the model")
    _add_problem_args(predict)
    predict.add_argument("--ttnn-config", default=None, metavar="FILE",
                         help="JSON in the ttnn constructor's argument names (see docs/accuracy.md)")
    predict.add_argument("--ttnn-default", action="store_true",
                         help="the config ttnn picks itself for a DRAM-interleaved matmul")
    predict.add_argument("--grid", type=grid_size, default=None, metavar="XxY", help="restrict the device grid, e.g. 11x10")
    predict.set_defaults(func=cmd_predict)
    accuracy = sub.add_parser("accuracy", help="error table of the model on measured matmul data")
    accuracy.add_argument("--data", required=True,
                          help="CSV in the format of loom_explorer/data/published/gemm_flops_calibration.csv")
    accuracy.add_argument("--configs", default=None,
                          help="CSV of the manual configs (format of "
                               "loom_explorer/data/published/gemm_manual_configs.csv)")
    accuracy.add_argument("--json", action="store_true")
    accuracy.add_argument("--hw", action="append", default=[], metavar="CARD=FILE",
                          help="predict one card's rows with this hardware file instead of the shipped one, "
                               "e.g. p150=p150_fitted.yaml from `calibrate` (repeatable)")
    accuracy.add_argument("--record", action="store_true", help="also record every row in the results store")
    accuracy.add_argument("--skip-bad-rows", action="store_true",
                          help="leave out rows with a bad cell or a wrong number of cells (listed) instead of "
                               "refusing the file")
    _add_store_arg(accuracy)
    accuracy.set_defaults(func=cmd_accuracy)
    calibrate = sub.add_parser("calibrate", help="fit the hardware file's estimated constants to measured data")
    calibrate.add_argument("--hw", required=True, help="the hardware file to start from (name or path)")
    calibrate.add_argument("--data", required=True,
                           help="CSV in the format of loom_explorer/data/published/gemm_flops_calibration.csv")
    calibrate.add_argument("--configs", default=None, help="CSV of the manual configs")
    calibrate.add_argument("-o", "--output", required=True, metavar="FILE", help="the new hardware YAML")
    calibrate.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    calibrate.add_argument("--skip-bad-rows", action="store_true",
                           help="fit without the unusable rows (a bad cell, a wrong number of cells, a manual row "
                                "without its config; listed) instead of refusing to fit")
    calibrate.set_defaults(func=cmd_calibrate)
    deploy = sub.add_parser("deploy", help="run the best (or a chosen) schedule on a card, or in the simulator, "
                                           "and record predicted vs measured")
    _add_problem_args(deploy)
    deploy.add_argument("--candidate", default=None, metavar="NAME", help="this candidate (default: the best)")
    deploy.add_argument("--runs", type=whole(1), default=20, help="timed runs on a card (default 20)")
    deploy.add_argument("--runner", choices=("auto", "card", "simulator"), default="auto",
                        help="auto (default): the card when ttnn sees one, else tt-lang-sim")
    _add_store_arg(deploy)
    deploy.set_defaults(func=cmd_deploy)
    ingest = sub.add_parser("ingest", help="read a device-profiler ops_perf_results CSV: each matmul predicted "
                                           "with its own config beside its measured kernel duration")
    ingest.add_argument("file", help="ops_perf_results_<timestamp>.csv from tt-metal's device profiler")
    ingest.add_argument("--hw", default=None,
                        help="hardware to predict on (default: from the report's DEVICE ARCH column)")
    ingest.add_argument("--dry-run", action="store_true", help="do not record in the results store")
    ingest.add_argument("--json", action="store_true")
    ingest.add_argument("--skip-bad-rows", action="store_true",
                        help="skip rows with a bad number cell or a wrong number of cells (listed) instead of "
                             "refusing the file")
    _add_store_arg(ingest)
    ingest.set_defaults(func=cmd_ingest)
    sweep = sub.add_parser("sweep", help="solve every op of a shapes file (or a model) on every chip, with Dask")
    sweep.add_argument("shapes", nargs="?", help="CSV with columns kernel,shape,dtype,fidelity[,causal][,label]")
    sweep.add_argument("--model", default=None, help="generate the ops of a model: llama-3-8b, llama-3-70b")
    sweep.add_argument("--write-shapes", default=None, metavar="FILE", help="also write the ops as a shapes.csv")
    sweep.add_argument("--hw", required=True, help="comma-separated hardware names or YAML paths")
    sweep.add_argument("--out", required=True, metavar="STORE", help="results store (SQLite) to add to")
    sweep.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="a running Dask scheduler, e.g. tcp://host:8786 (default: a local cluster)")
    sweep.add_argument("--workers", type=whole(1, MAX_SWEEP_WORKERS), default=None,
                       help="local worker processes, at most 4 per core (default: one per core)")
    sweep.add_argument("--time-limit", type=seconds, default=30.0, help="seconds per candidate (default 30)")
    sweep.add_argument("--force", action="store_true", help="overwrite the --write-shapes file")
    sweep.set_defaults(func=cmd_sweep)
    report = sub.add_parser("report", help="report a sweep: per op ours vs ttnn's default, with plots")
    report.add_argument("store_file", metavar="STORE", help="the results store a sweep wrote")
    report.add_argument("--html", default=None, metavar="FILE", help="write a self-contained HTML report")
    report.add_argument("--markdown", default=None, metavar="FILE", help="write the report as Markdown")
    report.add_argument("--title", default=None)
    report.add_argument("--force", action="store_true", help="overwrite existing files")
    report.set_defaults(func=cmd_report)
    results = sub.add_parser("results", help="list the results store: predictions beside measurements")
    results.add_argument("--hw", default=None, help="only this hardware name")
    results.add_argument("--kernel", default=None, help="only this kernel")
    _add_store_arg(results)
    results.add_argument("--json", action="store_true")
    results.set_defaults(func=cmd_results)
    serve = sub.add_parser("serve", help="open the explorer in a browser (what `panel serve apps/explorer.py` does)")
    serve.add_argument("--port", type=whole(0, 65535), default=5006, help="port (default 5006; 0 picks a free one)")
    serve.add_argument("--address", default="127.0.0.1",
                       help="address to listen on (default 127.0.0.1: this machine only; anything else is "
                            "reachable by others and is announced with a warning)")
    serve.add_argument("--allow-host", action="append", metavar="NAME",
                       help="also answer requests that name this host (e.g. a DNS name in front of --address)")
    serve.add_argument("--hw", action="append", metavar="FILE",
                       help="offer this hardware YAML too, named by its stem (repeatable)")
    serve.add_argument("--hw-dir", action="append", metavar="DIR", help="offer every .yaml file of DIR too")
    serve.add_argument("--kernel", action="append", metavar="FILE",
                       help="offer this kernel file too, named by its stem (repeatable; it is Python and runs "
                            "when the server starts)")
    serve.add_argument("--kernel-dir", action="append", metavar="DIR", help="offer every .py kernel of DIR too")
    serve.add_argument("--show", action="store_true", help="open a browser tab")
    serve.set_defaults(func=cmd_serve)
    return parser


# Ctrl-C stops their searches (CP-SAT's stop_search) and they print what they have; elsewhere no search runs, and
# Ctrl-C is a KeyboardInterrupt (exit 130)
_STOPPABLE = ("solve", "traffic", "export", "deploy", "sweep")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:  # numeric flags are checked by their types: a bad one exits 2 naming the flag, before any work
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage error (2) or the help (0)
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    args.started = time.monotonic()  # --time-limit counts from here: building the models must end in time
    try:
        if args.command in _STOPPABLE and threading.current_thread() is threading.main_thread():
            # Ctrl-C stops the solves through the token (solve/interrupt.py); the command prints what it has
            STOP.clear()
            with stop_on_sigint(STOP):
                code = int(args.func(args))
            return EXIT_INTERRUPTED if STOP.stopped else code
        return int(args.func(args))
    except Interrupted as exc:
        print(f"loom-explorer: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("loom-explorer: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (HardwareError, KernelError, ProblemError, ProgramStructureError, PinError, InputError,
            ModelRangeError, OutputError, ExportError, ScheduleFileError, SimulationError, ConfigError,
            DataError, CalibrationError, StoreError, RunnerError, IngestError, OpsError, SweepError) as exc:
        print(f"loom-explorer: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyError as exc:  # unknown candidate name
        print(f"loom-explorer: error: {exc.args[0]}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
