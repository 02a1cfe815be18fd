"""What ends a command becomes its exit status (``loom_explorer/cli/entry.py``): every ``LoomError`` its own
status after one line naming the problem, Ctrl-C 130, anything else (a bug) the internal-error status with
the traceback only under ``--debug``."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import subprocess
import sys
from collections.abc import Callable

import pytest
from waits import WAIT_S

import loom_explorer
from loom_explorer import cli
from loom_explorer.cli.common import Command
from loom_explorer.cli.entry import execute
from loom_explorer.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NO_SCHEDULE,
    LoomError,
)


def _run(raise_it: Callable[[], object], debug: bool = False) -> int:
    """``execute`` of a command whose work raises what ``raise_it`` raises."""

    def work(_: argparse.Namespace) -> int:
        raise_it()
        return 0

    return execute(argparse.Namespace(handler=Command(parse=lambda args: args, run=work), debug=debug))


def _missing_key() -> object:
    empty: dict[str, object] = {}
    return empty["no such key"]


def test_an_unexpected_exception_is_an_internal_error_without_a_traceback(capsys) -> None:
    assert _run(_missing_key) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("loom-explorer: internal error (KeyError: 'no such key'); this is a bug")
    assert "--debug" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_debug_prints_the_traceback_of_an_internal_error(capsys) -> None:
    assert _run(_missing_key, debug=True) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "_missing_key" in err
    assert "loom-explorer: internal error (KeyError" in err


def test_ctrl_c_in_a_command_exits_130_without_a_traceback(capsys) -> None:
    def interrupt() -> object:
        raise KeyboardInterrupt

    assert _run(interrupt, debug=True) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "loom-explorer: interrupted\n"


def _loom_errors() -> list[type[LoomError]]:
    """Every LoomError subclass the package defines (each module imported)."""
    for info in pkgutil.walk_packages(loom_explorer.__path__, "loom_explorer."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    found: list[type[LoomError]] = []
    todo: list[type[LoomError]] = [LoomError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(set(found), key=lambda c: f"{c.__module__}.{c.__qualname__}")


ERRORS = _loom_errors()


def test_the_package_s_errors_are_loom_errors() -> None:
    """The errors the command line used to catch one by one, by name."""
    names = {c.__name__ for c in ERRORS}
    assert {
        "HardwareError",
        "KernelError",
        "ProblemError",
        "ProgramStructureError",
        "PinError",
        "InputError",
        "ModelRangeError",
        "OutputError",
        "ExportError",
        "ScheduleFileError",
        "SimulationError",
        "ConfigError",
        "DataError",
        "CalibrationError",
        "StoreError",
        "RunnerError",
        "IngestError",
        "OpsError",
        "SweepError",
        "UnknownCandidateError",
        "CatalogError",
        "ServeError",
        "CellError",
    } <= names


# the statuses of loom_explorer/cli/__init__.py: bad input 2 unless listed here
DOCUMENTED = {"NoScheduleError": EXIT_NO_SCHEDULE}  # no candidate has a schedule


@pytest.mark.parametrize("error", ERRORS, ids=lambda c: c.__qualname__)
def test_each_loom_error_exits_with_its_documented_status(capsys, error: type[LoomError]) -> None:
    documented = next((s for c in error.__mro__ for n, s in DOCUMENTED.items() if c.__name__ == n), EXIT_BAD_INPUT)
    assert error.exit_status == documented
    for args in (("what went wrong",), ("what went wrong", "the reason")):  # CellError: (value, reason)
        try:
            exc = error(*args)
        except TypeError:
            continue

        def fail(exc: LoomError = exc) -> object:
            raise exc

        assert _run(fail) == documented
        err = capsys.readouterr().err
        assert err.startswith("loom-explorer: error: ") and "what went wrong" in err and "Traceback" not in err
        return
    assert error.__name__ in DOCUMENTED, f"{error.__name__}: built from a message, or its status documented"


def test_an_unknown_candidate_is_bad_input_and_still_a_key_error() -> None:
    from loom_explorer.errors import UnknownCandidateError

    exc = UnknownCandidateError("no candidate named 'Q'")
    assert isinstance(exc, KeyError) and str(exc) == "no candidate named 'Q'"


def test_debug_is_taken_before_and_after_the_command() -> None:
    parser = cli.build_parser()
    assert parser.parse_args(["--debug", "hw", "list"]).debug is True
    assert parser.parse_args(["hw", "list", "--debug"]).debug is True
    assert parser.parse_args(["hw", "list"]).debug is False


def test_python_m_runs_the_package() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "loom_explorer.cli", "hw", "show"], capture_output=True, text=True, timeout=WAIT_S
    )
    assert done.returncode == EXIT_BAD_INPUT
    assert done.stderr.strip() == "loom-explorer: error: hw show needs a hardware name or YAML path"
