"""``verify`` runs the real TT-Lang compiler (compile-only) beside the simulator and reports both; without the
toolchain it says the file was not compiled and claims nothing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from loom_helpers import NEEDS_SIM

from loom_explorer.deploy.compiler import CompileReport, compile_files

pytestmark = NEEDS_SIM

SHAPE = "M=256,K=256,N=256"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loom_explorer.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def kernel_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("verify") / "gemm.py"
    done = _cli("export", "gemm", "--hw", "wormhole_n150", "--shape", SHAPE, "--format", "ttlang", "-o", str(path))
    assert done.returncode == 0, done.stderr
    return path


# an export and a simulated run, each in a fresh interpreter
@pytest.mark.slow  # over 8 s: CI runs it, the quick tier does not
def test_without_the_toolchain_verify_says_it_did_not_compile(kernel_file, tmp_path) -> None:
    done = _cli("verify", str(kernel_file), "--json", env={"LOOM_TOOLCHAIN": str(tmp_path / "none")})
    report = json.loads(done.stdout)
    assert report["compile"] == {"passed": None, "compiler": None, "message": report["compile"]["message"]}
    assert "not compiled" in report["compile"]["message"] and "toolchain install" in report["compile"]["message"]
    assert report["passed"] and done.returncode == 0  # the simulator's checks passed; no compile is claimed


@pytest.mark.toolchain
def test_verify_compiles_with_the_real_compiler(kernel_file, toolchain) -> None:
    done = _cli("verify", str(kernel_file))  # the text report
    assert done.returncode == 0, done.stdout + done.stderr
    assert "compile: ok (tt-lang 1.1.1, compile-only; circular buffers" in done.stdout
    done = _cli("verify", str(kernel_file), "--json")
    report = json.loads(done.stdout)
    assert report["compile"]["passed"] is True, report["compile"]["message"]
    assert report["compile"]["compiler"] == "tt-lang 1.1.1"
    assert 0 < report["compile"]["circular_buffer_bytes"] <= report["compile"]["l1_budget_bytes"]
    assert report["passed"] and report["pcc"] >= 0.999 and done.returncode == 0


def _greedy(folder: Path) -> Path:
    """in0 buffered 32 blocks deep, far beyond L1: a file whose buffer depth is not its schedule's."""
    path = folder / "greedy.py"
    done = _cli(
        "export",
        "gemm",
        "--hw",
        "wormhole_n150",
        "--shape",
        "M=256,K=1024,N=256",
        "--candidate",
        "M@y,N@x|in0=dram,in1=dram",
        "--pin",
        "grid_x=1",
        "--pin",
        "grid_y=1",
        "--pin",
        "out_block_h=4",
        "--pin",
        "in0_block_w=16",
        "--format",
        "ttlang",
        "-o",
        str(path),
    )
    assert done.returncode == 0, done.stderr
    return _edited(
        path, r"^IN0_BUFFER_DEPTH, IN1_BUFFER_DEPTH = (\d+), \d+", r"IN0_BUFFER_DEPTH, IN1_BUFFER_DEPTH = 32, \1", path
    )


def _unused(kernel_file: Path, folder: Path) -> Path:
    """The kernel with a dataflow buffer declared and never used."""
    return _edited(
        kernel_file,
        r"^(    in0_dfb = ttl\.make_dataflow_buffer_like\(in0, .*)$",
        r"\1\n    unused_dfb = ttl.make_dataflow_buffer_like(in0, shape=(1, 1), block_count=1)",
        folder / "unused.py",
    )


def _edited(source: Path, line: str, replacement: str, out: Path) -> Path:
    """``source`` with its one line matching ``line`` replaced, written to ``out``."""
    text, count = re.subn(line, replacement, source.read_text(), flags=re.MULTILINE)
    assert count == 1, line
    out.write_text(text)
    return out


@dataclass(frozen=True)
class Compiled:
    greedy: Path
    reports: dict[str, CompileReport]  # greedy, unused, good: compiled in this order, in one toolchain process
    user: str  # the USER they were compiled under


@pytest.fixture(scope="module")
def compiled(kernel_file, toolchain, tmp_path_factory) -> Compiled:
    """The greedy file, the unused-buffer file and the good kernel compiled in one toolchain process (each
    toolchain start imports the compiler: seconds), under a USER of this module's own."""
    folder = tmp_path_factory.mktemp("compiled")
    greedy = _greedy(folder)
    user = f"loom-test-{os.getpid()}-{id(folder)}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("USER", user)
        reports = compile_files([greedy, _unused(kernel_file, folder), kernel_file], toolchain)
    return Compiled(greedy, dict(zip(("greedy", "unused", "good"), reports, strict=True)), user)


@pytest.mark.toolchain
def test_a_kernel_the_compiler_refuses_says_its_real_error_first(compiled) -> None:
    """in0 buffered 32 blocks deep, far beyond L1: verify refuses the file before any run (its buffer depth is
    not its schedule's), and the compiler refuses it with the L1-budget error as the message's first line (tt-lang
    puts its version banner first; the report names the compiler instead)."""
    done = _cli("verify", str(compiled.greedy))
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"constant IN0_BUFFER_DEPTH: 32 in the file, \d+ in the schedule", done.stdout), done.stdout
    assert "not simulated, not compiled" in done.stdout
    refused = compiled.reports["greedy"]
    first = refused.message.splitlines()[0]
    assert not refused.passed and refused.compiler == "tt-lang 1.1.1"
    assert first.startswith("RuntimeError: error: total circular buffer allocation") and "exceeds L1 budget" in first, (
        refused.message
    )


@pytest.mark.toolchain
def test_every_compile_runs_in_a_temporary_folder_of_its_own_removed_afterwards(compiled) -> None:
    """tt-lang writes each generated C++ kernel to /tmp/$USER/: under a USER of this module's own, none is left
    there once the compile returns (the compile ran in a /tmp/loom-compile-* folder, now removed)."""
    assert compiled.reports["good"].passed, compiled.reports["good"].message
    assert not Path("/tmp", compiled.user).exists()


@pytest.mark.toolchain
def test_a_declared_but_unused_buffer_is_refused_as_the_runtime_would(compiled) -> None:
    """The compiler leaves an unused dataflow buffer without a configuration, which tt-lang's runtime refuses
    to run: the compile check says so rather than passing it (the next file still compiles)."""
    bad, good = compiled.reports["unused"], compiled.reports["good"]
    assert not bad.passed and "has no configuration" in bad.message
    assert good.passed and good.cb_l1_bytes > 0
