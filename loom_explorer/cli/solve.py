"""``solve`` (every candidate of a problem to optimality) and ``traffic`` (route the best schedule's NoC
traffic)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

from loom_explorer.cli.common import (
    Command,
    ProblemRequest,
    SolveRequest,
    add_command,
    add_memory_args,
    add_problem_args,
    best,
    no_schedule,
    report_interrupted,
    say,
    say_solving,
    whole,
)
from loom_explorer.errors import EXIT_INTERRUPTED, EXIT_NO_SCHEDULE, EXIT_OK


@dataclass(frozen=True, slots=True)
class SolveCommand:
    problem: ProblemRequest
    solve: SolveRequest
    candidates: tuple[str, ...]
    top: int  # 0: every candidate
    alternatives: int
    fastest: int | None
    json: bool


def parse_solve(args: argparse.Namespace) -> SolveCommand:
    return SolveCommand(
        ProblemRequest.from_args(args),
        SolveRequest.from_args(args),
        tuple(args.candidate),
        args.top,
        args.alternatives,
        args.fastest or None,
        args.json,
    )


def run_solve(req: SolveCommand) -> int:
    from loom_explorer.report import solve_json, solve_table

    hw, problem = req.problem.build()
    pins = req.solve.parsed_pins()
    session = req.solve.session(hw, problem)
    if not session.schedules:
        placed = ", ".join(f"{t}={p.value}" for t, p in problem.placements) or "none"
        print(
            f"loom-explorer: no mapping candidate fits this problem (L1 placements: {placed}); "
            "see docs/model.md section 2",
            file=sys.stderr,
        )
    solved = req.solve.solve(
        session,
        req.solve.options(req.alternatives, req.fastest),
        list(req.candidates) or None,
        announce=lambda: say_solving(len(req.candidates) or len(session.schedules)),
    )
    results = solved.results
    shown = results[: req.top] if req.top else results
    schedules = {s.candidate.name: s for s in session.schedules}
    if req.json:
        print(json.dumps({**solve_json(hw, problem, schedules, shown, pins), "proven_at": solved.proven_at}, indent=2))
    else:
        print(solve_table(hw, problem, schedules, shown))
    if session.stop.stopped:
        say("loom-explorer: interrupted: candidates marked 'interrupted' did not finish")
        return EXIT_INTERRUPTED
    return EXIT_OK if any(r.solution for r in results) else EXIT_NO_SCHEDULE


@dataclass(frozen=True, slots=True)
class TrafficCommand:
    problem: ProblemRequest
    solve: SolveRequest
    candidate: str | None
    links: int
    npe: str | None
    force: bool
    json: bool


def parse_traffic(args: argparse.Namespace) -> TrafficCommand:
    return TrafficCommand(
        ProblemRequest.from_args(args),
        SolveRequest.from_args(args),
        args.candidate,
        args.links,
        args.npe,
        args.force,
        args.json,
    )


def run_traffic(req: TrafficCommand) -> int:
    from loom_explorer.export.files import check_target, write_new
    from loom_explorer.export.npe_workload import npe_workload
    from loom_explorer.model.expr import evaluate
    from loom_explorer.report import traffic_json, traffic_table
    from loom_explorer.traffic import schedule_transfers, traffic_report

    if req.npe:
        check_target(req.npe, req.force)  # an unwritable --npe fails before the solve
    hw, problem = req.problem.build()
    session = req.solve.session(hw, problem)
    # only the best schedule is routed: the other candidates need only be proven no faster
    results = req.solve.solve(session, req.solve.options(fastest=1), [req.candidate] if req.candidate else None).results
    if session.stop.stopped:
        return report_interrupted(results, "traffic")
    chosen = best(results)
    if chosen is None or chosen.solution is None:
        raise no_schedule(results, "traffic")
    schedule = session.schedule(chosen.candidate_name)
    values = chosen.solution.values()
    transfers = schedule_transfers(hw, schedule, values)
    report = traffic_report(hw, transfers, chosen.solution.latency_cycles)
    model_bound = evaluate(schedule.noc_bound_cycles, values)
    if req.npe:
        write_new(req.npe, json.dumps(npe_workload(hw, transfers), indent=1) + "\n", force=req.force)
    if req.json:
        print(json.dumps(traffic_json(hw, chosen.candidate_name, report, model_bound), indent=2))
    else:
        print(traffic_table(hw, problem, chosen.candidate_name, report, model_bound, req.links))
        if req.npe:
            print(f"\ntt-npe workload ({len(transfers)} transfers) written to {req.npe}")
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    solve = add_command(sub, "solve", Command(parse_solve, run_solve, stoppable=True))
    add_problem_args(solve)
    add_memory_args(solve)
    solve.add_argument(
        "--candidate", action="append", default=[], metavar="NAME", help="solve only this candidate (repeatable)"
    )
    solve.add_argument("--top", type=whole(0), default=0, help="show only the N best candidates")
    solve.add_argument(
        "--alternatives",
        type=whole(1),
        default=1,
        metavar="K",
        help="K best distinct schedules per candidate (default 1)",
    )
    solve.add_argument(
        "--fastest",
        type=whole(0),
        default=0,
        metavar="N",
        help="solve only the N fastest candidates to their optimum and prove every other one "
        "no faster (status 'dominated'); much faster than the default, which solves every "
        "candidate (0)",
    )
    traffic = add_command(sub, "traffic", Command(parse_traffic, run_traffic, stoppable=True))
    add_problem_args(traffic)
    add_memory_args(traffic)
    traffic.add_argument("--candidate", default=None, metavar="NAME", help="this candidate (default: the best)")
    traffic.add_argument("--links", type=whole(1), default=10, help="busiest links shown per NoC (default 10)")
    traffic.add_argument("--npe", default=None, metavar="FILE", help="also write a tt-npe workload JSON")
    traffic.add_argument("--force", action="store_true", help="overwrite the --npe file if it exists")
