"""Turn solve results into the machine contract (JSON) and human-readable tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: a table of stored results imports no model module
    from loom_explorer.hardware.schema import HardwareSpec
    from loom_explorer.model.schedule import SymbolicSchedule
    from loom_explorer.problem import Problem
    from loom_explorer.result import CandidateResult, Solution
    from loom_explorer.traffic.loads import TrafficReport

SCHEMA_VERSION = 1


def solution_metrics(hw: HardwareSpec, schedule: SymbolicSchedule, solution: Solution) -> dict[str, float]:
    latency_us = hw.cycles_to_us(solution.latency_cycles)
    return {
        "latency_us": round(latency_us, 3),
        "tflops": round(schedule.flops / (latency_us * 1e-6) / 1e12, 3),
        "roofline_pct": round(100.0 * schedule.ideal_cycles / solution.latency_cycles, 2),
    }


def _solution_json(hw: HardwareSpec, schedule: SymbolicSchedule, s: Solution) -> dict[str, Any]:
    return {
        "latency_cycles": s.latency_cycles,
        **solution_metrics(hw, schedule, s),
        "params": dict(s.params),
        "breakdown": dict(s.breakdown),
        "l1_bytes": s.l1_bytes,
        "dram_read_bytes": s.dram_read_bytes,
    }


def result_json(hw: HardwareSpec, schedule: SymbolicSchedule, r: CandidateResult) -> dict[str, Any]:
    empty: dict[str, Any] = {
        "latency_cycles": None,
        "latency_us": None,
        "tflops": None,
        "roofline_pct": None,
        "params": {},
        "breakdown": {},
        "l1_bytes": None,
        "dram_read_bytes": None,
    }
    body = _solution_json(hw, schedule, r.solution) if r.solution else empty
    return {
        "name": r.candidate_name,
        "description": r.description,
        "status": r.status,
        **body,
        "best_bound_cycles": r.best_bound_cycles,
        "solve_seconds": round(r.solve_seconds, 4),
        "conflict": None
        if r.conflict is None
        else {
            "pins": dict(r.conflict.pins),
            "constraints": list(r.conflict.constraints),
            "families": list(r.conflict.families),
            "message": r.conflict.message,
        },
        "alternatives": [_solution_json(hw, schedule, a) for a in r.alternatives],
    }


def solve_json(
    hw: HardwareSpec,
    problem: Problem,
    schedules: dict[str, SymbolicSchedule],
    results: list[CandidateResult],
    pins: dict[str, int],
) -> dict[str, Any]:
    formats = dict(problem.formats)
    out = problem.program.outputs[0].name
    return {
        "schema_version": SCHEMA_VERSION,
        "hardware": hw.name,
        "kernel": problem.program.name,
        "shape": dict(problem.shape),
        "dtype": formats[out].value,
        "formats": {k: v.value for k, v in formats.items()},
        "fidelity": problem.fidelity.value,
        "fp32_acc": problem.fp32_acc,
        "options": sorted(problem.options),
        "pins": pins,
        # true when a stop request (Ctrl-C) cut the solve short: candidates with status "interrupted" are unfinished
        "interrupted": any(r.status == "interrupted" for r in results),
        "candidates": [result_json(hw, schedules[r.candidate_name], r) for r in results],
    }


def formats_text(problem: Problem) -> str:
    """The data format of every tensor the problem uses: one name when they agree (``bfloat16``), else each
    tensor's, in the program's order (``in0 bfloat16, in1 bfloat8_b, out bfloat16``); a disabled optional
    tensor is left out."""
    used = [(t, f.value) for t, f in problem.formats if problem.is_enabled(t)]
    if len({f for _, f in used}) == 1:
        return used[0][1]
    return ", ".join(f"{t} {f}" for t, f in used)


def problem_heading(hw: HardwareSpec, problem: Problem) -> str:
    """E.g. ``gemm M=1024,N=1024,K=1024 on wormhole_n150 (8x8 cores, 1.0 GHz), bfloat16, hifi2``; with
    ``in1=bfp8_b``: ``..., in0 bfloat16, in1 bfloat8_b, out bfloat16, hifi2`` (``formats_text``)."""
    return (
        f"{problem.program.name} {problem.shape_text} on {hw.name} ({hw.grid.columns}x{hw.grid.rows} cores, "
        f"{hw.clock_ghz} GHz), {formats_text(problem)}, "
        f"{problem.fidelity.value}" + "".join(f", {o}" for o in sorted(problem.options))
    )


def schedule_lines(hw: HardwareSpec, schedule: SymbolicSchedule, solution: Solution) -> list[str]:
    """A schedule's parameters, latency breakdown and L1 use, indented under its heading."""
    lines = [
        "  parameters:",
        *(f"    {n:<18} {v}" for n, v in solution.params),
        f"  latency breakdown (cycles, total {solution.latency_cycles:,}):",
        *(f"    {n:<18} {v:>12,}" for n, v in solution.breakdown),
    ]
    lines.append(
        f"  L1 {solution.l1_bytes:,} B of {hw.l1.usable_bytes:,} B usable; "
        f"compute roofline {schedule.ideal_cycles:,} cycles"
    )
    return lines


