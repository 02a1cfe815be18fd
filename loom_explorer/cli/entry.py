"""The ``loom-explorer`` parser (every command family's subcommands, in the order ``--help`` lists them) and
``main``: run one command and turn what ends it into an exit status (the package docstring lists them).

Start-up: ``main`` imports the module of the command it runs and no other (``COMMANDS``); ``--help`` lists
every command from ``cli/help_lines.py``, importing none of them (tests/cli/test_cli_startup.py checks the
listing against the full parser's and that ``--help`` loads neither OR-Tools, pandas, numpy nor networkx).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from loom_explorer.cli.help_lines import HELP_LINES
from loom_explorer.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, LoomError
from loom_explorer.solve.interrupt import EXIT_AFTER_S, STOP, Interrupted, exit_if_interrupted, stop_on_sigint

if TYPE_CHECKING:
    from loom_explorer.cli.common import Command

DESCRIPTION = "solve, explore, export, verify and measure schedules for Tenstorrent chips."
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _listing(sub: Subparsers) -> None:
    from loom_explorer.cli import listing

    listing.add_parsers(sub)


def _solve(sub: Subparsers) -> None:
    from loom_explorer.cli import solve

    solve.add_parsers(sub)


def _export(sub: Subparsers) -> None:
    from loom_explorer.cli import export

    export.add_parsers(sub)


def _verify(sub: Subparsers) -> None:
    from loom_explorer.cli import deploy

    deploy.add_verify_parsers(sub)


def _predict(sub: Subparsers) -> None:
    from loom_explorer.cli import accuracy

    accuracy.add_predict_parser(sub)


def _accuracy(sub: Subparsers) -> None:
    from loom_explorer.cli import accuracy

    accuracy.add_accuracy_parsers(sub)


def _deploy(sub: Subparsers) -> None:
    from loom_explorer.cli import deploy

    deploy.add_deploy_parsers(sub)


def _ingest(sub: Subparsers) -> None:
    from loom_explorer.cli import accuracy

    accuracy.add_ingest_parser(sub)


def _improve(sub: Subparsers) -> None:
    from loom_explorer.cli import improve

    improve.add_parsers(sub)


def _sweep(sub: Subparsers) -> None:
    from loom_explorer.cli import sweep

    sweep.add_parsers(sub)


def _results(sub: Subparsers) -> None:
    from loom_explorer.cli import deploy

    deploy.add_results_parser(sub)


def _mesh(sub: Subparsers) -> None:
    from loom_explorer.cli import mesh

    mesh.add_parsers(sub)


def _serve(sub: Subparsers) -> None:
    from loom_explorer.cli import serve

    serve.add_parsers(sub)


@dataclass(frozen=True, slots=True)
class CommandGroup:
    """The commands one function of a command module adds (``add``, which imports the module)."""

    add: Callable[[Subparsers], None]
    commands: tuple[str, ...]  # in the order ``add`` adds them


# In the order ``--help`` lists them (each line in ``cli/help_lines.py``).
COMMANDS: tuple[CommandGroup, ...] = (
    CommandGroup(
        _listing,
        (
            "hw",
            "kernels",
        ),
    ),
    CommandGroup(
        _solve,
        (
            "solve",
            "traffic",
        ),
    ),
    CommandGroup(_export, ("export",)),
    CommandGroup(
        _verify,
        (
            "verify",
            "toolchain",
        ),
    ),
    CommandGroup(_predict, ("predict",)),
    CommandGroup(
        _accuracy,
        (
            "accuracy",
            "calibrate",
        ),
    ),
    CommandGroup(_deploy, ("deploy",)),
    CommandGroup(_ingest, ("ingest",)),
    CommandGroup(_improve, ("improve",)),
    CommandGroup(
        _sweep,
        (
            "sweep",
            "report",
        ),
    ),
    CommandGroup(_mesh, ("mesh",)),
    CommandGroup(_results, ("results",)),
    CommandGroup(_serve, ("serve",)),
)
EVERY_COMMAND = "*"


def build_parser(command: str | None = EVERY_COMMAND) -> argparse.ArgumentParser:
    """The parser of every command (the default), or of ``command`` alone: only its module is imported and
    its parser built; every other command is listed by its help line (and None lists them all so)."""
    parser = argparse.ArgumentParser(prog="loom-explorer", description=f"``loom-explorer``: {DESCRIPTION}")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an internal error")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in COMMANDS:
        if command == EVERY_COMMAND or command in group.commands:
            group.add(sub)
        else:
            for name in group.commands:
                sub.add_parser(name, help=HELP_LINES[name])
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (the top-level options, ``--debug``
    and ``--help``, take no value); None when there is none."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status (the package docstring lists them)."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(command_of(words))
    try:  # numeric flags are checked by their types: a bad one exits 2 naming the flag, before any work
        args = parser.parse_args(words)
    except SystemExit as exc:  # argparse printed the usage error (2) or the help (0)
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    return exit_if_interrupted(execute(args))  # after Ctrl-C the process ends here (solve/interrupt.py)


def execute(args: argparse.Namespace) -> int:
    """Run the command of parsed ``args`` (``args.handler``, a ``Command``) and map what ends it to the exit
    status: its own status, 130 on Ctrl-C, a ``LoomError``'s ``exit_status`` after one line naming the
    problem, and for anything else (a bug) ``EXIT_INTERNAL`` after a request to report it, with the
    traceback only under ``--debug``."""
    command: Command[Any] = args.handler
    debug = bool(getattr(args, "debug", False))
    try:
        if threading.current_thread() is threading.main_thread():
            # Ctrl-C stops the solves through the token (solve/interrupt.py): a stoppable command prints what it
            # has, any other one unwinds (KeyboardInterrupt); a second Ctrl-C, or EXIT_AFTER_S, ends the process
            STOP.clear()
            with stop_on_sigint(STOP, raise_first=not command.stoppable, exit_after_s=EXIT_AFTER_S):
                code = command(args)
            if STOP.stopped and not command.stoppable:  # it ended by itself on Ctrl-C (serve's loop stops)
                print("loom-explorer: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED if STOP.stopped else code
        return command(args)
    except Interrupted as exc:
        print(f"loom-explorer: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("loom-explorer: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except LoomError as exc:
        if STOP.stopped:  # an error Ctrl-C caused (e.g. a subprocess it ended) is the interrupt's
            print(f"loom-explorer: interrupted: {str(exc).splitlines()[0] if str(exc) else exc!r}", file=sys.stderr)
            return EXIT_INTERRUPTED
        print(f"loom-explorer: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # a bug: say so, the traceback only when asked for
        if debug:
            traceback.print_exc()
        print(
            f"loom-explorer: internal error ({type(exc).__name__}: {exc}); this is a bug, please report it "
            "with the command line"
            + (" and the traceback above" if debug else " and the traceback that --debug prints"),
            file=sys.stderr,
        )
        return EXIT_INTERNAL
