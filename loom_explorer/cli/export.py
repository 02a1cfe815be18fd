"""``export``: the best (or a chosen) schedule in an export format (``export/formats.py``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from loom_explorer.cli.common import (
    Command,
    ProblemRequest,
    SolveRequest,
    add_command,
    add_memory_args,
    add_problem_args,
    best,
    kernel_target,
    no_schedule,
    report_interrupted,
)
from loom_explorer.errors import EXIT_OK
from loom_explorer.export.exporter import ExportError, SolvedSchedule
from loom_explorer.export.files import check_target, write_new
from loom_explorer.export.formats import export_formats, export_text, exporter, exporters
from loom_explorer.result import CandidateResult
from loom_explorer.solve.solver import Session, SolveOptions


@dataclass(frozen=True, slots=True)
class ExportCommand:
    problem: ProblemRequest
    solve: SolveRequest
    output_format: str
    output: str
    candidate: str | None
    force: bool


def parse_export(args: argparse.Namespace) -> ExportCommand:
    target = kernel_target(args.target, exporter(args.output_format).kernel_target, args.output_format)
    return ExportCommand(
        ProblemRequest.from_args(args, target),
        SolveRequest.from_args(args),
        args.output_format,
        args.output,
        args.candidate,
        args.force,
    )


def solved_schedules(
    session: Session,
    results: Sequence[CandidateResult],
    problem: ProblemRequest,
    options: SolveOptions,
    noc_bound: bool,
) -> list[SolvedSchedule]:
    """The candidates with a schedule, best first, as the exporters take them."""
    return [
        SolvedSchedule(session.schedule(r.candidate_name), r, problem.hw, problem.kernel, options, noc_bound)
        for r in results
        if r.solution is not None
    ]


def best_exportable(solved: Sequence[SolvedSchedule], fmt: str) -> SolvedSchedule:
    """The best schedule format ``fmt`` can express (``can_export``), saying so when it is not the best
    overall; ExportError with the distinct reasons when none can be."""
    return _first_written(solved, fmt, write=False)[0]


def best_export(solved: Sequence[SolvedSchedule], fmt: str) -> tuple[SolvedSchedule, str]:
    """The best schedule format ``fmt`` writes, and its text: the first, best first, that ``can_export``
    accepts and whose writer, given its solved values, writes it (a writer's check on the values refuses with
    ExportError, and the next schedule is tried), saying why on stderr when it is not the best overall;
    ExportError with the distinct reasons when none is written."""
    chosen, text = _first_written(solved, fmt, write=True)
    assert text is not None
    return chosen, text


def _first_written(solved: Sequence[SolvedSchedule], fmt: str, write: bool) -> tuple[SolvedSchedule, str | None]:
    chosen = exporter(fmt)
    reasons: list[str] = []
    for s in solved:
        why, text = chosen.can_export(s), None
        if why is None and write:
            try:
                text = export_text(fmt, s)
            except ExportError as exc:  # the writer refuses these values: the next schedule
                why = str(exc)
        if why is None:
            if reasons:
                print(
                    f"loom-explorer: exporting {s.result.candidate_name}, the best candidate with {chosen.noun}; "
                    f"better ones have none ({reasons[0]})",
                    file=sys.stderr,
                )
            return s, text
        if why not in reasons:  # one candidate after another often fails for the same reason
            reasons.append(why)
    raise ExportError(f"no candidate with a schedule has {chosen.noun}: " + "; ".join(reasons[:3]))


def run_export(req: ExportCommand) -> int:
    check_target(req.output, req.force)  # an unwritable -o fails before the solve
    hw, problem = req.problem.build()
    options = req.solve.options()
    session = req.solve.session(hw, problem)
    results = req.solve.solve(session, options, [req.candidate] if req.candidate else None).results
    if session.stop.stopped:
        return report_interrupted(results, "export")
    if best(results) is None:
        raise no_schedule(results, "export")
    solved = solved_schedules(session, results, req.problem, options, req.solve.noc_bound)
    chosen, text = (
        (solved[0], export_text(req.output_format, solved[0]))
        if req.candidate
        else best_export(solved, req.output_format)
    )
    write_new(req.output, text, force=req.force)
    latency_us = hw.cycles_to_us(chosen.result.solution.latency_cycles) if chosen.result.solution else 0.0
    print(
        f"loom-explorer: wrote {req.output} ({req.output_format}): {chosen.result.candidate_name}, predicted "
        f"{latency_us:,.2f} us",
        file=sys.stderr,
    )
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = add_command(sub, "export", Command(parse_export, run_export, stoppable=True))
    add_problem_args(export, tensor_format_flag="--tensor-format")
    add_memory_args(export)
    export.add_argument(
        "--format",
        dest="output_format",
        choices=export_formats(),
        required=True,
        help="; ".join(f"{e.name}: {e.summary}" for e in exporters()),
    )
    export.add_argument("-o", "--output", required=True, metavar="FILE", help="file to write (never half-written)")
    export.add_argument("--candidate", default=None, metavar="NAME", help="this candidate (default: the best)")
    export.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