def predict_table(hw: HardwareSpec, problem: Problem, schedule: SymbolicSchedule, result: CandidateResult) -> str:
    """What ``predict`` costed: the candidate a given config runs as, its latency, or why the model finds it
    illegal (nothing was solved, so no status or solve time)."""
    lines = [
        f"predicted for {problem_heading(hw, problem)}",
        "",
        f"as candidate {result.candidate_name}",
        f"  {result.description}",
    ]
    if result.solution is None:
        message = result.conflict.message if result.conflict is not None else result.status
        return "\n".join([*lines, f"  illegal in the model: {message}"])
    m = solution_metrics(hw, schedule, result.solution)
    lines.append(
        f"  latency {m['latency_us']:,.2f} us, {m['tflops']:.1f} TFLOP/s, {m['roofline_pct']:.1f}% of "
        "the compute roofline"
    )
    return "\n".join([*lines, *schedule_lines(hw, schedule, result.solution)])


def solve_table(
    hw: HardwareSpec, problem: Problem, schedules: dict[str, SymbolicSchedule], results: list[CandidateResult]
) -> str:
    lines = [
        problem_heading(hw, problem),
        "",
        f"{'#':>2}  {'candidate':<44} {'status':<11} {'latency us':>11} {'TFLOP/s':>8} {'roofline':>8} "
        f"{'L1 KiB':>7} {'solve ms':>8}",
    ]
    for i, r in enumerate(results, 1):
        if r.solution:
            m = solution_metrics(hw, schedules[r.candidate_name], r.solution)
            cols = (
                f"{m['latency_us']:>11.2f} {m['tflops']:>8.1f} {m['roofline_pct']:>7.1f}% "
                f"{r.solution.l1_bytes / 1024:>7.0f}"
            )
        elif r.status == "dominated" and r.best_bound_cycles is not None:  # proven no faster than this
            cols = f"{'>=' + format(hw.cycles_to_us(r.best_bound_cycles), '.2f'):>11} {'-':>8} {'-':>8} {'-':>7}"
        else:
            cols = f"{'-':>11} {'-':>8} {'-':>8} {'-':>7}"
        lines.append(f"{i:>2}  {r.candidate_name:<44} {r.status:<11} {cols} {r.solve_seconds * 1e3:>8.0f}")
    best = next((r for r in results if r.solution), None)
    if best is not None and best.solution is not None:
        sch = schedules[best.candidate_name]
        unproven = (
            " (interrupted: the best schedule its search found, not proven optimal)"
            if best.status == "interrupted"
            else ""
        )
        lines += [
            "",
            f"best: {best.candidate_name}{unproven}",
            f"  {best.description}",
            *schedule_lines(hw, sch, best.solution),
        ]
    conflicts = [r for r in results if r.conflict is not None]
    if conflicts:
        lines += ["", "no schedule:"]
        for r in conflicts:
            assert r.conflict is not None
            lines.append(f"  {r.candidate_name}: {r.conflict.message}")
    stopped = sum(r.status == "interrupted" for r in results)
    if stopped:
        lines += [
            "",
            (
                f"interrupted: {stopped} of {len(results)} candidates did not finish (status interrupted); "
                "the schedule shown for one is the best its search found, not proven optimal"
            ),
        ]
    return "\n".join(lines)


