"""What the engine does on the shipped kernels, written as text files, so that two versions of the code can be
compared file by file: a redesign that must leave behaviour unchanged shows no difference.

    python benchmarks/behaviour_snapshot.py write DIR            # every cell (minutes)
    python benchmarks/behaviour_snapshot.py write DIR --quick    # each kernel's tiny shape on the n150
    python benchmarks/behaviour_snapshot.py compare BEFORE AFTER # the files that differ; exit 1 if any
    python benchmarks/behaviour_snapshot.py --quick              # the quick cells twice: the snapshot repeats

A cell is one ``solve`` problem: a shipped chip x a shipped kernel x a shape (its family's tiny, ragged and
benchmark shapes from ``shipped_matrix.py``, and attention's decode-like one) x its options (default, the
TT-Lang target, each program option such as ``--causal``, every tensor in L1, and bias with gelu where the
kernel has them). Each cell's folder holds:

* ``symbolic.txt``: every candidate's symbolic schedule (``Session(hw, problem).schedules``): parameters with
  their domains, descriptions and bounds, every constraint (name, family, kind, both sides as text, message),
  latency and its redundant lower bound, latency terms, L1 buffers, L1 and DRAM bytes, flops, ideal cycles,
  traffic flows, NoC bound and cores used;
* ``solve.json``: ``loom-explorer solve --json --workers 1 --seed 0 --fastest 1 --no-cache`` (the candidates
  solved until the best is proven: optimum, parameters, breakdown, conflict), without timings and the date;
* ``export.<format>``: ``loom-explorer export --candidate BEST`` of the best candidate in every format (TT-Lang,
  TTNN, JSON, NPE), answered from that cell's store of the solve above, with the creation date blanked.

One CP-SAT worker and a fixed seed make each solve repeatable, so a difference is a change of the model or of
the code that prints it. A cell the command refuses writes its exit status and message instead.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
import time
from dataclasses import fields
from pathlib import Path

from shipped_matrix import FAMILIES, Cell  # beside this file: a script's folder is the first entry of sys.path

from loom_explorer.cli.common import ProblemRequest, SolveRequest
from loom_explorer.cli.entry import build_parser
from loom_explorer.cli.entry import main as cli_main
from loom_explorer.errors import LoomError
from loom_explorer.model.expr import Expr, describe
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.program import list_kernels, load_program

CHIPS = ("wormhole_n150", "blackhole_p150a")
SHAPE_LABELS = ("tiny", "ragged", "square", "prefill", "gqa 4", "mlp")  # the first three a family has
EXTRA_LABELS = ("decode-like",)  # and these (flash-decoding's key/value split)  # those a family has, in this order
FORMATS = {"ttlang": "py", "ttnn": "py", "json": "json", "npe": "yaml"}
SOLVE_FLAGS = ("--workers", "1", "--seed", "0", "--time-limit", "120")  # solve and export; solve adds --fastest 1
_DATE = re.compile(r'"created": "[^"]*"')
_TIMINGS = ("solve_seconds", "proven_at")


def cells(quick: bool) -> list[Cell]:
    """Every chip x kernel x (shape, options); ``quick``: each kernel's tiny shape on the n150."""
    out = []
    for kernel in list_kernels():
        program = load_program(kernel)
        grid = dict(FAMILIES.get(tuple(d.name for d in program.dims), ()))
        shapes = ([grid[k] for k in SHAPE_LABELS if k in grid] or [program.example_shape or ""])[:3]
        shapes += [grid[k] for k in EXTRA_LABELS if k in grid]
        needs_activation = program.uses_activation and not any(t.optional for t in program.tensors)
        base: tuple[str, ...] = ("--activation", "gelu") if needs_activation else ()
        variants = [base, (*base, "--target", "ttlang"), *[(*base, f"--{o}") for o in program.options]]
        variants.append(
            (
                *base,
                *[a for t in program.tensors if t.role in ("input", "output") for a in ("--memory", f"{t.name}=l1")],
            )
        )  # L1-sharded: TTNN's sharded configs
        if any(t.optional for t in program.tensors):
            variants.append(("--bias", "--activation", "gelu"))
        for hw in CHIPS[:1] if quick else CHIPS:
            for shape in shapes[:1] if quick else shapes:
                out += [Cell(hw, kernel, "", shape, flags) for flags in variants[: 1 if quick else None]]
    return out


def folder_name(cell: Cell) -> str:
    return re.sub(r"[^A-Za-z0-9=,._-]+", "_", cell.text)


def schedule_text(s: SymbolicSchedule) -> str:
    """One candidate's symbolic schedule as text, field by field (expressions as ``describe`` writes them)."""
    lines = [f"candidate {s.candidate.name}"]
    lines += [f"  param {p.name} in {p.domain_text()} [{p.unit}] {p.description} | {p.bound}" for p in s.params]
    lines += [
        f"  constraint {c.name} ({c.family}) {c.kind}: {describe(c.lhs)} | {describe(c.rhs)} | {c.message}"
        for c in s.constraints
    ]
    lines += [f"  latency {describe(s.latency)}", f"  latency_lower_bound {describe(s.latency_lower_bound)}"]
    lines += [f"  term {t.name} = {describe(t.expr)} | {t.description}" for t in s.terms]
    lines += [f"  l1_buffer {b.name} = {describe(b.bytes_expr)} | {b.description}" for b in s.l1_buffers]
    lines += [
        f"  l1_bytes {describe(s.l1_bytes)}",
        f"  dram_read_bytes {describe(s.dram_read_bytes)}",
        f"  flops {s.flops}",
        f"  ideal_cycles {s.ideal_cycles}",
        f"  noc_bound_cycles {describe(s.noc_bound_cycles)}",
        f"  cores_used {describe(s.cores_used)}",
    ]
    for flow in s.traffic:
        parts = [
            f"{f.name}={describe(v) if isinstance(v, Expr) else v}"
            for f in fields(flow)
            for v in [getattr(flow, f.name)]
        ]
        lines.append("  flow " + " ".join(parts))
    return "\n".join(lines) + "\n"


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli_main(argv)
    return status, out.getvalue(), err.getvalue()


