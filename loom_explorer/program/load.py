"""Load tile programs from ``kernels/*.py`` (shipped) or any Python file that defines ``PROGRAM``."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

from loom_explorer.errors import LoomError
from loom_explorer.program.dsl import ProgramError, TileProgram
from loom_explorer.shipped import shipped_dir


class KernelError(LoomError, ValueError):
    """A kernel that cannot be found or does not define a TileProgram."""


def _one_line(text: str) -> str:
    """An exception's message on one line (a kernel's own exception may span several)."""
    return " ".join(text.split()) or "(no message)"


def shipped_kernels_dir() -> Path:
    """Folder of the kernels shipped with the package (``kernels/`` in a checkout)."""
    return shipped_dir("kernels")


def list_kernels() -> list[str]:
    return sorted(p.stem for p in shipped_kernels_dir().glob("*.py") if not p.name.startswith("_"))


def load_program(name_or_path: str | Path) -> TileProgram:
    text = str(name_or_path)
    path = Path(text)
    if not text.endswith(".py"):
        path = shipped_kernels_dir() / f"{text}.py"
        if not path.is_file():
            raise KernelError(f"unknown kernel {text!r}; shipped: {', '.join(list_kernels())} (or give a .py path)")
    elif not path.is_file():
        raise KernelError(f"kernel file {text} does not exist")
    spec = importlib.util.spec_from_file_location(f"loom_kernel_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise KernelError(f"cannot import kernel file {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:  # sys.exit() or exit() in the file, whatever the code: never the tool's own exit
        raise KernelError(
            f"{path}: exits while being imported (SystemExit({exc.code!r})); a kernel file only "
            "defines PROGRAM = TileProgram(...)"
        ) from None
    except ProgramError as exc:  # the DSL refused the program: its message names the dimension, tensor or op
        raise KernelError(f"{path}: {_one_line(str(exc))}") from None
    except Exception as exc:  # a user's kernel file may fail in any way; report it with the file name
        raise KernelError(f"{path}: failed to import: {type(exc).__name__}: {_one_line(str(exc))}") from None
    program = getattr(module, "PROGRAM", None)
    if not isinstance(program, TileProgram):
        raise KernelError(f"{path}: defines no PROGRAM = TileProgram(...)")
    return program


@cache
def shipped_program(kernel: str) -> TileProgram:
    """A shipped kernel's program, loaded once per process (``TileProgram`` is frozen, so callers share it):
    for the paths that read many ops' programs (a capture's rows, every split's DRAM bytes)."""
    return load_program(kernel)
