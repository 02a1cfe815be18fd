"""What an explorer may load: hardware and kernels by name, fixed when the explorer (or its server) starts.

A kernel file is Python and runs when it is loaded; a hardware file is read from disk. So a served page
never names a file: its query string and its form choose among the names of a :class:`Catalog`, built once
from the shipped ``hw/`` and ``kernels/`` plus the files and folders that the person starting the server
named on its command line (``loom-explorer serve --hw FILE --kernel FILE --kernel-dir DIR``). A name is
the file's stem; a name given twice, or one that clashes with a shipped name, is refused at startup.

In a notebook (the user's own process) :meth:`Catalog.local` also accepts a path wherever a name goes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from loom_explorer.errors import LoomError
from loom_explorer.hardware import list_hardware, load_hardware
from loom_explorer.program import TileProgram, list_kernels, load_program

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
HW_SUFFIXES = (".yaml", ".yml")


class CatalogError(LoomError, ValueError):
    """A file or folder named on the command line cannot be offered (missing, clashing name, fails to load)."""


class InputError(LoomError, ValueError):
    """A problem input the explorer cannot use; ``field`` names it (``shape``, ``hw``, ...)."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


def shown(value: str) -> str:
    """``value`` quoted when it is a plain name, else a placeholder: a message never echoes a path or markup."""
    return repr(value) if NAME.fullmatch(value) else "(not a name)"


@dataclass(frozen=True)
class Catalog:
    """Hardware and kernel names, each mapped to what the loaders take (a shipped name or a file path).

    ``accepts_paths``: a value that is no name is passed to the loaders as a path (notebooks only)."""

    hardware: Mapping[str, str]
    kernels: Mapping[str, str]
    accepts_paths: bool = False

    @staticmethod
    def shipped() -> Catalog:
        """The shipped hardware and kernels only (what ``panel serve apps/explorer.py`` offers)."""
        return Catalog.build()

    @staticmethod
    def local() -> Catalog:
        """The shipped names, and any path (the notebook API: the user's own process)."""
        c = Catalog.build()
        return Catalog(c.hardware, c.kernels, accepts_paths=True)

    @staticmethod
    def build(
        hw_files: Iterable[str | Path] = (),
        kernel_files: Iterable[str | Path] = (),
        hw_dirs: Iterable[str | Path] = (),
        kernel_dirs: Iterable[str | Path] = (),
    ) -> Catalog:
        """The shipped names plus the given files and every ``*.yaml``/``*.py`` in the given folders.

        Each file is loaded once here (a kernel file runs), so a broken one is refused at startup.
        Raises :class:`CatalogError` naming the flag and the file."""
        hardware: dict[str, str] = {name: name for name in list_hardware()}
        kernels: dict[str, str] = {name: name for name in list_kernels()}
        for flag, path in [
            *(("--hw", Path(p)) for p in hw_files),
            *(("--hw-dir", p) for d in hw_dirs for p in _folder("--hw-dir", d, HW_SUFFIXES)),
        ]:
            _add(hardware, "hardware", flag, path, HW_SUFFIXES, load_hardware)
        for flag, path in [
            *(("--kernel", Path(p)) for p in kernel_files),
            *(("--kernel-dir", p) for d in kernel_dirs for p in _folder("--kernel-dir", d, (".py",))),
        ]:
            _add(kernels, "kernel", flag, path, (".py",), load_program)
        return Catalog(
            MappingProxyType(dict(sorted(hardware.items()))), MappingProxyType(dict(sorted(kernels.items())))
        )

    # ------------------------------------------------------------------ lookups
    def hw_source(self, value: str) -> str:
        """What :func:`load_hardware` takes for ``value``; :class:`InputError` (field ``hw``) if unknown."""
        return self._source("hw", "hardware", self.hardware, value)

    def kernel_source(self, value: str) -> str:
        """What :func:`load_program` takes for ``value``; :class:`InputError` (field ``kernel``) if unknown."""
        return self._source("kernel", "kernel", self.kernels, value)

    def program(self, value: str) -> TileProgram:
        """The tile program of kernel ``value``; :class:`InputError` (field ``kernel``) if it cannot be loaded."""
        source = self.kernel_source(value)
        try:
            return load_program(source)
        except ValueError as exc:  # KernelError; a shipped or command-line kernel only fails if edited meanwhile
            raise InputError("kernel", str(exc)) from None

    def _source(self, field_name: str, what: str, known: Mapping[str, str], value: str) -> str:
        if value in known:
            return known[value]
        if self.accepts_paths:
            return value
        raise InputError(field_name, f"unknown {what} {shown(value)}; choose one of {', '.join(known)}")


def _folder(flag: str, folder: str | Path, suffixes: tuple[str, ...]) -> list[Path]:
    path = Path(folder)
    if not path.is_dir():
        raise CatalogError(f"{flag} {path}: no such folder")
    files = sorted(p for p in path.iterdir() if p.suffix in suffixes and not p.name.startswith(("_", ".")))
    if not files:
        raise CatalogError(f"{flag} {path}: no {' or '.join(suffixes)} files in this folder")
    return files


def _add(
    known: dict[str, str], what: str, flag: str, path: Path, suffixes: tuple[str, ...], load: Callable[[Path], object]
) -> None:
    if path.suffix not in suffixes:
        raise CatalogError(f"{flag} {path}: a {what} file ends in {' or '.join(suffixes)}")
    if not path.is_file():
        raise CatalogError(f"{flag} {path}: no such file")
    name = path.stem
    if not NAME.fullmatch(name):
        raise CatalogError(
            f"{flag} {path}: the name {name!r} (the file's stem) must be letters, digits, '_', '.' "
            "or '-', at most 64 characters"
        )
    if name in known:
        other = known[name]
        if other == str(path.resolve()):
            raise CatalogError(f"{flag} {path}: given twice")
        where = "a shipped " + what if other == name else str(other)
        raise CatalogError(f"{flag} {path}: the name {name!r} is already taken by {where}; rename the file")
    try:
        load(path)
    except (ValueError, OSError) as exc:  # HardwareError, KernelError, an unreadable file
        raise CatalogError(f"{flag} {path}: {exc}") from None
    known[name] = str(path.resolve())
