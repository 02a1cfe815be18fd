"""The ``loom-explorer`` parser (every command family's subcommands, in the order ``--help`` lists them) and
``main``: run one command and turn what ends it into an exit status (the package docstring lists them)."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import Any

from loom_explorer.cli import accuracy, deploy, export, improve, listing, serve, solve, sweep
from loom_explorer.cli.common import Command
from loom_explorer.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, LoomError
from loom_explorer.solve.interrupt import STOP, Interrupted, stop_on_sigint

DESCRIPTION = "solve, explore, export, verify and measure schedules for Tenstorrent chips."


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loom-explorer", description=f"``loom-explorer``: {DESCRIPTION}")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an internal error")
    sub = parser.add_subparsers(dest="command", required=True)
    listing.add_parsers(sub)  # hw, kernels
    solve.add_parsers(sub)  # solve, traffic
    export.add_parsers(sub)  # export
    deploy.add_verify_parsers(sub)  # verify, toolchain
    accuracy.add_predict_parser(sub)
    accuracy.add_accuracy_parsers(sub)  # accuracy, calibrate
    deploy.add_deploy_parsers(sub)
    accuracy.add_ingest_parser(sub)
    improve.add_parsers(sub)  # improve
    sweep.add_parsers(sub)  # sweep, report
    deploy.add_results_parser(sub)
    serve.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status (the package docstring lists them)."""
    parser = build_parser()
    try:  # numeric flags are checked by their types: a bad one exits 2 naming the flag, before any work
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage error (2) or the help (0)
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    return execute(args)


def execute(args: argparse.Namespace) -> int:
    """Run the command of parsed ``args`` (``args.handler``, a ``Command``) and map what ends it to the exit
    status: its own status, 130 on Ctrl-C, a ``LoomError``'s ``exit_status`` after one line naming the
    problem, and for anything else (a bug) ``EXIT_INTERNAL`` after a request to report it, with the
    traceback only under ``--debug``."""
    command: Command[Any] = args.handler
    debug = bool(getattr(args, "debug", False))
    try:
        if command.stoppable and threading.current_thread() is threading.main_thread():
            # Ctrl-C stops the solves through the token (solve/interrupt.py); the command prints what it has
            STOP.clear()
            with stop_on_sigint(STOP):
                code = command(args)
            return EXIT_INTERRUPTED if STOP.stopped else code
        return command(args)
    except Interrupted as exc:
        print(f"loom-explorer: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("loom-explorer: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except LoomError as exc:
        print(f"loom-explorer: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # a bug: say so, the traceback only when asked for
        if debug:
            traceback.print_exc()
        print(f"loom-explorer: internal error ({type(exc).__name__}: {exc}); this is a bug, please report it "
              "with the command line" + (" and the traceback above" if debug else
                                         " and the traceback that --debug prints"), file=sys.stderr)
        return EXIT_INTERNAL
