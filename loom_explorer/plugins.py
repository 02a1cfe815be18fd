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

A source checkout (the package imported from a folder with loom-explorer's ``pyproject.toml`` beside it)
reads the package's own entries from that ``pyproject.toml`` (its ``[project.entry-points."GROUP"]`` tables),
not from installed metadata: a checkout never installed (``PYTHONPATH=.``, e.g. under another Python such as
the toolchain's) has none, and an editable install's may be older than the file, or another checkout's (a
second worktree on ``PYTHONPATH``). Other distributions' entries always come from their metadata.

This module imports nothing of the package but its error base class, so every layer may import it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from importlib.metadata import EntryPoint, entry_points
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


_NAME = re.compile(r'^name\s*=\s*"([^"]+)"\s*$')


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def checkout_entry_points(pyproject: Path = PYPROJECT) -> tuple[EntryPoint, ...]:
    """The entries of the ``[project.entry-points."GROUP"]`` tables of ``pyproject``: none when it is absent
    or is not loom-explorer's (its ``[project]`` table's ``name``)."""
    if not pyproject.is_file():
        return ()
    lines = pyproject.read_text(encoding="utf-8").splitlines()
    names = [m.group(1) for line in lines if (m := _NAME.match(line.strip()))]
    if not names or _normalized(names[0]) != DISTRIBUTION:
        return ()
    out, group = [], None
    for line in lines:
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
    """The entries of ``group``: in a source checkout the package's own from its ``pyproject.toml`` and
    other distributions' from their metadata, else every installed distribution's (module docstring)."""
    own = tuple(ep for ep in checkout_entry_points() if ep.group == group)
    installed = tuple(entry_points(group=group))
    if not own:
        return installed
    return own + tuple(ep for ep in installed if ep.dist is None or _normalized(ep.dist.name) != DISTRIBUTION)


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
