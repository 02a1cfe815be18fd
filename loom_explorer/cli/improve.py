"""``loom-explorer improve``: the ops of a device-profiler capture, the config each ran, the best schedule ttnn
can run instead and the predicted gain, with totals; ``-o`` writes the configs (``accuracy/improve.py``,
``accuracy/improve_configs.py``)."""

from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import dataclass

from loom_explorer.accuracy.improve import Improvement, ImproveReport
from loom_explorer.accuracy.improve_collectives import CollectiveImproveReport
from loom_explorer.cli.common import Command, InputError, add_command, add_store_arg, say, say_rows, seconds
from loom_explorer.errors import EXIT_OK
from loom_explorer.export.files import check_target, write_new

SUFFIXES = (".json", ".py")


@dataclass(frozen=True, slots=True)
class ImproveCommand:
    file: str
    hw: str | None
    output: str | None
    force: bool
    json: bool
    no_cache: bool
    store: str | None
    time_limit: float
    skip_bad_rows: bool = False


def parse_improve(args: argparse.Namespace) -> ImproveCommand:
    return ImproveCommand(
        args.file,
        args.hw,
        args.output,
        args.force,
        args.json,
        args.no_cache,
        args.store,
        args.time_limit,
        args.skip_bad_rows,
    )


def run_improve(req: ImproveCommand) -> int:
    from loom_explorer.accuracy.coverage import coverage_lines
    from loom_explorer.accuracy.improve import improve_report
    from loom_explorer.accuracy.improve_configs import configs_json, configs_python
    from loom_explorer.accuracy.ingest import choose_hardware, read_ops_perf
    from loom_explorer.accuracy.progress import Progress
    from loom_explorer.solve.interrupt import STOP, Interrupted
    from loom_explorer.solve.solver import SolveOptions
    from loom_explorer.targets.ttnn.config_text import config_call

    if req.output and not req.output.endswith(SUFFIXES):
        raise InputError(f"-o {req.output}: the configs are written as .json or .py (by the suffix)")
    if req.output:
        check_target(req.output, req.force)  # refused now, before the solves
    try:  # Ctrl-C stops the reading and the solves; the message says how far they got (Progress, improve_report)
        with Progress(stop=STOP) as progress:
            report = read_ops_perf(req.file, skip_bad_rows=req.skip_bad_rows, progress=progress)
            if report.bad:
                say_rows(f"skipped {len(report.bad)} unusable rows (--skip-bad-rows):", report.bad)
            if not report.ops:
                raise InputError(
                    f"{req.file}: no op the model reads ({len(report.skipped)} rows skipped; "
                    "`ingest` lists each with its reason)"
                )
            hw_name, grid, chip = choose_hardware(report, req.hw)
            options = SolveOptions(time_limit_seconds=req.time_limit, explain=False, fastest=1)
            result = improve_report(
                report, hw_name, grid, chip, options, use_memory=not req.no_cache, store=req.store, progress=progress
            )
    except Interrupted as exc:
        raise Interrupted(f"{exc}; nothing printed or written") from None
    command = shlex.join(["loom-explorer", "improve", req.file, *(["--hw", req.hw] if req.hw else [])])
    if req.output:
        text = configs_python(result, command) if req.output.endswith(".py") else configs_json(result)
        written = write_new(req.output, text, req.force)
        say(f"wrote the configs of {sum(o.best_config is not None for o in result.ops)} ops to {written}")
    if req.json:
        print(json.dumps(_json(result), indent=2))
        return EXIT_OK
    print(f"{req.file}: predicted on {result.chip}")
    for line in coverage_lines(result.coverage):
        print(f"  {line}")
    print()
    print(_table(result))
    print()
    print(result.totals_line())
    print(
        "The gain is the model's (calibrated); 'at least' is what remains if both predictions are off by the "
        "family's cross-validated median error (loom-explorer accuracy --by family)."
    )
    for o in result.ops:
        if o.best_config is not None:
            print(f"\n{o.key}:\n  " + "\n  ".join(config_call(o.best_config)))
    if result.collectives is not None:
        print()
        print(_collectives(result.collectives))
    return EXIT_OK


