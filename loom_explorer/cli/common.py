"""What the subcommands share: the typed request a command's arguments become (``Command``), argparse types
for numeric flags, the problem and solve flags as typed requests, and the messages of a solve that ends
without a schedule.

Parsing is separate from doing: each command module adds its parser, a ``parse`` function that turns the
parsed arguments into a frozen request (nothing is read or solved there), and a ``run`` function that
takes the request and returns the exit status. ``run`` never sees or changes the parsed arguments.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from loom_explorer.errors import EXIT_INTERRUPTED, LoomError, NoScheduleError
from loom_explorer.solve.options import SolveOptions

if TYPE_CHECKING:  # the rest is imported where it is used: `--help` and the parser load none of it
    from loom_explorer.accuracy.csv_input import RowIssue
    from loom_explorer.hardware.schema import HardwareSpec
    from loom_explorer.problem import KernelTarget, Problem
    from loom_explorer.result import CandidateResult
    from loom_explorer.solve.memory import Remembered
    from loom_explorer.solve.solver import Session

Request = TypeVar("Request")


class InputError(LoomError, ValueError):
    """A command-line argument that is wrong or contradicts another; the message names the flag."""


@dataclass(frozen=True, slots=True)
class Command(Generic[Request]):
    """A subcommand: ``parse`` makes its request from the parsed arguments, ``run`` does it and returns the
    exit status. ``stoppable``: Ctrl-C stops its searches and it prints what it has (``main``)."""

    parse: Callable[[argparse.Namespace], Request]
    run: Callable[[Request], int]
    stoppable: bool = False

    def __call__(self, args: argparse.Namespace) -> int:
        return self.run(self.parse(args))


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, command: Command[Request]
) -> argparse.ArgumentParser:
    """A subparser ``name`` that runs ``command``, with its line of ``cli/help_lines.py`` (kept there so that
    ``--help`` lists every command without importing its module); ``--debug`` is taken after the command name
    too."""
    from loom_explorer.cli.help_lines import HELP_LINES

    parser = sub.add_parser(name, help=HELP_LINES[name])
    parser.set_defaults(handler=command)
    parser.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="print the traceback of an internal error"
    )
    return parser


# ---------------------------------------------------------------------------------------- numeric flags
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
        raise argparse.ArgumentTypeError(
            f"{text}: must be a finite number > 0 (seconds, at most {threading.TIMEOUT_MAX:.3g})"
        )
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


def grid_size(text: str) -> tuple[int, int]:
    """``COLUMNSxROWS`` of whole numbers >= 1, e.g. ``11x10``."""
    if (
        not re.fullmatch(r"\s*[0-9]{1,4}\s*[xX]\s*[0-9]{1,4}\s*", text)
        or min(int(x) for x in text.lower().split("x")) < 1
    ):
        raise argparse.ArgumentTypeError(f"{text}: expected COLUMNSxROWS of whole numbers >= 1, e.g. 11x10")
    columns, rows = (int(x) for x in text.lower().split("x"))
    return columns, rows


# ---------------------------------------------------------------------------------- problem and solve
TARGETS = ("ttnn", "ttlang")  # KernelTarget's values (problem.py), spelled here so the parser imports no model
_TARGET_WORDS = {"ttnn": "TTNN", "ttlang": "TT-Lang"}


def kernel_target(chosen: str | None, wanted: KernelTarget | None = None, output_format: str = "") -> KernelTarget:
    """``--target``, else the kernels the command writes (``wanted``: an export format's ``kernel_target``),
    else TTNN's. A ``--target`` that contradicts the format's kernels is refused."""
    from loom_explorer.problem import KernelTarget

    if chosen is None:
        return wanted or KernelTarget.ttnn
    if wanted is not None and KernelTarget(chosen) is not wanted:
        words = _TARGET_WORDS[wanted.value]
        raise InputError(
            f"--target {chosen} contradicts --format {output_format}: a {words} export "
            f"is solved for the {words} kernels' buffers"
        )
    return KernelTarget(chosen)


def tensor_pairs(items: Sequence[str], what: str) -> dict[str, str]:
    """``TENSOR=VALUE`` items of a repeatable flag ``--what``; InputError for one without ``=``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise InputError(f"--{what} {item!r} is not TENSOR=VALUE")
        out[key.strip()] = value.strip()
    return out


def checked_options(names: Sequence[str], kernel: str, declared: Sequence[str]) -> frozenset[str]:
    """The options ``--option NAME`` (or its shorthand ``--causal``) switched on, each one the kernel declares
    (``TileProgram.options``); InputError naming the flag and listing the kernel's options otherwise."""
    for name in names:
        if name not in declared:
            flag = f"--option {name}" + (" (--causal)" if name == "causal" else "")
            raise InputError(
                f"{flag}: kernel {kernel} has no option {name!r} (its options: {', '.join(declared) or 'none'})"
            )
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class ProblemRequest:
    """The problem flags (``add_problem_args``) as given; ``build`` reads the files and checks the values."""

    kernel: str
    hw: str
    shape: str
    dtype: str
    formats: tuple[str, ...]  # TENSOR=FORMAT
    memory: tuple[str, ...]  # TENSOR=PLACEMENT
    fidelity: str | None
    fp32_acc: bool
    target: KernelTarget
    bias: bool
    activation: str | None
    options: tuple[str, ...] = ()  # --option NAME (and --causal, its shorthand), in the order given

    @classmethod
    def from_args(cls, args: argparse.Namespace, target: KernelTarget | None = None) -> ProblemRequest:
        return cls(
            kernel=args.kernel,
            hw=args.hw,
            shape=args.shape,
            dtype=args.dtype,
            formats=tuple(args.format),
            memory=tuple(args.memory),
            fidelity=args.fidelity,
            fp32_acc=args.fp32_acc,
            target=target or kernel_target(args.target),
            bias=args.bias,
            activation=args.activation,
            options=tuple(args.options),
        )

    def build(self) -> tuple[HardwareSpec, Problem]:
        """The hardware and the problem (HardwareError, KernelError, ProblemError or InputError naming the
        flag)."""
        from loom_explorer.hardware import load_hardware
        from loom_explorer.hardware.schema import parse_data_format, parse_fidelity
        from loom_explorer.problem import Placement, make_problem
        from loom_explorer.program import load_program

        hw = load_hardware(self.hw)
        program = load_program(self.kernel)
        options = checked_options(self.options, program.name, program.options)
        try:
            dtype = parse_data_format(self.dtype)
            fidelity = parse_fidelity(self.fidelity or "hifi2")
            formats = {k: parse_data_format(v) for k, v in tensor_pairs(self.formats, "format").items()}
            placements = {}
            for tensor, where in tensor_pairs(self.memory, "memory").items():
                try:
                    placements[tensor] = Placement(where)
                except ValueError:
                    raise InputError(
                        f"--memory {tensor}={where}: expected one of {', '.join(p.value for p in Placement)}"
                    ) from None
        except ValueError as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(str(exc)) from None
        problem = make_problem(
            program,
            self.shape,
            dtype,
            fidelity,
            formats=formats,
            placements=placements,
            fp32_acc=self.fp32_acc,
            enabled={"bias"} if self.bias else set(),
            activation=self.activation,
            options=options,
            target=self.target,
        )
        return hw, problem


@dataclass(frozen=True, slots=True)
class SolveRequest:
    """The solve flags; ``deadline`` (``time.monotonic()``) is when building the models must be done: the
    command's start plus ``--time-limit`` (``Session``)."""

    pins: tuple[str, ...]
    noc_bound: bool
    time_limit_seconds: float
    workers: int
    parallel: int
    seed: int
    deadline: float
    use_memory: bool = True  # answer from the results store when the same solve was proven (--no-cache: not)
    store: str | None = None  # --store

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SolveRequest:
        return cls(
            pins=tuple(args.pin),
            noc_bound=not args.no_noc_bound,
            time_limit_seconds=args.time_limit,
            workers=args.workers,
            parallel=args.parallel,
            seed=args.seed,
            deadline=time.monotonic() + args.time_limit,
            use_memory=not getattr(args, "no_cache", True),
            store=getattr(args, "store", None),
        )

    def solve(
        self,
        session: Session,
        options: SolveOptions,
        candidates: list[str] | None = None,
        announce: Callable[[], None] | None = None,
    ) -> Remembered:
        """The solve of ``session`` under these pins, from the results store when it was proven before
        (``solve/memory.py``; it says so on stderr); ``announce`` is called before a real solve starts. A
        solve of several candidates that takes more than 2 s shows a progress bar on a terminal
        (``accuracy/progress.py``)."""
        from loom_explorer.accuracy.progress import Progress
        from loom_explorer.solve.memory import solve_with_memory

        total = len(candidates) if candidates else len(session.schedules)
        lock, finished = threading.Lock(), [0]
        with Progress() as progress:
            progress.phase("solving candidates", total)

            def one_more(_: CandidateResult) -> None:
                with lock:  # the candidates' solver threads report here
                    finished[0] += 1
                    progress.update(finished[0])

            remembered = solve_with_memory(
                session,
                self.parsed_pins(),
                options,
                candidates,
                self.noc_bound,
                self.store,
                self.use_memory,
                announce,
                one_more if total > 1 else None,
            )
        if remembered.note:
            say(f"loom-explorer: {remembered.note}")
        if remembered.proven_at:
            say(f"loom-explorer: {remembered.provenance()}")
        return remembered

    def options(self, top_k: int = 1, fastest: int | None = None) -> SolveOptions:
        return SolveOptions(
            time_limit_seconds=self.time_limit_seconds,
            workers_per_model=self.workers,
            parallel_models=self.parallel,
            top_k=top_k,
            seed=self.seed,
            fastest=fastest,
        )

    def session(self, hw: HardwareSpec, problem: Problem) -> Session:
        from loom_explorer.solve.solver import Session

        return Session(hw, problem, noc_bound=self.noc_bound, deadline=self.deadline)

    def parsed_pins(self) -> dict[str, int]:
        from loom_explorer.solve.pins import parse_pins

        return parse_pins(list(self.pins))


def add_problem_args(p: argparse.ArgumentParser, tensor_format_flag: str = "--format") -> None:
    p.add_argument("kernel", help="shipped kernel name (see `kernels list`) or path to a .py file")
    p.add_argument("--hw", required=True, help="shipped hardware name or path to a YAML file")
    p.add_argument("--shape", required=True, help="extents in elements, e.g. M=4096,K=4096,N=4096")
    p.add_argument("--dtype", default="bf16", help="data format of every tensor (default bf16)")
    p.add_argument(
        tensor_format_flag,
        dest="format",
        action="append",
        default=[],
        metavar="TENSOR=FORMAT",
        help="data format of one tensor, e.g. in1=bfp8_b (repeatable)",
    )
    p.add_argument(
        "--memory",
        action="append",
        default=[],
        metavar="TENSOR=PLACEMENT",
        help="where a tensor lives: dram (interleaved, default), l1_height, l1_width, l1_block "
        "(TTNN shardings) or l1 (sharded as each candidate needs) (repeatable)",
    )
    p.add_argument("--fidelity", default=None, help="lofi, hifi2 (default), hifi3, hifi4")
    p.add_argument("--fp32-acc", action="store_true", help="accumulate in fp32 (Dst holds 4 tiles)")
    p.add_argument(
        "--target",
        choices=TARGETS,
        default=None,
        help="whose kernels run the schedule, so whose circular buffers L1 holds: ttnn (TTNN's ops; "
        "the default) or ttlang (the exported TT-Lang kernels; the default of export --format ttlang)",
    )
    p.add_argument("--bias", action="store_true", help="turn the kernel's optional bias on")
    p.add_argument("--activation", default=None, help="fused activation, e.g. gelu")
    p.add_argument(
        "--option",
        dest="options",
        action="append",
        default=[],
        metavar="NAME",
        help="switch one of the kernel's program options on, e.g. causal (repeatable; "
        "`kernels list` lists each kernel's options)",
    )
    p.add_argument(
        "--causal",
        dest="options",
        action="append_const",
        const="causal",
        help="shorthand for --option causal (the causal mask of attention kernels)",
    )
    p.add_argument("--pin", action="append", default=[], metavar="NAME=VALUE", help="fix a parameter (repeatable)")
    p.add_argument(
        "--no-noc-bound",
        action="store_true",
        help="leave the NoC link/bank bound out of the latency (to see what it changes)",
    )
    p.add_argument(
        "--time-limit",
        type=seconds,
        default=30.0,
        help="seconds per candidate (default 30): building every candidate's model must end within "
        "this many seconds of the command's start, and each candidate's solve (its model, "
        "search, alternatives and conflict explanation) within this many of its own start",
    )
    p.add_argument("--workers", type=whole(1, MAX_THREADS), default=4, help="CP-SAT workers per candidate (default 4)")
    p.add_argument(
        "--parallel",
        type=whole(0, MAX_THREADS),
        default=1,
        help="candidates solved at once (default 1; 0: one per CPU core)",
    )
    p.add_argument("--seed", type=whole(0, 2**31 - 1), default=0, help="CP-SAT's random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object (the machine contract)")


def add_memory_args(p: argparse.ArgumentParser, store: bool = True) -> None:
    """``--no-cache`` (and ``--store`` unless the command has it already) for a command that solves."""
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="solve again even when the results store holds this solve proven (the new proof replaces it)",
    )
    if store:
        add_store_arg(p)


