"""Start-up discipline of the command line (``loom_explorer/cli/entry.py``): ``--help`` imports no command
module and no heavy library, a command imports only its own module, an answer from the results store needs
neither OR-Tools, pandas nor networkx, and every parser (a command's own, or all) lists the commands alike.

Each import check runs in a fresh interpreter (``sys.modules`` of this test process holds everything); no
check is timed (``benchmarks/startup.py`` measures the times).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from loom_explorer.cli import entry

HEAVY = ("ortools", "pandas", "networkx", "numpy", "pydantic", "yaml")
# runs loom-explorer ARGS in a fresh interpreter, the command's output on stderr; prints the loaded modules
LOADED = (
    "import contextlib, json, sys\n"
    "from loom_explorer.cli import main\n"
    "with contextlib.redirect_stdout(sys.stderr):\n"
    "    code = main(sys.argv[1:])\n"
    "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
)


def loaded(*args: str) -> tuple[int, set[str], str]:
    """Exit status, imported modules and the output (stderr, where LOADED puts stdout) of ``loom-explorer ARGS``."""
    done = subprocess.run([sys.executable, "-c", LOADED, *args], capture_output=True, text=True, timeout=300)
    assert done.stdout, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    return result["code"], set(result["modules"]), done.stderr


def heavy(modules: set[str]) -> list[str]:
    return [m for m in HEAVY if m in modules]


LISTING = ("loom_explorer.cli.entry", "loom_explorer.cli.help_lines")  # what lists the commands, no command module


def test_help_imports_no_command_module_and_no_heavy_library() -> None:
    code, modules, out = loaded("--help")
    assert code == 0 and "solve every mapping candidate" in out
    assert heavy(modules) == []
    assert {m for m in modules if m.startswith("loom_explorer.cli.")} == set(LISTING)


def test_a_command_imports_only_its_own_module() -> None:
    code, modules, out = loaded("solve", "--help")
    assert code == 0 and "--shape" in out
    assert heavy(modules) == []
    commands = {m for m in modules if m.startswith("loom_explorer.cli.")} - set(LISTING)
    assert commands == {"loom_explorer.cli.solve", "loom_explorer.cli.common"}


def test_an_answer_from_the_store_needs_no_solver(tmp_path: Path) -> None:
    """Solved once (OR-Tools loaded), the same solve again comes from the store without OR-Tools, pandas or
    networkx; its heading states the per-tensor formats, which differ here."""
    store = tmp_path / "results.sqlite"
    args = (
        "solve",
        "gemm",
        "--hw",
        "wormhole_n150",
        "--shape",
        "M=64,K=64,N=64",
        "--format",
        "in1=bfp8_b",
        "--candidate",
        "M@y,N@x|in0=mcast_x,in1=mcast_y",
        "--store",
        str(store),
    )
    for _ in range(2):  # a second try only when the package's source (part of the key) changed in between
        code, modules, out = loaded(*args)
        assert code == 0 and "ortools" in modules and "from the store" not in out
        code, modules, out = loaded(*args)
        if "from the store, proven" in out:
            break
    assert code == 0 and "from the store, proven" in out  # type: ignore[possibly-undefined]  # the loop runs
    assert [m for m in ("ortools", "pandas", "networkx") if m in modules] == []  # type: ignore[possibly-undefined]
    heading = next(line for line in out.splitlines() if line.startswith("gemm M=64"))
    assert "in0 bfloat16, in1 bfloat8_b, out bfloat16, hifi2" in heading


def _help_lines(parser: argparse.ArgumentParser) -> list[tuple[str, str | None]]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [(a.dest, a.help) for a in sub._choices_actions]


def test_every_parser_lists_the_commands_alike() -> None:
    full = _help_lines(entry.build_parser())  # every command module's own parser
    assert _help_lines(entry.build_parser(None)) == full  # the lines of cli/help_lines.py
    for name, _ in full:  # a command's own parser beside the others' lines: the same listing
        assert _help_lines(entry.build_parser(name)) == full


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        ([], None),
        (["--help"], None),
        (["-h"], None),
        (["--debug"], None),
        (["solve", "gemm"], "solve"),
        (["--debug", "traffic", "--help"], "traffic"),
        (["sovle"], "sovle"),
    ],
)
def test_the_command_is_the_first_word_that_is_no_option(argv: list[str], command: str | None) -> None:
    assert entry.command_of(argv) == command


def test_a_lazily_built_parser_parses_as_the_full_one() -> None:
    argv = ["--debug", "solve", "gemm", "--hw", "wormhole_n150", "--shape", "M=64,K=64,N=64", "--pin", "grid_x=2"]
    lazy, full = entry.build_parser("solve").parse_args(argv), entry.build_parser().parse_args(argv)
    assert vars(lazy) == vars(full)


def test_an_unknown_command_is_refused_naming_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    assert entry.main(["sovle"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'sovle'" in err and "solve" in err


def test_the_target_choices_are_kernel_target_s_values() -> None:
    """``--target``'s choices are spelled in cli/common.py so that the parser imports no model."""
    from loom_explorer.cli.common import TARGETS
    from loom_explorer.problem import KernelTarget

    assert tuple(t.value for t in KernelTarget) == TARGETS
