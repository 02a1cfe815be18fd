"""The shipped space: every shipped chip x every shipped kernel x a grid of shapes and options, each solved as
`loom-explorer solve ... --fastest 1` solves it, checked to end in a schedule or a one-line reason.

    python benchmarks/shipped_matrix.py            # the full matrix (every chip x kernel x its grid)
    python benchmarks/shipped_matrix.py --quick    # one chip, each kernel's tiny shape, the regressions (seconds)
    python benchmarks/shipped_matrix.py --build-only   # every cell up to its models and latency floors, no solve

Each cell runs the command line in this process (``loom_explorer.cli.entry.main``, the code path of the
``loom-explorer`` command, without Python's start-up per cell) with ``--fastest 1 --no-cache`` and a temporary
results store. A cell passes when it exits 0 with a schedule printed (``best:``), 2 (bad input: one line
``loom-explorer: error: ...``) or 3 (no schedule, with its reasons), within 60 s (``LIMIT_SECONDS``). Exit 70
(an internal error), any other status, a missing answer or a slower cell is a failure: the script prints
every cell (status, wall and CPU seconds, the schedule's latency or the reason), a count by outcome, the
slowest cells and the failures, and exits 1 when there is any failure.

The grid per kernel (:func:`cells`) crosses its dimensions' family of structural shapes (tiny, one element,
ragged, skinny both ways, deep and shallow reductions, square, huge and beyond the model's range; for
attention grouped-query ratios 1, 2, 4, 8 and more, decode-like and key-light, with and without ``--causal``)
with the options the kernel takes (data formats, fidelities, fp32 accumulation, L1 placements of its
tensors, the TT-Lang target, its optional tensors, its activations) on a few of those shapes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from loom_explorer.cli.common import ProblemRequest, SolveRequest
from loom_explorer.cli.entry import build_parser
from loom_explorer.cli.entry import main as cli_main
from loom_explorer.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_NO_SCHEDULE, EXIT_OK, LoomError
from loom_explorer.hardware import list_hardware
from loom_explorer.program import TileProgram, list_kernels, load_program

LIMIT_SECONDS = 60.0

# the reported internal errors (a multicast group of H that no per_core_H of the n300's 7 rows divides)
REGRESSIONS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("wormhole_n300", "flash_attention", "B=1,H=32,Hkv=8,Sq=2048,Skv=2048,D=128", ()),
    ("wormhole_n300", "flash_attention", "B=1,H=32,Hkv=8,Sq=2048,Skv=2048,D=128", ("--causal",)),
    ("wormhole_n300", "flash_attention", "B=1,H=40,Hkv=8,Sq=4096,Skv=4096,D=128", ()),
    ("wormhole_n300", "flash_attention", "B=1,H=40,Hkv=8,Sq=4096,Skv=4096,D=128", ("--causal",)),
)

# structural shapes per family of dimensions: (label, shape); the first is the tiny one --quick runs
MATMUL = (
    ("tiny", "M=32,K=32,N=32"),
    ("one element", "M=1,K=1,N=1"),
    ("ragged", "M=1000,K=1000,N=1000"),
    ("ragged odd", "M=33,K=4097,N=65"),
    ("square", "M=4096,K=4096,N=4096"),
    ("skinny M", "M=32,K=4096,N=4096"),
    ("skinny N", "M=4096,K=4096,N=32"),
    ("deep K", "M=64,K=65536,N=64"),
    ("shallow K", "M=8192,K=32,N=8192"),
    ("vocab", "M=32,K=4096,N=128256"),
    ("huge", "M=65536,K=65536,N=65536"),
    ("beyond range", "M=1048576,K=1048576,N=1048576"),
)
BATCHED = (
    ("tiny", "B=1,M=32,K=32,N=32"),
    ("one element", "B=1,M=1,K=1,N=1"),
    ("ragged", "B=3,M=1000,K=1000,N=1000"),
    ("many small", "B=256,M=32,K=64,N=32"),
    ("square", "B=8,M=1024,K=1024,N=1024"),
    ("skinny", "B=32,M=32,K=4096,N=4096"),
    ("deep K", "B=2,M=64,K=65536,N=64"),
    ("huge", "B=64,M=8192,K=8192,N=8192"),
    ("beyond range", "B=4096,M=65536,K=65536,N=65536"),
)
LINEAR = (
    ("tiny", "B=1,S=32,K=32,N=32"),
    ("one element", "B=1,S=1,K=1,N=1"),
    ("ragged", "B=3,S=1000,K=1000,N=1000"),
    ("decode", "B=32,S=1,K=4096,N=14336"),
    ("prefill", "B=1,S=2048,K=4096,N=4096"),
    ("shallow K", "B=1,S=8192,K=32,N=8192"),
    ("vocab", "B=1,S=32,K=4096,N=128256"),
    ("huge", "B=16,S=32768,K=8192,N=28672"),
    ("beyond range", "B=4096,S=65536,K=65536,N=65536"),
)
ATTENTION = (
    ("tiny", "B=1,H=1,Sq=32,Skv=32,D=32"),
    ("one element", "B=1,H=1,Sq=1,Skv=1,D=1"),
    ("gqa 1", "B=1,H=32,Hkv=32,Sq=2048,Skv=2048,D=128"),
    ("gqa 2", "B=1,H=32,Hkv=16,Sq=2048,Skv=2048,D=128"),
    ("gqa 4", "B=1,H=32,Hkv=8,Sq=2048,Skv=2048,D=128"),
    ("gqa 8", "B=1,H=32,Hkv=4,Sq=2048,Skv=2048,D=128"),
    ("gqa 5", "B=1,H=40,Hkv=8,Sq=4096,Skv=4096,D=128"),
    ("gqa 8 of 40", "B=1,H=40,Hkv=5,Sq=1024,Skv=1024,D=128"),
    ("gqa 3", "B=2,H=12,Hkv=4,Sq=1024,Skv=1024,D=64"),
    ("mqa", "B=1,H=32,Hkv=1,Sq=2048,Skv=2048,D=128"),
    ("ragged", "B=1,H=12,Sq=1000,Skv=1000,D=64"),
    ("odd heads", "B=3,H=7,Sq=333,Skv=777,D=96"),
    ("decode-like", "B=1,H=32,Hkv=8,Sq=32,Skv=32768,D=128"),
    ("key-light", "B=1,H=8,Sq=8192,Skv=32,D=128"),
    ("head 256", "B=1,H=8,Sq=2048,Skv=2048,D=256"),
    ("many batches", "B=64,H=8,Sq=128,Skv=128,D=64"),
    ("huge", "B=8,H=64,Hkv=8,Sq=32768,Skv=32768,D=128"),
    ("beyond range", "B=1024,H=128,Sq=1048576,Skv=1048576,D=128"),
)
TWO_D = (
    ("tiny", "H=32,W=32"),
    ("one element", "H=1,W=1"),
    ("ragged", "H=1000,W=1000"),
    ("ragged odd", "H=33,W=4097"),
    ("one row of tiles", "H=32,W=131072"),
    ("one column of tiles", "H=131072,W=32"),
    ("mlp", "H=2048,W=14336"),
    ("huge", "H=65536,W=65536"),
    ("enormous", "H=1048576,W=4194304"),
)
GATHER = (
    ("tiny", "P=1,C=32,R=1"),
    ("one element", "P=1,C=1,R=1"),
    ("ragged", "P=1000,C=1000,R=1000"),
    ("tokens", "P=2048,C=4096,R=128256"),
    ("wide rows", "P=32,C=65536,R=32"),
    ("huge", "P=1048576,C=4096,R=1048576"),
    ("one table row", "P=4096,C=256,R=1"),
    ("beyond range", "P=1073741824,C=1048576,R=1073741824"),
)
GROUPS = (
    ("tiny", "G=1,E=32"),
    ("one element", "G=1,E=1"),
    ("ragged", "G=7,E=1000"),
    ("many groups", "G=1024,E=4096"),
    ("long group", "G=16,E=1048576"),
    ("ragged odd", "G=3,E=33"),
    ("one group", "G=1,E=65536"),
    ("beyond range", "G=1048576,E=1073741824"),
)
# whole output tiles T summed over R whole input tiles each (fast_reduce_nc)
TILE_SUMS = (
    ("one tile", "T=1,R=1"),
    ("one output tile", "T=1,R=64"),
    ("no reduction", "T=4096,R=1"),
    ("ragged", "T=1000,R=7"),
    ("deepseek", "T=1800,R=4"),
    ("long reduction", "T=16,R=65536"),
    ("many tiles", "T=1048576,R=8"),
    ("beyond range", "T=1073741824,R=1073741824"),
)
CONV = (
    ("tiny", "M=32,N=32,KH=1,KWC=32"),
    ("one element", "M=1,N=1,KH=1,KWC=1"),
    ("ragged", "M=1000,N=1000,KH=3,KWC=1000"),
    ("3x3 stem", "M=65536,N=64,KH=3,KWC=9"),
    ("3x3 wide", "M=4096,N=512,KH=3,KWC=1536"),
    ("1x1", "M=16384,N=256,KH=1,KWC=1024"),
    ("7x7", "M=12544,N=64,KH=7,KWC=21"),
    ("huge", "M=1048576,N=2048,KH=3,KWC=6144"),
    ("beyond range", "M=1073741824,N=1048576,KH=1024,KWC=1048576"),
)
# a re-layout with a part of each dimension (tilize's padded input, untilize's cut output): the 2-D shapes with the
# parts whole (their default), and one padded / cut
PADDED = (*TWO_D, ("padded", "H=1024,Hx=1000,W=64,Wx=33"))
CUT = (*TWO_D, ("cut", "H=1024,Hy=1000,W=64,Wy=33"))
# rows read once and written k times (nearest upsample): the 2-D shapes with every row read (Hx whole), and x4
REPEATED = (*TWO_D, ("x4", "H=16384,Hx=4096,W=256"), ("one row to many", "H=2048,Hx=1,W=64"))
# a row-major slice of each row's elements: the 2-D shapes with every element kept (Wy whole), half of them
# (the strided step 2), and a ragged part
SLICED = (
    *((label, f"{shape},Wy={shape.split('W=')[1]}") for label, shape in TWO_D),
    ("half", "H=4096,W=512,Wy=256"),
    ("ragged part", "H=1000,W=1000,Wy=333"),
)


def _tiles(shape: str) -> int:
    """Tiles of a ``H=..,W=..`` shape."""
    extents = dict(part.split("=") for part in shape.split(","))
    return -(-int(extents["H"]) // 32) * -(-int(extents["W"]) // 32)


# a tiled reshape's counts: each TWO_D shape as an identity reshape (one read, 63 segments a tile), CLIP's heads
GATHERED = (
    *((label, f"{shape},G={_tiles(shape)},S={63 * _tiles(shape)}") for label, shape in TWO_D),
    ("heads split", "H=608,W=64,G=760,S=1520"),
    ("few counts", "H=1000,W=1000,G=1,S=1"),
)
# an HC transpose's face-line writes: two a real row of each tile
SCATTERED = (
    *((label, f"{shape},F={64 * _tiles(shape)}") for label, shape in TWO_D),
    ("heads", "H=608,W=64,F=1600"),
)
FAMILIES: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {
    ("M", "N", "K"): MATMUL,
    ("B", "M", "N", "K"): BATCHED,
    ("B", "S", "N", "K"): LINEAR,
    ("B", "H", "Hkv", "Sq", "Skv", "D"): ATTENTION,
    ("H", "W"): TWO_D,
    ("P", "C", "R"): GATHER,
    ("G", "E"): GROUPS,
    ("T", "R"): TILE_SUMS,
    ("H", "Hx", "W", "Wx"): PADDED,
    ("H", "Hy", "W", "Wy"): CUT,
    ("H", "Hx", "W"): REPEATED,
    ("H", "W", "Wy"): SLICED,
    ("H", "W", "G", "S"): GATHERED,
    ("H", "W", "F"): SCATTERED,
    ("M", "N", "KH", "KWC"): CONV,
}
ACTIVATIONS = ("relu", "gelu", "silu", "sigmoid", "exp", "recip", "rsqrt")


@dataclass(frozen=True, slots=True)
class Cell:
    """One problem: a command line of ``loom-explorer solve`` (``--fastest 1`` added when run)."""

    hw: str
    kernel: str
    label: str
    shape: str
    flags: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        return ["solve", self.kernel, "--hw", self.hw, "--shape", self.shape, *self.flags]

    @property
    def text(self) -> str:
        return f"{self.hw} {self.kernel} {self.shape} {' '.join(self.flags)}".rstrip()


@dataclass(frozen=True, slots=True)
class Outcome:
    cell: Cell
    exit_status: int
    seconds: float  # wall
    answer: str  # the best schedule's latency, or the reason there is none (one line)
    problem: str  # why the cell fails ("" when it passes)
    cpu_seconds: float = 0.0  # this process's CPU time, CP-SAT's worker threads included

    @property
    def passed(self) -> bool:
        return not self.problem


def shapes(program: TileProgram) -> tuple[tuple[str, str], ...]:
    """The structural shapes of the program's family of dimensions; for an unknown family, its example
    shape, every extent 1 and every extent 33 (one element, ragged)."""
    dims = tuple(d.name for d in program.dims)
    if dims in FAMILIES:
        return FAMILIES[dims]
    top = [d.name for d in program.dims if d.group_of is None]
    return (
        ("example", program.example_shape or ",".join(f"{d}=1024" for d in top)),
        ("one element", ",".join(f"{d}=1" for d in top)),
        ("ragged", ",".join(f"{d}=33" for d in top)),
    )


def option_variants(program: TileProgram) -> list[tuple[str, tuple[str, ...]]]:
    """The option sets the program takes: formats, fidelities, fp32 accumulation, L1 placements of an input
    and of the output, the TT-Lang target, its options, optional tensors and activations."""
    inputs = [t.name for t in program.tensors if t.role == "input"]
    output = next(t.name for t in program.tensors if t.role == "output")
    variants: list[tuple[str, tuple[str, ...]]] = [
        ("bfp8", ("--dtype", "bfp8_b")),
        ("bfp4 lofi", ("--dtype", "bfp4_b", "--fidelity", "lofi")),
        ("fp32 acc", ("--dtype", "fp32", "--fp32-acc")),
        ("hifi4 fp32 acc", ("--fidelity", "hifi4", "--fp32-acc")),
        ("mixed formats", ("--format", f"{inputs[-1]}=bfp8_b")),
        ("input in l1", ("--memory", f"{inputs[0]}=l1")),
        ("sharded", ("--memory", f"{inputs[0]}=l1_block", "--memory", f"{output}=l1_block")),
        ("height sharded", ("--memory", f"{inputs[0]}=l1_height")),
        ("width sharded", ("--memory", f"{inputs[0]}=l1_width")),
        ("ttlang", ("--target", "ttlang")),
    ]
    optional = [t.name for t in program.tensors if t.optional]
    if "bias" in optional:
        variants.append(("bias", ("--bias",)))
    if program.uses_activation:
        variants += [(f"activation {a}", ("--activation", a)) for a in ACTIVATIONS]
        if optional:
            variants.append(("bias gelu", ("--bias", "--activation", "gelu")))
    for option in program.options:
        variants.append((option, (f"--{option}",)))
        variants.append((f"{option} ttlang", (f"--{option}", "--target", "ttlang")))
    return variants


# option variants also run on the ragged shape (every variant runs on the tiny one)
RAGGED_VARIANTS = ("bfp8", "sharded", "ttlang", "bias gelu", "causal", "causal ttlang")


def cells(hw: str, kernel: str) -> list[Cell]:
    """Every structural shape of the kernel with its default options (and with each of its program options,
    e.g. ``--causal``), then each option variant on the tiny shape and a few (``RAGGED_VARIANTS``) on the
    ragged one."""
    program = load_program(kernel)
    grid = shapes(program)
    needs_activation = program.uses_activation and not any(t.optional for t in program.tensors)
    base: tuple[str, ...] = ("--activation", "gelu") if needs_activation else ()
    out = [Cell(hw, kernel, label, shape, base) for label, shape in grid]
    for option in program.options:
        out += [Cell(hw, kernel, f"{label} {option}", shape, (*base, f"--{option}")) for label, shape in grid]
    ragged = [g for g in grid if g[0] == "ragged"]
    for label, flags in option_variants(program):
        extra = flags if "--activation" in flags else (*base, *flags)
        chosen = [grid[0], *ragged] if label in RAGGED_VARIANTS else [grid[0]]
        out += [Cell(hw, kernel, f"{shape_label}, {label}", shape, extra) for shape_label, shape in chosen]
    if needs_activation:
        out.append(Cell(hw, kernel, "no activation", grid[0][1]))
    return out


def quick_cells() -> list[Cell]:
    """--quick: each kernel's tiny shape on the n150 and the reported regressions without ``--causal`` (the
    causal ones take 10-25 s each; the full matrix and tests/test_shipped_matrix.py run them)."""
    kernels = list_kernels()
    out = [cells("wormhole_n150", k)[0] for k in kernels]
    return out + [Cell(hw, k, "regression", shape, flags) for hw, k, shape, flags in REGRESSIONS if not flags]


def full_cells() -> list[Cell]:
    """Every chip x kernel x its grid, the regressions first; each cell on every chip in turn (a run stopped
    early has covered the chips alike)."""
    per_chip = [[c for k in list_kernels() for c in cells(hw, k)] for hw in list_hardware()]
    out = [Cell(hw, k, "regression", shape, flags) for hw, k, shape, flags in REGRESSIONS]
    return out + [c for row in zip(*per_chip, strict=True) for c in row]


def run_cell(cell: Cell, store: Path, limit_seconds: float = LIMIT_SECONDS) -> Outcome:
    """Run ``loom-explorer solve ... --fastest 1 --no-cache --store STORE`` in this process and judge it."""
    out, err = io.StringIO(), io.StringIO()
    argv = [*cell.argv(), "--fastest", "1", "--no-cache", "--store", str(store)]
    start, cpu_start = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli_main(argv)
        except BaseException as exc:  # main must turn every error into a status; say which escaped
            status, err = -1, io.StringIO(f"escaped main: {type(exc).__name__}: {exc}\n")
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    stdout, stderr = out.getvalue(), err.getvalue()
    lines = [
        line
        for line in stderr.splitlines()
        if line.startswith("loom-explorer: error:") or "internal error" in line or line.startswith("escaped main")
    ]
    answer, problem = "", ""
    if status == EXIT_OK:
        best = [line for line in stdout.splitlines() if line.startswith(" 1 ")]
        answer = " ".join(best[0].split()[1:4]) if best else ""
        if "best:" not in stdout:
            problem = "exit 0 without a schedule printed"
    elif status == EXIT_BAD_INPUT:
        answer = lines[-1] if lines else ""
        if len(lines) != 1:
            problem = f"exit 2 without one error line: {stderr.strip()[-300:]!r}"
    elif status == EXIT_NO_SCHEDULE:  # the candidates' reasons, or one line when no candidate fits at all
        reasons = (
            stdout.split("no schedule:", 1)[1].strip().splitlines()
            if "no schedule:" in stdout
            else [line for line in stderr.splitlines() if line.startswith("loom-explorer: no ")]
        )
        answer = reasons[0].strip() if reasons else ""
        if not answer:
            problem = "exit 3 without a reason"
    elif status == EXIT_INTERNAL:
        problem = f"internal error: {lines[-1] if lines else stderr.strip()[-300:]}"
    else:
        problem = f"exit {status}: {stderr.strip()[-300:]}"
    if not problem and seconds > limit_seconds:
        problem = f"took {seconds:.1f} s, over {limit_seconds:.0f} s"
    return Outcome(cell, status, seconds, answer, problem, cpu_seconds)


def build_cell(cell: Cell) -> Outcome:
    """``--build-only``: what ``solve`` does before it solves (the problem from the flags, every candidate's
    model and latency floor: ``Session``), judged likewise: built (exit 0), refused with a ``LoomError``
    (its exit status and message) or an internal error (70)."""
    start, cpu_start = time.perf_counter(), time.process_time()
    try:
        args = build_parser().parse_args([*cell.argv(), "--no-cache"])
        hw, problem = ProblemRequest.from_args(args).build()
        session = SolveRequest.from_args(args).session(hw, problem)
        status, answer, problem_text = EXIT_OK, f"{len(session.schedules)} candidates built", ""
    except LoomError as exc:
        status, answer, problem_text = exc.exit_status, f"loom-explorer: error: {exc}", ""
    except Exception as exc:  # a bug: the command line would exit 70
        status, answer, problem_text = EXIT_INTERNAL, "", f"internal error: {type(exc).__name__}: {exc}"
    return Outcome(cell, status, time.perf_counter() - start, answer, problem_text, time.process_time() - cpu_start)


def run_cells(
    chosen: list[Cell], limit_seconds: float = LIMIT_SECONDS, echo: bool = True, build_only: bool = False
) -> list[Outcome]:
    outcomes = []
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "results.sqlite"
        for i, cell in enumerate(chosen, 1):
            outcome = build_cell(cell) if build_only else run_cell(cell, store, limit_seconds)
            outcomes.append(outcome)
            if echo:
                mark = "FAIL " + outcome.problem if outcome.problem else outcome.answer
                print(
                    f"{i:>4}/{len(chosen)} {outcome.exit_status:>3} {outcome.seconds:>6.2f} s "
                    f"(CPU {outcome.cpu_seconds:>6.2f} s)  {cell.text}  "
                    f"[{cell.label}]  {mark[:160]}",
                    flush=True,
                )
    return outcomes


def summary(outcomes: list[Outcome], slowest: int = 10) -> str:
    counts = Counter(
        "fail" if not o.passed else {0: "schedule", 2: "bad input", 3: "no schedule"}.get(o.exit_status, "fail")
        for o in outcomes
    )
    total = sum(o.seconds for o in outcomes)
    lines = [
        f"{len(outcomes)} cells in {total:.1f} s: "
        + ", ".join(f"{k} {counts[k]}" for k in ("schedule", "no schedule", "bad input", "fail")),
        f"internal errors: {sum(o.exit_status == EXIT_INTERNAL for o in outcomes)}; "
        f"over {LIMIT_SECONDS:.0f} s: {sum(o.seconds > LIMIT_SECONDS for o in outcomes)}; "
        f"median {sorted(o.seconds for o in outcomes)[len(outcomes) // 2]:.2f} s per cell; "
        f"CPU {sum(o.cpu_seconds for o in outcomes):.1f} s in all",
        "slowest cells:",
    ]
    for o in sorted(outcomes, key=lambda o: -o.seconds)[:slowest]:
        lines.append(f"  {o.seconds:>6.2f} s (CPU {o.cpu_seconds:>6.2f} s)  exit {o.exit_status}  {o.cell.text}")
    failed = [o for o in outcomes if not o.passed]
    if failed:
        lines.append("failures:")
        lines += [f"  {o.cell.text}: {o.problem}" for o in failed]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one chip, each kernel's tiny shape, the regressions")
    parser.add_argument("--hw", action="append", default=[], help="only this chip (repeatable)")
    parser.add_argument("--kernel", action="append", default=[], help="only this kernel (repeatable)")
    parser.add_argument(
        "--build-only",
        action="store_true",
        help="build every cell's problem and candidates' models and latency floors, no solve "
        "(exit 0 counted as 'schedule')",
    )
    args = parser.parse_args()
    chosen = quick_cells() if args.quick else full_cells()
    if args.hw:
        chosen = [c for c in chosen if c.hw in args.hw]
    if args.kernel:
        chosen = [c for c in chosen if c.kernel in args.kernel]
    outcomes = run_cells(chosen, build_only=args.build_only)
    print(summary(outcomes))
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