def _collectives(c: CollectiveImproveReport) -> str:
    """The collective rows' table (``improve_collectives.py``)."""
    lines = [f"collectives on {c.mesh}: num_links and topology priced by the collective model (calibrated)"]
    head = ["collective", "calls", "measured us", "as run", "as run us", "best", "best us", "gain ms"]
    rows = [
        [
            o.key,
            str(o.calls),
            _us(o.measured_ns),
            o.ran.label,
            _us(o.ran.predicted_ns),
            o.best.label if o.saving_ns > 0 else "(keeps its own)",
            _us(o.best.predicted_ns),
            f"{o.gain_ns / 1e6:.3f}",
        ]
        for o in c.ops
    ]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines += ["  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)) for r in [head, *rows]]
    lines.append(
        "gain: the saving per call times the rows (one per device and call: device time summed over the devices)"
    )
    lines += [f"row {row}: not improved: {why}" for row, why in c.skipped]
    if c.ring_rows_kept:
        lines.append(f"{c.ring_rows_kept} ring-joint SDPA rows kept as predicted (not improved)")
    return "\n".join(lines)


def _collectives_json(c: CollectiveImproveReport) -> dict[str, object]:
    return {
        "mesh": c.mesh,
        "ops": [
            {
                "key": o.key,
                "op_code": o.op_code,
                "rows": list(o.rows),
                "calls": o.calls,
                "measured_ns": o.measured_ns,
                "ran": {"num_links": o.ran.num_links, "topology": o.ran.topology.value, "ns": o.ran.predicted_ns},
                "best": {"num_links": o.best.num_links, "topology": o.best.topology.value, "ns": o.best.predicted_ns},
                "choices": [
                    {"num_links": x.num_links, "topology": x.topology.value, "ns": x.predicted_ns} for x in o.choices
                ],
                "saving_ns": o.saving_ns,
                "gain_ns": o.gain_ns,
                "note": o.note,
            }
            for o in c.ops
        ],
        "skipped": [{"row": row, "reason": why} for row, why in c.skipped],
        "ring_rows_kept": c.ring_rows_kept,
    }


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def _us(ns: float | None) -> str:
    return f"{ns / 1e3:.1f}" if ns is not None else "-"


def _table(result: ImproveReport) -> str:
    head = ["op", "calls", "measured us", "as run us", "best us", "gain ms", "at least ms", "best candidate / why not"]
    rows = [
        [
            o.key,
            str(o.calls),
            _us(o.measured_ns),
            _us(o.ran_ns),
            _us(o.best_ns),
            f"{o.gain_ns / 1e6:.3f}" if o.gain_ns is not None else "-",
            _floor(o),
            o.best_candidate or _why(o),
        ]
        for o in result.ops
    ]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head) - 1)]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] for r in [head, *rows]
    )


def _floor(o: Improvement) -> str:
    """The gain's floor at the family's error (``Improvement.gain_floor_ns``), or that it is within it."""
    if o.gain_floor_ns is None:
        return "-"
    if o.within_error:
        return f"within {o.error_pct:.0f}%"
    return f"{o.gain_floor_ns / 1e6:.3f}"


def _why(o: Improvement) -> str:
    return o.note.split("; ")[-1] if o.note else "not predicted"


def _json(result: ImproveReport) -> dict[str, object]:
    return {
        "file": str(result.file),
        "hardware": result.hardware,
        "grid": list(result.grid) if result.grid else None,
        "chip": result.chip,
        "coverage": result.coverage.as_json(),
        "totals": {
            "measured_ns": result.measured_ns,
            "ran_ns": result.ran_ns,
            "best_ns": result.best_ns,
            "gain_ns": result.gain_ns,
            "gain_floor_ns": result.gain_floor_ns,
        },
        "ops": [
            {
                "key": o.key,
                "op_code": o.op_code,
                "kernel": o.kernel,
                "shape": o.shape,
                "rows": list(o.rows),
                "calls": o.calls,
                "measured_ns": o.measured_ns,
                "ran_ns": o.ran_ns,
                "ran_candidate": o.ran_candidate,
                "ran_config": o.ran_config.model_dump(mode="json") if o.ran_config else None,
                "best_ns": o.best_ns,
                "best_candidate": o.best_candidate,
                "best_values": dict(o.best_values),
                "best_config": o.best_config.model_dump(mode="json") if o.best_config else None,
                "gain_ns": o.gain_ns,
                "gain_floor_ns": o.gain_floor_ns,
                "error_pct": o.error_pct,
                "note": o.note,
            }
            for o in result.ops
        ],
        "collectives": _collectives_json(result.collectives) if result.collectives is not None else None,
    }


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    improve = add_command(sub, "improve", Command(parse_improve, run_improve, stoppable=True))
    improve.add_argument("file", help="ops_perf_results_<timestamp>.csv (or .csv.gz) from tt-metal's device profiler")
    improve.add_argument("--hw", default=None, help="hardware to predict on (default: told from the capture)")
    improve.add_argument(
        "-o",
        "--output",
        default=None,
        metavar="FILE",
        help="write the best configs keyed by op: FILE.json, or FILE.py (ttnn constructor calls); "
        "`predict --ttnn-config FILE --op KEY` reads either",
    )
    improve.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    improve.add_argument("--json", action="store_true")
    improve.add_argument(
        "--no-cache", action="store_true", help="solve every op again instead of answering from the results store"
    )
    improve.add_argument("--time-limit", type=seconds, default=30.0, help="CP-SAT seconds per op (default 30)")
    improve.add_argument(
        "--skip-bad-rows",
        action="store_true",
        help="skip rows with a bad number cell or a wrong number of cells (counted, grouped by "
        "reason) instead of refusing the file at the first",
    )
    add_store_arg(improve)
