"""The real TT-Lang compiler on an exported kernel file, compile-only (``deploy/ttlang_compile.py`` runs in
the toolchain's Python 3.12, ``deploy/toolchain.py``).

What a pass proves: the compiler's whole pipeline accepts the kernel (its language subset, pipe guards,
dataflow buffers) and its circular buffers fit the compiler's L1 budget, down to generated C++. What only a
card proves: the device-side JIT build of that C++, and timing.

Every run has a temporary folder of its own, removed when it ends: tt-lang 1.1.1 writes each generated C++
kernel to ``/tmp/$USER/`` (``ttl_api._write_kernel_to_tmp``; ``/tmp/default/`` without ``USER``), so the
driver runs in ``/tmp/loom-compile-XXXX/`` with ``USER`` set to that folder's name (and ``TMPDIR`` and its
working directory in it): nothing it writes outlives the run, and runs at the same time never share a folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loom_explorer.deploy.toolchain import Toolchain, ToolchainError, require_toolchain
from loom_explorer.solve.children import die_with_parent_preexec

DRIVER = Path(__file__).with_name("ttlang_compile.py")
PREFIX = "LOOM_COMPILE "
COMPILER_TMP = "/tmp"  # where tt-lang writes its generated C++ (``/tmp/$USER/``), whatever TMPDIR says


@dataclass(frozen=True, slots=True)
class CircularBuffer:
    """One circular buffer as the compiler allocates it: ``tiles`` per block, ``block_count`` blocks."""

    tiles: int
    block_count: int
    page_bytes: int
    compiler_allocated: bool

    @property
    def l1_bytes(self) -> int:
        return self.tiles * self.block_count * self.page_bytes


@dataclass(frozen=True, slots=True)
class CompileReport:
    file: str
    passed: bool
    compiler: str
    message: str
    circular_buffers: tuple[CircularBuffer, ...]
    l1_budget_bytes: int

    @property
    def cb_l1_bytes(self) -> int:
        """Every circular buffer's bytes: what the compiler checks against ``l1_budget_bytes``."""
        return sum(cb.l1_bytes for cb in self.circular_buffers)

    def to_json(self) -> dict[str, object]:
        return {
            "passed": self.passed,
            "compiler": self.compiler,
            "message": self.message,
            "circular_buffer_bytes": self.cb_l1_bytes if self.passed else None,
            "l1_budget_bytes": self.l1_budget_bytes,
        }


def compile_files(
    paths: Sequence[str | Path], toolchain: Toolchain | None = None, timeout_seconds: float = 600.0
) -> list[CompileReport]:
    """Compile every file in one toolchain process (its imports take seconds, a compile a fraction of one).
    ToolchainError when the toolchain is missing or the driver fails outside any one file."""
    tc = toolchain or require_toolchain()
    files = [str(Path(p).resolve()) for p in paths]
    with tempfile.TemporaryDirectory(prefix="loom-compile-", dir=COMPILER_TMP) as work:
        try:
            done = subprocess.run(
                [str(tc.python), str(DRIVER), *files],
                capture_output=True,
                text=True,
                timeout=timeout_seconds,
                check=False,
                stdin=subprocess.DEVNULL,
                cwd=work,
                env=_compiler_env(Path(work)),
                preexec_fn=die_with_parent_preexec(),
            )  # dies with this process
        except subprocess.TimeoutExpired:
            raise ToolchainError(
                f"the TT-Lang compiler did not finish {len(files)} file(s) in {timeout_seconds:g} s"
            ) from None
    reports = [_report(json.loads(line[len(PREFIX) :])) for line in done.stdout.splitlines() if line.startswith(PREFIX)]
    if done.returncode != 0 or len(reports) != len(files):
        raise ToolchainError(
            f"the TT-Lang compiler driver failed (exit {done.returncode}):\n" + (done.stderr or done.stdout)[-3000:]
        )
    return reports


def _compiler_env(work: Path) -> dict[str, str]:
    """This process's environment without ``TTLANG_SIM_ONLY`` (which importing tt-lang-sim sets here and which
    would make the toolchain load tt-lang without its compiler), its generated files sent into ``work``
    (module docstring: ``work`` is ``COMPILER_TMP/NAME``, ``USER`` is ``NAME``)."""
    env = {k: v for k, v in os.environ.items() if k != "TTLANG_SIM_ONLY"}
    return {**env, "USER": work.name, "TMPDIR": str(work)}


def compile_file(path: str | Path, toolchain: Toolchain | None = None, timeout_seconds: float = 600.0) -> CompileReport:
    return compile_files([path], toolchain, timeout_seconds)[0]


def _report(raw: dict[str, Any]) -> CompileReport:
    """One file's report as the driver prints it (JSON, ``ttlang_compile.py``)."""
    cbs = raw.get("circular_buffers") or []
    assert isinstance(cbs, list)
    return CompileReport(
        file=str(raw["file"]),
        passed=bool(raw["passed"]),
        compiler=str(raw["compiler"]),
        message=str(raw.get("message") or ""),
        l1_budget_bytes=int(raw["l1_budget_bytes"]),
        circular_buffers=tuple(
            CircularBuffer(int(c["tiles"]), int(c["block_count"]), int(c["page_bytes"]), bool(c["compiler_allocated"]))
            for c in cbs
        ),
    )
