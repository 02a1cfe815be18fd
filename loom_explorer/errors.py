"""The project's error base class and the command line's exit statuses.

Every error the package raises on purpose (bad input, a file it cannot read or write, a schedule a format
cannot express, a tool that cannot run) is a :class:`LoomError`; its ``exit_status`` is what
``loom-explorer`` exits with when the error reaches it, after one line ``loom-explorer: error: MESSAGE``.
Anything else reaching the command line is a bug: ``EXIT_INTERNAL`` and a short request to report it, the
traceback only under ``--debug``.

This module imports nothing of the package, so every layer may import it.
"""

from __future__ import annotations

from typing import ClassVar

EXIT_OK = 0
EXIT_FAILED = 1  # a check ran and failed (``verify``/``deploy`` mismatch, ``toolchain status``: not installed)
EXIT_BAD_INPUT = 2  # the input is wrong: argparse's usage errors and every LoomError by default
EXIT_NO_SCHEDULE = 3  # the input is fine but no candidate has a schedule (nothing to route, export, deploy)
EXIT_INTERNAL = 70  # a bug: an exception that is not a LoomError (sysexits.h's EX_SOFTWARE)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)


class LoomError(Exception):
    """An error the package raises on purpose; the message names the culprit (flag, file, line, field).

    ``exit_status`` is the command line's exit status for it: ``EXIT_BAD_INPUT`` unless a subclass says
    otherwise."""

    exit_status: ClassVar[int] = EXIT_BAD_INPUT


class NoScheduleError(LoomError):
    """Every candidate was solved and none has a schedule, so the command has nothing to work on."""

    exit_status: ClassVar[int] = EXIT_NO_SCHEDULE


class UnknownCandidateError(LoomError, KeyError):
    """A candidate name that is not a candidate of the problem (a ``KeyError`` too, as a lookup by name)."""

    def __str__(self) -> str:  # KeyError's own str() quotes the message
        return str(self.args[0]) if self.args else ""
