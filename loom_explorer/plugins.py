"""Plug-ins: the objects installed distributions register under an entry-point group.

Kernel families plug into the core this way. Each layer's registry reads its own group (the program
analyses from ``loom_explorer.program_families``, the models from ``loom_explorer.model_families``, ...), so
no core module imports a family module: a family, shipped with the package or in a package of its own,
registers with one line per group in its ``pyproject.toml``::

    [project.entry-points."loom_explorer.model_families"]
    elementwise = "loom_explorer.families.elementwise.model:FAMILY"

The entry's name is the family's name; its object must be an instance of the group's type. A group is read
once per process (``importlib.metadata``), its entries loaded in name order. An entry that cannot be loaded,
is of the wrong type or names another family than its entry is a :class:`PluginError` naming the entry; so is
a group nothing registers.

A source checkout used without being installed (``PYTHONPATH=.``, e.g. under another Python such as the
toolchain's) has no metadata of its own: then the package's own entries are read from the ``pyproject.toml``
beside it (its ``[project.entry-points."GROUP"]`` tables), as an install would have recorded them.

This module imports nothing of the package but its error base class, so every layer may import it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution, entry_points
from pathlib import Path
from types import MappingProxyType
from typing import Protocol, TypeVar

from loom_explorer.errors import LoomError


class PluginError(LoomError):
    """A registered plug-in that cannot be used, or a group that nothing registers."""


class Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=Named)


DISTRIBUTION = "loom-explorer"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"  # a source checkout's
_SECTION = re.compile(r'^\[project\.entry-points\."([^"]+)"\]\s*$')
_ENTRY = re.compile(r'^([A-Za-z0-9_.-]+)\s*=\s*"([^"]+)"\s*(#.*)?$')


def checkout_entry_points(pyproject: Path = PYPROJECT) -> tuple[EntryPoint, ...]:
    """The entries of the ``[project.entry-points."GROUP"]`` tables of ``pyproject`` (none when it is absent)."""
    if not pyproject.is_file():
        return ()
    out, group = [], None
    for line in pyproject.read_text(encoding="utf-8").splitlines():
        section = _SECTION.match(line)
        if section or line.startswith("["):
            group = section.group(1) if section else None
            continue
        entry = _ENTRY.match(line.strip())
        if group and entry:
            out.append(EntryPoint(name=entry.group(1), value=entry.group(2), group=group))
    return tuple(out)


@cache
def _entry_points(group: str) -> tuple[EntryPoint, ...]:
    """The installed entries of ``group``, and the checkout's own when the package is not installed."""
    found = tuple(entry_points(group=group))
    try:
        distribution(DISTRIBUTION)
    except PackageNotFoundError:  # a source checkout on the path, never installed
        found += tuple(ep for ep in checkout_entry_points() if ep.group == group)
    return found


@cache
def _loaded(group: str) -> tuple[tuple[str, str, object], ...]:
    """(entry name, its value, the loaded object) of every entry of ``group``, in name order."""
    out = []
    for ep in sorted(_entry_points(group), key=lambda e: e.name):
        try:
            obj = ep.load()
        except Exception as exc:  # a plug-in's import error, whatever it is, named with its entry
            raise PluginError(
                f"plug-in {ep.name} = {ep.value!r} of group {group} cannot be loaded: {type(exc).__name__}: {exc}"
            ) from exc
        out.append((ep.name, ep.value, obj))
    return tuple(out)


def registered(group: str, kind: type[T]) -> Mapping[str, T]:
    """Every plug-in of ``group`` by name (read-only, name order); each must be a ``kind`` named as its
    entry. PluginError when one is not, or when the group has no entry."""
    entries = _loaded(group)
    if not entries:
        raise PluginError(
            f"no installed distribution registers a plug-in of group {group}: is loom-explorer "
            "installed (pip install -e .)?"
        )
    out: dict[str, T] = {}
    for name, value, obj in entries:
        if not isinstance(obj, kind):
            raise PluginError(
                f"plug-in {name} = {value!r} of group {group} is an object of type "
                f"{type(obj).__name__}, not a {kind.__name__}"
            )
        if obj.name != name:
            raise PluginError(
                f"plug-in {name} = {value!r} of group {group} is named {obj.name!r}: the entry's "
                "name must be the family's"
            )
        out[name] = obj
    return MappingProxyType(out)
