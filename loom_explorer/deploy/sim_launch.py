"""``python -m loom_explorer.deploy.sim_launch FILE [tt-lang-sim options]``: tt-lang-sim's own entry point,
with readable error reports.

tt-lang-sim 1.1.6 formats kernel errors (unsupported ``ttl.copy`` patterns, deadlocks, ...) through a
``ttl/ttl/diagnostics.py`` it does not ship, so every such error surfaces as a FileNotFoundError that
hides the real message. When that file is missing, this launcher gives the simulator a minimal
stand-in that prints ``file:line:col: message``; everything else is the simulator's own code.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path


class _CompileError(Exception):
    def __init__(self, message: str, source_file: str = "", line: int = 0, col: int = 1) -> None:
        super().__init__(message)
        self.message, self.source_file, self.line, self.col = message, source_file, line, col

    def format(self) -> str:
        return f"{self.source_file}:{self.line}:{self.col}: {self.message}"


def _install_diagnostics_fallback() -> None:
    from ttl.sim import diagnostics

    shipped = Path(diagnostics.__file__).resolve().parent.parent / "ttl" / "diagnostics.py"
    if shipped.is_file():
        return
    stand_in = types.ModuleType("ttl.diagnostics")
    stand_in.TTLangCompileError = _CompileError  # type: ignore[attr-defined]  # a module made here, at run time
    diagnostics.lazy_import_diagnostics = lambda: stand_in


def main() -> None:
    from ttl.sim.ttlang_sim import main as simulate

    _install_diagnostics_fallback()
    sys.argv = ["tt-lang-sim", *sys.argv[1:]]
    simulate()


if __name__ == "__main__":
    main()
