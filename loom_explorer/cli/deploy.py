"""``deploy`` (run a schedule on a card or in the simulator and record it), ``verify`` (check an exported
TT-Lang kernel), ``toolchain`` (Tenstorrent's tools in a Python 3.12 environment) and ``results`` (the
results store)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from loom_explorer.cli.common import (
    Command,
    ProblemRequest,
    SolveRequest,
    add_command,
    add_memory_args,
    add_problem_args,
    add_store_arg,
    best,
    no_schedule,
    report_interrupted,
    say,
    say_solving,
    seconds,
    whole,
)
from loom_explorer.cli.export import best_exportable, solved_schedules
from loom_explorer.errors import EXIT_FAILED, EXIT_OK


@dataclass(frozen=True, slots=True)
class DeployCommand:
    problem: ProblemRequest
    solve: SolveRequest
    candidate: str | None
    runs: int
    runner: Literal["auto", "card", "simulator"]
    store: str | None
    target_given: bool  # --target: else the runner's kernels (TTNN's on a card, the TT-Lang file's in the simulator)


def parse_deploy(args: argparse.Namespace) -> DeployCommand:
    return DeployCommand(
        ProblemRequest.from_args(args),
        SolveRequest.from_args(args),
        args.candidate,
        args.runs,
        args.runner,
        args.store,
        args.target is not None,
    )


def run_deploy(req: DeployCommand) -> int:
    from loom_explorer.deploy.runner import pick_runner, run_measurement
    from loom_explorer.export.schedule_json import schedule_document
    from loom_explorer.problem import KernelTarget
    from loom_explorer.store import open_store

    runner, why = pick_runner(req.runner)
    fmt = "ttnn" if runner.name == "card" else "ttlang"  # what the runner runs: a TTNN config or a TT-Lang file
    if not req.target_given:  # solved for the kernels the runner runs, as export solves for its format's
        req = replace(req, problem=replace(req.problem, target=KernelTarget(fmt)))
    hw, problem = req.problem.build()
    options = req.solve.options()
    session = req.solve.session(hw, problem)
    say_solving(1 if req.candidate else len(session.schedules))
    results = req.solve.solve(session, options, [req.candidate] if req.candidate else None).results
    if session.stop.stopped:
        return report_interrupted(results, "deployment")
    chosen = best(results)
    if chosen is None:
        raise no_schedule(results, "deployment")
    if not req.candidate:  # the best schedule the runner can run (the writer's rules checked on its values)
        chosen = best_exportable(
            solved_schedules(session, results, req.problem, options, req.solve.noc_bound), fmt
        ).result
    doc = schedule_document(
        hw, req.problem.hw, req.problem.kernel, problem, chosen, options, noc_bound=req.solve.noc_bound
    )
    say(f"loom-explorer: {runner.name} ({why}): {chosen.candidate_name}")
    run = runner.run(doc, runs=req.runs)
    with open_store(req.store) as store:
        row = store.record(run_measurement(doc, run))
    predicted_us = doc.prediction.latency_us
    if run.measured_ns is not None:
        error = 100 * (predicted_us * 1e3 - run.measured_ns) / run.measured_ns
        print(
            f"predicted {predicted_us:,.2f} us, measured {run.measured_ns / 1e3:,.2f} us ({run.measured_what}); "
            f"error {error:+.1f}%"
        )
    else:
        print(
            f"predicted {predicted_us:,.2f} us; {run.measured_what}: PCC {run.pcc:.6f}, traffic "
            f"{'equal to the model' if run.traffic_equal else 'DIFFERS from the model'}"
        )
    print(f"recorded as measurement {row} in {store.path}")
    return EXIT_OK if run.traffic_equal is not False and (run.pcc is None or run.pcc >= 0.999) else EXIT_FAILED


@dataclass(frozen=True, slots=True)
class VerifyCommand:
    file: str
    timeout_seconds: float
    json: bool
    compile_it: bool
    record: bool
    hw_file: str | None
    kernel_file: str | None
    store: str | None


def parse_verify(args: argparse.Namespace) -> VerifyCommand:
    return VerifyCommand(
        args.file, args.timeout, args.json, not args.no_compile, args.record, args.hw, args.kernel, args.store
    )


def run_verify(req: VerifyCommand) -> int:
    from loom_explorer.deploy.verify import verify_kernel_file

    report = verify_kernel_file(
        req.file, req.timeout_seconds, hw_file=req.hw_file, kernel_file=req.kernel_file, compile_it=req.compile_it
    )
    if req.record:
        from loom_explorer.deploy.runner import run_measurement, simulator_run
        from loom_explorer.store import open_store

        with open_store(req.store) as store:
            row = store.record(run_measurement(report.document, simulator_run(report)))
        say(f"recorded as measurement {row} in {store.path}")
    if req.json:
        print(json.dumps(report.to_json(), indent=2))
        return EXIT_OK if report.passed else EXIT_FAILED
    if not report.constants_ok:
        print(
            f"{req.file}: candidate {report.candidate}: FAILED, its constants are not its schedule's "
            "(not simulated, not compiled):"
        )
        for mismatch in report.constants:
            print(f"    {mismatch}")
        return EXIT_FAILED
    print(f"{req.file}: candidate {report.candidate}, simulated in {report.seconds:.1f} s")
    print("  constants: every one is the embedded schedule's")
    note = f" ({report.numerics_note})" if report.numerics_note else ""
    print(
        f"  numerics: PCC {report.pcc:.6f} against the schedule's problem in torch (needs >= 0.999): "
        f"{'ok' if report.numerics_ok else 'FAILED'}{note}"
    )
    sim, model = report.simulated, report.predicted
    print(
        f"  traffic: {'equal to the model' if report.traffic_equal else 'DIFFERS from the model'}: "
        f"DRAM tiles read {dict(sorted(sim.dram_read_tiles.items()))}, written "
        f"{dict(sorted(sim.dram_written_tiles.items()))}, pipe tiles received "
        f"{sum(sim.pipe_received_tiles.values()):,} over {len(sim.pipe_received_tiles)} cores "
        f"(model: {sum(model.pipe_received_tiles.values()):,} over {len(model.pipe_received_tiles)})"
    )
    for line in report.differences():
        print(f"    {line}")
    if report.compiled is None:
        print(f"  compile: {report.compile_note}")
    elif report.compiled.passed:
        print(
            f"  compile: ok ({report.compiled.compiler}, compile-only; circular buffers "
            f"{report.compiled.cb_l1_bytes:,} B of the {report.compiled.l1_budget_bytes:,} B budget)"
        )
    else:
        print(f"  compile: FAILED ({report.compiled.compiler}):")
        print(textwrap.indent(report.compiled.message, "    "))
    return EXIT_OK if report.passed else EXIT_FAILED


@dataclass(frozen=True, slots=True)
class ToolchainCommand:
    action: Literal["install", "status"]
    python: Path | None
    root: Path | None
    force: bool


def parse_toolchain(args: argparse.Namespace) -> ToolchainCommand:
    return ToolchainCommand(
        args.action,
        Path(args.python) if args.python else None,
        Path(args.path).expanduser() if args.path else None,
        args.force,
    )


def run_toolchain(req: ToolchainCommand) -> int:
    from loom_explorer.deploy import toolchain as tc
    from loom_explorer.targets.ttlang import TT_LANG_VERSION
    from loom_explorer.targets.ttnn import TTNN_VERSION

    if req.action == "status":
        found = tc.find_toolchain(req.root)
        if found is None:
            print(f"not installed (expected at {req.root or tc.default_root()}); run `loom-explorer toolchain install`")
            return EXIT_FAILED
        print(
            f"{found.root}: tt-lang {TT_LANG_VERSION}, ttnn {TTNN_VERSION}, torch {tc.TORCH_VERSION} "
            f"on Python {tc.PYTHON_VERSION} ({found.python})"
        )
        return EXIT_OK
    if not req.force and tc.find_toolchain(req.root) is not None:
        print(f"already installed: {req.root or tc.default_root()} (--force re-creates it)")
        return EXIT_OK
    try:
        tc.install_toolchain(req.root, req.python, log=lambda line: print(line, file=sys.stderr))
    except tc.ToolchainError as exc:  # a failed install is a failed step (exit 1), not bad input
        say(f"loom-explorer: toolchain: {exc}")
        return EXIT_FAILED
    return EXIT_OK


@dataclass(frozen=True, slots=True)
class ResultsCommand:
    hw: str | None
    kernel: str | None
    store: str | None
    json: bool


def parse_results(args: argparse.Namespace) -> ResultsCommand:
    return ResultsCommand(args.hw, args.kernel, args.store, args.json)


def run_results(req: ResultsCommand) -> int:
    from loom_explorer.store import open_store

    with open_store(req.store) as store:
        rows = store.measurements(req.hw, req.kernel)
        path = store.path
    if req.json:
        print(
            json.dumps(
                [{k: getattr(m, k) for k in m.__dataclass_fields__ if k != "schedule_json"} for m in rows], indent=2
            )
        )
        return EXIT_OK
    print(f"{len(rows)} measurements in {path}")
    for m in rows:
        measured = f"{m.measured_ns / 1e3:10.2f} us" if m.measured_ns is not None else f"{'-':>13}"
        predicted = f"{m.predicted_ns / 1e3:10.2f} us" if m.predicted_ns is not None else f"{'-':>13}"
        extra = f" pcc {m.pcc:.4f} traffic {'equal' if m.traffic_equal else 'DIFFERS'}" if m.pcc is not None else ""
        print(
            f"{m.created}  {m.source:<9} {m.hardware:<22} {m.kernel:<15} {m.candidate:<36} predicted {predicted}"
            f"  measured {measured}{extra}"
        )
    return EXIT_OK


def add_verify_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    verify = add_command(sub, "verify", Command(parse_verify, run_verify))
    verify.add_argument("file", help="a file written by `export --format ttlang`")
    verify.add_argument("--timeout", type=seconds, default=600.0, help="seconds the simulator may take (default 600)")
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    verify.add_argument(
        "--no-compile",
        action="store_true",
        help="skip the TT-Lang compiler (the simulator only; the report says it was not compiled)",
    )
    verify.add_argument("--record", action="store_true", help="also record the run in the results store")
    verify.add_argument(
        "--hw",
        default=None,
        metavar="FILE",
        help="the hardware YAML the kernel was exported for, when it is not a shipped chip",
    )
    verify.add_argument(
        "--kernel",
        default=None,
        metavar="FILE",
        help="the tile program (.py) it was exported from, when it is not a shipped kernel",
    )
    add_store_arg(verify)
    toolchain = add_command(sub, "toolchain", Command(parse_toolchain, run_toolchain))
    toolchain.add_argument("action", choices=["install", "status"])
    toolchain.add_argument(
        "--python",
        default=None,
        metavar="PYTHON3.12",
        help="the Python 3.12 to build on (default: python3.12 on PATH, else pyenv's)",
    )
    toolchain.add_argument(
        "--path",
        default=None,
        metavar="DIR",
        help="where the environment lives (default: $LOOM_TOOLCHAIN, else ~/.cache/loom-explorer/...)",
    )
    toolchain.add_argument("--force", action="store_true", help="re-create an installed toolchain")


def add_deploy_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    deploy = add_command(sub, "deploy", Command(parse_deploy, run_deploy, stoppable=True))
    add_problem_args(deploy)
    add_memory_args(deploy, store=False)
    deploy.add_argument("--candidate", default=None, metavar="NAME", help="this candidate (default: the best)")
    deploy.add_argument("--runs", type=whole(1), default=20, help="timed runs on a card (default 20)")
    deploy.add_argument(
        "--runner",
        choices=("auto", "card", "simulator"),
        default="auto",
        help="auto (default): the card when ttnn sees one, else tt-lang-sim",
    )
    add_store_arg(deploy)


def add_results_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    results = add_command(sub, "results", Command(parse_results, run_results))
    results.add_argument("--hw", default=None, help="only this hardware name")
    results.add_argument("--kernel", default=None, help="only this kernel")
    add_store_arg(results)
    results.add_argument("--json", action="store_true")