def traffic_json(hw: HardwareSpec, candidate: str, report: TrafficReport, model_bound_cycles: int) -> dict[str, Any]:
    """The traffic contract: every loaded link (NoC coordinates of the hardware file), every DRAM bank,
    bytes sent/received, the busiest link's (or bank's) cycles, and the model's symbolic NoC bound."""
    return {
        "schema_version": SCHEMA_VERSION,
        "hardware": hw.name,
        "candidate": candidate,
        "latency_cycles": report.latency_cycles,
        "links": [
            {
                "noc": x.noc,
                "src": list(x.src),
                "dst": list(x.dst),
                "bytes": x.bytes,
                "utilisation": round(x.utilisation, 6),
            }
            for x in report.links
        ],
        "dram": [{"bank": b.bank, "bytes_read": b.bytes_read, "bytes_written": b.bytes_written} for b in report.dram],
        "bytes_sent": report.bytes_sent,
        "bytes_received": report.bytes_received,
        "bytes_multicast": report.bytes_multicast,
        "bytes_unicast": report.bytes_unicast,
        "link_bound_cycles": report.link_bound_cycles,
        "busiest": report.busiest,
        "latency_explained": round(report.explained, 4),
        "model_noc_bound_cycles": model_bound_cycles,
    }


def traffic_table(
    hw: HardwareSpec, problem: Problem, candidate: str, report: TrafficReport, model_bound_cycles: int, top: int = 10
) -> str:
    read = sum(b.bytes_read for b in report.dram)
    written = sum(b.bytes_written for b in report.dram)
    lines = [
        f"traffic of {problem.program.name} {problem.shape_text} on {hw.name}, candidate {candidate}",
        f"predicted latency {report.latency_cycles:,} cycles ({hw.cycles_to_us(report.latency_cycles):.2f} us)",
        "",
        f"DRAM: {read:,} B read, {written:,} B written; per bank (read / written):",
    ]
    lines += [f"  bank {b.bank:>2}: {b.bytes_read:>15,} / {b.bytes_written:>15,}" for b in report.dram]
    lines += [
        f"multicast: {report.bytes_multicast:,} B sent; core-to-core unicast: {report.bytes_unicast:,} B; "
        f"all transfers: {report.bytes_sent:,} B sent, {report.bytes_received:,} B received",
    ]
    width = hw.noc.link_bytes_per_cycle
    for noc in (0, 1):
        busiest = [x for x in report.links if x.noc == noc][:top]
        lines += [
            "",
            f"busiest links of NoC{noc} ({width} B/cycle each):",
            f"  {'link':<22} {'bytes':>15} {'of capacity':>11}",
        ]
        lines += [f"  {f'{x.src}->{x.dst}':<22} {x.bytes:>15,} {100 * x.utilisation:>10.1f}%" for x in busiest]
        if not busiest:
            lines.append("  (no traffic)")
    lines += [
        "",
        f"the busiest link or bank ({report.busiest}) needs {report.link_bound_cycles:,} cycles on its own: "
        f"{100 * report.explained:.1f}% of the predicted latency",
        f"the model's NoC bound for this schedule: {model_bound_cycles:,} cycles",
    ]
    return "\n".join(lines)
