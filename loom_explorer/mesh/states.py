"""Mesh views, their axes, and the sharding state of a 2-D activation tensor on them.

**Views.** ttnn opens the chips of a mesh as a ``MeshDevice`` of some shape; a collective runs along one
axis of it. A mesh of ``rows x columns`` chips (``MeshSpec``) gives:

* the ``mesh`` view, when both axes have more than one chip: two axes, ``rows`` (ttnn ``cluster_axis`` 0)
  and ``columns`` (1), each with its own links per neighbouring pair and a ring only where it ``wraps``;
* the ``ring`` view, when the mesh has a ``flat_ring`` (a T3000's 2 x 4 chips opened as 1 x 8): one axis
  through every chip, whose hops have the smaller axis' links (``mesh_schema.py``), ring or line;
* for a mesh with one axis of one chip (1 x 8, 2 x 1): one view of that axis alone.

**States.** Every tensor between ops is 2-D, ``rows x cols`` elements (rows: tokens in prefill, users in
decode). On each axis of a view a tensor is in one of four states: replicated (``R``: every chip of the
axis holds it whole), sharded on its rows (``Sr``) or on its columns (``Sc``) into equal slices, one per
chip, or partial sums (``P``: every chip holds a full-size addend; the tensor is their sum). A tensor's
state on a view is one such state per axis; a chip's local piece is ``ceil(rows / prod_{axes Sr} n_a)``
rows by ``ceil(cols / prod_{axes Sc} n_a)`` columns, each padded to whole 32 x 32 tiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from itertools import product
from math import ceil, prod

from loom_explorer.errors import LoomError
from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.model.collective import FabricTopology

TILE = 32  # elements per tile side: every tensor between ops is tiled


class MeshError(LoomError, ValueError):
    """A mesh, graph, pin or split that cannot be used; the message names the culprit."""


class AxisState(str, Enum):
    replicated = "R"
    rows = "Sr"  # sharded on the tensor's rows
    cols = "Sc"  # sharded on the tensor's columns
    partial = "P"  # partial sums


@dataclass(frozen=True, slots=True)
class MeshAxis:
    """One axis of a view: ``chips`` in a line (or ring), ``links`` Ethernet links per neighbouring pair;
    ``topologies``: ttnn ``Topology`` values a collective along it may use (ring only where it closes)."""

    name: str
    chips: int
    links: int
    topologies: tuple[FabricTopology, ...]


@dataclass(frozen=True, slots=True)
class MeshView:
    """The mesh opened as one ``MeshDevice`` shape: its axes (those with more than one chip)."""

    name: str
    axes: tuple[MeshAxis, ...]

    @property
    def chips(self) -> int:
        return prod(a.chips for a in self.axes)

    def axis(self, name: str) -> MeshAxis:
        for a in self.axes:
            if a.name == name:
                return a
        raise MeshError(f"view {self.name} has no axis {name!r} (axes: {', '.join(a.name for a in self.axes)})")


@dataclass(frozen=True, slots=True)
class TensorState:
    """A tensor's state on a view: one :class:`AxisState` per axis of the view, in the view's order."""

    view: str
    axes: tuple[AxisState, ...]

    @property
    def label(self) -> str:
        return f"{self.view}:" + ",".join(s.value for s in self.axes)


def _topologies(chips: int, closes: bool) -> tuple[FabricTopology, ...]:
    if closes and chips >= 3:
        return (FabricTopology.linear, FabricTopology.ring)
    return (FabricTopology.linear,)


def mesh_views(mesh: MeshSpec) -> tuple[MeshView, ...]:
    """The views ttnn can open ``mesh`` as (module docstring), the 2-D one first."""
    rows = MeshAxis("rows", mesh.rows.chips, mesh.rows.links, _topologies(mesh.rows.chips, mesh.rows.wraps))
    columns = MeshAxis(
        "columns", mesh.columns.chips, mesh.columns.links, _topologies(mesh.columns.chips, mesh.columns.wraps)
    )
    real = tuple(a for a in (rows, columns) if a.chips > 1)
    if not real:
        raise MeshError(f"mesh {mesh.name}: one chip, nothing to split over")
    views: list[MeshView] = []
    if len(real) == 2:
        views.append(MeshView("mesh", real))
        if mesh.flat_ring:
            links = min(mesh.rows.links, mesh.columns.links)
            views.append(MeshView("ring", (MeshAxis("ring", mesh.chips, links, _topologies(mesh.chips, True)),)))
    else:
        views.append(MeshView(real[0].name, real))
    return tuple(views)


def view_states(view: MeshView, partial: bool = True) -> tuple[TensorState, ...]:
    """Every state of a tensor on ``view`` (with or without partial sums)."""
    kinds = tuple(AxisState) if partial else (AxisState.replicated, AxisState.rows, AxisState.cols)
    return tuple(TensorState(view.name, combo) for combo in product(kinds, repeat=len(view.axes)))


def local_shape(view: MeshView, state: TensorState, rows: int, cols: int) -> tuple[int, int]:
    """A chip's piece of a ``rows x cols`` tensor in ``state``, tile-padded (module docstring)."""
    split_rows = prod(a.chips for a, s in zip(view.axes, state.axes, strict=True) if s is AxisState.rows)
    split_cols = prod(a.chips for a, s in zip(view.axes, state.axes, strict=True) if s is AxisState.cols)
    return _tiles(ceil(rows / split_rows)), _tiles(ceil(cols / split_cols))


def _tiles(elements: int) -> int:
    return ceil(elements / TILE) * TILE
