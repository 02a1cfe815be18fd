"""``sweep`` (every op of a shapes file or a model on every chip, with Dask) and ``report`` (a sweep's
results as Markdown or HTML)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from loom_explorer.cli.common import (
    MAX_SWEEP_WORKERS,
    Command,
    InputError,
    add_command,
    say,
    seconds,
    whole,
)
from loom_explorer.errors import EXIT_INTERRUPTED, EXIT_OK
from loom_explorer.export.files import write_new
from loom_explorer.hardware import load_hardware


@dataclass(frozen=True, slots=True)
class SweepCommand:
    shapes: str | None
    model: str | None
    write_shapes: str | None
    hardware: tuple[str, ...]
    out: str
    scheduler: str | None
    workers: int | None
    time_limit_seconds: float
    force: bool
    no_cache: bool = False


def parse_sweep(args: argparse.Namespace) -> SweepCommand:
    if bool(args.shapes) == bool(args.model):
        raise InputError("sweep needs a shapes.csv or --model NAME (not both)")
    return SweepCommand(
        args.shapes,
        args.model,
        args.write_shapes,
        tuple(h.strip() for h in args.hw.split(",") if h.strip()),
        args.out,
        args.scheduler,
        args.workers,
        args.time_limit,
        args.force,
        args.no_cache,
    )


def run_sweep(req: SweepCommand) -> int:
    from loom_explorer.hardware.mesh_load import is_mesh_name, load_mesh
    from loom_explorer.sweep.mesh_task import mesh_layers
    from loom_explorer.sweep.ops import model_ops, read_shapes, write_shapes
    from loom_explorer.sweep.run import run_sweep as sweep
    from loom_explorer.sweep.task import SweepSettings

    meshes = [h for h in req.hardware if is_mesh_name(h)]  # a shipped mesh: its decoder layers are split
    chips = [h for h in req.hardware if h not in meshes]
    for h in chips:
        load_hardware(h)  # a bad name fails here, before any worker starts
    for h in meshes:
        load_mesh(h)
    if meshes and not req.model:
        raise InputError(f"--hw {','.join(meshes)}: a mesh sweep splits a model's decoder layers: give --model")
    if req.model:
        ops = model_ops(req.model)
    else:
        assert req.shapes is not None  # parse_sweep: one of the two
        ops = read_shapes(req.shapes)
    if req.write_shapes:
        write_new(req.write_shapes, write_shapes(ops), force=req.force)
        say(f"wrote {len(ops)} ops to {req.write_shapes}")
    summary = sweep(
        ops if chips else [],
        chips,
        req.out,
        meshes=meshes,
        layers=mesh_layers(req.model) if meshes and req.model else [],
        scheduler=req.scheduler,
        workers=req.workers,
        settings=SweepSettings(time_limit_seconds=req.time_limit_seconds, use_memory=not req.no_cache),
    )
    print(
        f"sweep: {summary.solved} solved ({summary.failed} failed), {summary.skipped} already in {req.out}, "
        f"{summary.seconds:.1f} s" + (" (interrupted)" if summary.interrupted else "")
    )
    return EXIT_INTERRUPTED if summary.interrupted else EXIT_OK


@dataclass(frozen=True, slots=True)
class ReportCommand:
    store_file: str
    html: str | None
    markdown: str | None
    title: str | None
    force: bool


def parse_report(args: argparse.Namespace) -> ReportCommand:
    return ReportCommand(args.store_file, args.html, args.markdown, args.title, args.force)


def run_report(req: ReportCommand) -> int:
    from loom_explorer.store import open_store
    from loom_explorer.sweep.report import report_markdown
    from loom_explorer.ui.sweep_report import report_html

    if not Path(req.store_file).is_file():
        raise InputError(f"{req.store_file}: no such results store")
    with open_store(req.store_file) as store:
        records = store.sweep_results()
    if not records:
        raise InputError(f"{req.store_file}: no sweep results (run loom-explorer sweep first)")
    title = req.title or f"Sweep report: {Path(req.store_file).name}"
    if req.html:
        write_new(req.html, report_html(records, title), force=req.force)
        say(f"wrote {req.html}")
    if req.markdown:
        write_new(req.markdown, report_markdown(records, title), force=req.force)
        say(f"wrote {req.markdown}")
    if not (req.html or req.markdown):
        print(report_markdown(records, title))
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sweep = add_command(sub, "sweep", Command(parse_sweep, run_sweep, stoppable=True))
    sweep.add_argument(
        "shapes", nargs="?", help="CSV with columns kernel,shape,dtype,fidelity[,options][,causal][,label]"
    )
    sweep.add_argument("--model", default=None, help="generate the ops of a model: llama-3-8b, llama-3-70b")
    sweep.add_argument("--write-shapes", default=None, metavar="FILE", help="also write the ops as a shapes.csv")
    sweep.add_argument(
        "--hw",
        required=True,
        help="comma-separated hardware names or YAML paths; a shipped mesh (t3000, galaxy) splits --model's layers",
    )
    sweep.add_argument("--out", required=True, metavar="STORE", help="results store (SQLite) to add to")
    sweep.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="a running Dask scheduler, e.g. tcp://host:8786 (default: a local cluster)",
    )
    sweep.add_argument(
        "--workers",
        type=whole(1, MAX_SWEEP_WORKERS),
        default=None,
        help="local worker processes, at most 4 per core (default: one per core)",
    )
    sweep.add_argument("--time-limit", type=seconds, default=30.0, help="seconds per candidate (default 30)")
    sweep.add_argument("--force", action="store_true", help="overwrite the --write-shapes file")
    sweep.add_argument(
        "--no-cache", action="store_true", help="solve every op again, even one the default results store holds proven"
    )
    report = add_command(sub, "report", Command(parse_report, run_report))
    report.add_argument("store_file", metavar="STORE", help="the results store a sweep wrote")
    report.add_argument("--html", default=None, metavar="FILE", help="write a self-contained HTML report")
    report.add_argument("--markdown", default=None, metavar="FILE", help="write the report as Markdown")
    report.add_argument("--title", default=None)
    report.add_argument("--force", action="store_true", help="overwrite existing files")