def add_store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        default=None,
        help="results store file (default: $LOOM_EXPLORER_STORE or ~/.local/share/loom-explorer/results.sqlite)",
    )


# ------------------------------------------------------------------------------------------- messages


def say(text: str) -> None:
    """A progress or status line on stderr."""
    print(text, file=sys.stderr, flush=True)


def say_solving(candidates: int) -> None:
    """The progress line of a command whose searches Ctrl-C stops (``Command.stoppable``)."""
    say(f"loom-explorer: solving {candidates} candidates (Ctrl-C stops and prints what is proven)")


def best(results: Sequence[CandidateResult]) -> CandidateResult | None:
    """The best candidate with a schedule (results are ranked)."""
    return next((r for r in results if r.solution), None)


def report_interrupted(results: Sequence[CandidateResult], what: str) -> int:
    """Ctrl-C during the solve: every candidate's status so far on stderr (a schedule shown for an
    ``interrupted`` one is not proven optimal); nothing is routed or written."""
    for r in results:
        found = f", best found {r.solution.latency_cycles:,} cycles" if r.solution else ""
        print(f"  {r.candidate_name}: {r.status}{found}", file=sys.stderr)
    say(f"loom-explorer: interrupted before the solve finished, so no {what}")
    return EXIT_INTERRUPTED


def no_schedule(results: Sequence[CandidateResult], what: str) -> NoScheduleError:
    """Every candidate's conflict (or status) on stderr, and the error to raise: no schedule, so no ``what``."""
    for r in results:
        print(f"  {r.candidate_name}: {r.conflict.message if r.conflict else r.status}", file=sys.stderr)
    return NoScheduleError(f"no schedule, so no {what}")


def say_rows(title: str, issues: Sequence[RowIssue]) -> None:
    """``title`` and the grouped reasons of ``issues`` on stderr."""
    from loom_explorer.accuracy.csv_input import group_issues

    print(title, file=sys.stderr)
    for line in group_issues(list(issues)):
        print(f"  {line}", file=sys.stderr)
