"""Pins of a mesh solve: ``OP.split=NAME``, ``TENSOR.num_links=L``, ``TENSOR.topology=linear|ring`` and
``view=NAME``, checked against the graph before anything is solved; every error names the pin.

A tensor is named after the op producing it (``wo``: the output of ``wo``; ``x``: the graph's input), so
``wo.num_links=1`` sets the ``num_links`` of every collective that converts ``wo``'s output, on every axis.
A split's name is as ``splits.py`` writes it (``N@ring``, ``N@columns,K@rows``); a bare role (``N``, ``K``,
``heads``, ``cols``) names the split giving that role to the one axis of a one-axis view, when exactly one
view has one axis of every chip (a T3000's ``ring``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from loom_explorer.mesh.graph import OpGraph
from loom_explorer.mesh.splits import Split
from loom_explorer.mesh.states import MeshError, MeshView
from loom_explorer.model.collective import FabricTopology

PinField = Literal["split", "num_links", "topology", "view"]


@dataclass(frozen=True, slots=True)
class MeshPin:
    """One pin: ``target`` (an op or tensor name; ``""`` for ``view``), ``field`` and its value, and the
    text it was written as."""

    target: str
    field: PinField
    value: str
    text: str


def parse_pin(text: str, graph: OpGraph, splits: dict[str, list[Split]], views: tuple[MeshView, ...]) -> MeshPin:
    """``text`` as a checked pin (module docstring); :class:`MeshError` naming the pin otherwise."""
    where = f"pin {text!r}"
    key, eq, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not eq or not value:
        raise MeshError(f"{where}: expected NAME=VALUE, e.g. w1.split=N or wo.num_links=1")
    if key == "view":
        names = [v.name for v in views]
        if value not in names:
            raise MeshError(f"{where}: no view {value!r}; views of this mesh: {', '.join(names)}")
        return MeshPin("", "view", value, text)
    target, dot, field = key.rpartition(".")
    if not dot or field not in ("split", "num_links", "topology"):
        raise MeshError(f"{where}: expected OP.split, TENSOR.num_links, TENSOR.topology or view")
    names = [o.name for o in graph.ops if o.name != "out"]
    if target not in names:
        raise MeshError(f"{where}: {target!r} is not an op or tensor of graph {graph.name} ({', '.join(names)})")
    if field == "split":
        return MeshPin(target, "split", _split_name(where, value, splits[target], views), text)
    if field == "num_links":
        most = max(a.links for v in views for a in v.axes)
        if not value.isdigit() or not 1 <= int(value) <= most:
            raise MeshError(f"{where}: num_links must be a whole number 1..{most} (the most links of any axis)")
        return MeshPin(target, "num_links", str(int(value)), text)
    topologies = [t.value for t in FabricTopology]
    if value not in topologies:
        raise MeshError(f"{where}: topology must be one of {', '.join(topologies)}")
    return MeshPin(target, "topology", value, text)


def _split_name(where: str, value: str, splits: list[Split], views: tuple[MeshView, ...]) -> str:
    names = [s.name for s in splits]
    if value in names:
        return value
    whole = [v for v in views if len(v.axes) == 1 and v.axes[0].chips == max(x.chips for x in views)]
    if "@" not in value and len(whole) == 1:
        alias = f"{value}@{whole[0].axes[0].name}"
        if alias in names:
            return alias
    raise MeshError(f"{where}: no split {value!r} of this op; its splits: {', '.join(names)}")
