"""``python -m loom_explorer.deploy.sim_launch FILE [tt-lang-sim options]``: tt-lang-sim's own entry point,
with readable error reports.

tt-lang-sim 1.1.6 formats kernel errors (unsupported ``ttl.copy`` patterns, deadlocks, ...) through a
``ttl/ttl/diagnostics.py`` it does not ship, so every such error surfaces as a FileNotFoundError that
hides the real message. When that file is missing, this launcher gives the simulator a minimal
stand-in that prints ``file:line:col: message``; everything else is the simulator's own code.

``python -m loom_explorer.deploy.sim_launch --loom-tensors OUT FILE [options]`` runs the kernel instead of the
file's ``main()``: it loads FILE as a module (``main()`` not called), puts its ``kernel_arguments()`` on the
simulated device (bfloat16, tile layout, DRAM), runs ``KERNEL`` on them and saves the host arguments before
and after the run, as float32 arrays, to the ``numpy.savez`` file OUT (``before_0 .. before_N``, ``after_0 ..
after_N``): ``verify`` compares them with its own reference, never the file's.
"""

from __future__ import annotations

import sys
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any


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


def _kernel_runner(out: Path) -> Callable[[str, list[str]], None]:
    """tt-lang-sim's ``run_file`` replaced: run the file's ``KERNEL`` on its ``kernel_arguments()`` and save
    the arguments before and after (module docstring)."""

    def run(filepath: str, argv: list[str]) -> None:
        import numpy
        import ttnn  # the simulator's: tt-lang-sim has put it in sys.modules by now

        namespace: dict[str, Any] = {"__name__": "loom_verified_kernel", "__file__": filepath}
        try:
            exec(compile(Path(filepath).read_text(), filepath, "exec"), namespace)  # the file to run
            before = list(namespace["kernel_arguments"]())
            device = ttnn.open_device(device_id=0)
            try:
                on_device = [
                    ttnn.from_torch(
                        t,
                        dtype=ttnn.bfloat16,
                        layout=ttnn.TILE_LAYOUT,
                        device=device,
                        memory_config=ttnn.DRAM_MEMORY_CONFIG,
                    )
                    for t in before
                ]
                namespace["KERNEL"](*on_device)
                after = [ttnn.to_torch(t) for t in on_device]
            finally:
                ttnn.close_device(device)
        except Exception:  # reported as the simulator reports a failing file, exit 1
            traceback.print_exc()
            sys.exit(1)
        arrays = {
            f"{when}_{i}": t.float().numpy()
            for when, ts in (("before", before), ("after", after))
            for i, t in enumerate(ts)
        }
        numpy.savez(out, **arrays)

    return run


def main() -> None:
    from ttl.sim import ttlang_sim

    _install_diagnostics_fallback()
    args = sys.argv[1:]
    if args[:1] == ["--loom-tensors"] and len(args) >= 3:
        ttlang_sim.run_file = _kernel_runner(Path(args[1]))
        args = args[2:]
    sys.argv = ["tt-lang-sim", *args]
    ttlang_sim.main()


if __name__ == "__main__":
    main()