def write_cell(cell: Cell, folder: Path) -> str:
    """Write ``cell``'s files into ``folder``; a one-line summary."""
    folder.mkdir(parents=True)
    try:
        args = build_parser().parse_args([*cell.argv(), "--no-cache"])
        hw, problem = ProblemRequest.from_args(args).build()
        session = SolveRequest.from_args(args).session(hw, problem)
    except LoomError as exc:
        (folder / "refused.txt").write_text(f"exit {exc.exit_status}: {exc}\n")
        return "refused"
    (folder / "symbolic.txt").write_text("".join(schedule_text(s) for s in session.schedules))
    store = folder.parent / f".{folder.name}.sqlite"
    try:
        return _solve_and_export(cell, folder, store, len(session.schedules))
    finally:
        store.unlink(missing_ok=True)


def _solve_and_export(cell: Cell, folder: Path, store: Path, candidates: int) -> str:
    """``solve.json`` and the exports of ``cell`` into ``folder``, through the results store ``store``."""
    status, out, err = _run(
        [*cell.argv(), "--json", "--no-cache", "--store", str(store), "--fastest", "1", *SOLVE_FLAGS]
    )
    if out.strip():
        doc = json.loads(out)
        doc.pop("proven_at", None)
        for c in doc.get("candidates", []):
            for key in _TIMINGS:
                c.pop(key, None)
        out = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    (folder / "solve.json").write_text(f"exit {status}\n{out}")
    if status != 0:
        (folder / "solve.stderr").write_text(err)
        return f"solve exit {status}"
    best = json.loads(out)["candidates"][0]["name"]  # the proven best, first
    for fmt, ext in FORMATS.items():
        target = folder / f"export.{fmt}.{ext}"
        status, _, err = _run(
            [
                "export",
                *cell.argv()[1:],
                "--format",
                fmt,
                "-o",
                str(target),
                "--store",
                str(store),
                "--candidate",
                best,
                *SOLVE_FLAGS,
            ]
        )
        if status != 0:
            target.with_suffix(".refused").write_text(f"exit {status}: {err.strip().splitlines()[-1:]}\n")
        else:
            target.write_text(_DATE.sub('"created": ""', target.read_text()))
    return f"{candidates} candidates"


def write(folder: Path, quick: bool) -> int:
    if folder.exists() and any(folder.iterdir()):
        print(f"behaviour_snapshot: {folder} is not empty; give a new folder", file=sys.stderr)
        return 2
    chosen = cells(quick)
    start = time.perf_counter()
    for i, cell in enumerate(chosen, 1):
        t0 = time.perf_counter()
        summary = write_cell(cell, folder / folder_name(cell))
        print(f"{i:3d}/{len(chosen)} {time.perf_counter() - t0:6.1f} s  {cell.text}: {summary}", flush=True)
    print(f"{len(chosen)} cells in {time.perf_counter() - start:.0f} s -> {folder}")
    return 0


def compare(before: Path, after: Path) -> int:
    """Print each file that is only on one side or differs, with its first differing line; 1 if any."""
    a = {p.relative_to(before) for p in before.rglob("*") if p.is_file() and not p.name.startswith(".")}
    b = {p.relative_to(after) for p in after.rglob("*") if p.is_file() and not p.name.startswith(".")}
    problems = [f"only before: {p}" for p in sorted(a - b)] + [f"only after: {p}" for p in sorted(b - a)]
    for p in sorted(a & b):
        old, new = (before / p).read_text().splitlines(), (after / p).read_text().splitlines()
        if old != new:
            i = next((k for k, (x, y) in enumerate(zip(old, new, strict=False)) if x != y), min(len(old), len(new)))
            problems.append(
                f"differs: {p} line {i + 1}:\n  - {old[i] if i < len(old) else '(end)'}\n"
                f"  + {new[i] if i < len(new) else '(end)'}"
            )
    for line in problems:
        print(line)
    print(f"{len(a & b)} files in both, {len(problems)} differences")
    return 1 if problems else 0


def repeats(quick: bool) -> int:
    """Write the snapshot twice into temporary folders and compare: 0 differences when it is repeatable."""
    with tempfile.TemporaryDirectory() as temp:
        first, second = Path(temp) / "first", Path(temp) / "second"
        if write(first, quick) or write(second, quick):
            return 2
        return compare(first, second)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="each kernel's tiny shape on the n150")
    sub = parser.add_subparsers(dest="command")
    w = sub.add_parser("write")
    w.add_argument("folder", type=Path)
    w.add_argument("--quick", action="store_true", default=argparse.SUPPRESS)
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "write":
        return write(args.folder, args.quick)
    if args.command == "compare":
        return compare(args.before, args.after)
    return repeats(args.quick)


if __name__ == "__main__":
    sys.exit(main())
