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
a group no installed distribution registers (the package is then not installed: ``pip install -e .``).

This module imports nothing of the package but its error base class, so every layer may import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import Protocol, TypeVar

from loom_explorer.errors import LoomError


class PluginError(LoomError):
    """A registered plug-in that cannot be used, or a group that nothing registers."""


class Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=Named)


@cache
def _loaded(group: str) -> tuple[tuple[str, str, object], ...]:
    """(entry name, its value, the loaded object) of every entry of ``group``, in name order."""
    out = []
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
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
