"""The collectives that move a tensor from one state to another, and their cost (``collective_model()``).

On one axis of ``n`` chips, from state ``a`` to state ``b`` (``states.py``), with the chip's current piece
of ``B`` bytes:

| from \\ to | ``R`` | ``Sr`` / ``Sc`` | ``P`` |
|---|---|---|---|
| ``R`` | nothing | nothing: each chip keeps its slice | not needed (no op takes partial sums in) |
| ``Sr`` / ``Sc`` | all-gather of ``B``-byte slices | same dim: free; other: all-gather, local slice | - |
| ``P`` | all-reduce (slices of ``B / n``) | reduce-scatter (slices of ``B / n``) | nothing |

(``Sr -> Sc`` is an all-to-all, which ttnn has, but the collective model does not cost yet: it is priced
as the all-gather it can be replaced by, an upper bound.) Slices are whole tiles (a slice smaller than a
tile is one tile: ``page_bytes`` is a tile's bytes). On a view of two axes the tensor changes one axis after
the other; both orders are valid programs and the cheaper is taken (the piece a step moves depends on the
axes already changed). Tensors are DRAM-interleaved on both ends of every collective.

Each collective's ``num_links`` and ``topology`` are the user's to choose in ttnn: a tensor's collectives use
one :class:`CollectiveConfig` (per axis: links ``1..axis.links``, ``linear`` or ``ring`` where the axis
closes), and :func:`transition_cost` is the table the joint model looks up for each config.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations, product
from math import ceil

from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mesh.states import TILE, AxisState, MeshView, TensorState, local_shape
from loom_explorer.model.collective import CollectiveKind, CollectiveOp, FabricTopology, collective_model


@dataclass(frozen=True, slots=True)
class AxisConfig:
    links: int
    topology: FabricTopology


@dataclass(frozen=True, slots=True)
class CollectiveConfig:
    """The ``num_links`` and ``topology`` of a tensor's collectives, per axis of its view."""

    view: str
    axes: tuple[AxisConfig, ...]

    @property
    def label(self) -> str:
        return ",".join(f"{c.links}L/{c.topology.value}" for c in self.axes)


@dataclass(frozen=True, slots=True)
class Collective:
    """One collective of a transition: on which axis, what, how many bytes per device, its cycles."""

    axis: str
    kind: CollectiveKind
    slice_bytes: int
    links: int
    topology: FabricTopology
    latency_cycles: int


@dataclass(frozen=True, slots=True)
class TransitionCost:
    latency_cycles: int
    collectives: tuple[Collective, ...]


def collective_configs(view: MeshView) -> tuple[CollectiveConfig, ...]:
    """Every choice of ``num_links`` and ``topology`` per axis of ``view``."""
    per_axis = [
        [AxisConfig(links, topo) for links in range(1, a.links + 1) for topo in a.topologies] for a in view.axes
    ]
    return tuple(CollectiveConfig(view.name, combo) for combo in product(*per_axis))


@dataclass(frozen=True, slots=True)
class TensorSize:
    """A 2-D tensor: ``rows x cols`` elements of ``element_bytes`` bytes."""

    rows: int
    cols: int
    element_bytes: int = 2

    @property
    def page_bytes(self) -> int:
        return TILE * TILE * self.element_bytes

    def local_bytes(self, view: MeshView, state: TensorState) -> int:
        r, c = local_shape(view, state, self.rows, self.cols)
        return r * c * self.element_bytes


def _step_kind(a: AxisState, b: AxisState) -> CollectiveKind | None | bool:
    """The collective moving one axis from ``a`` to ``b``: a kind, None (free), False (impossible)."""
    if a is b or (a is AxisState.replicated and b is not AxisState.partial):
        return None
    if b is AxisState.partial:
        return False
    if a is AxisState.partial:
        return CollectiveKind.all_reduce if b is AxisState.replicated else CollectiveKind.reduce_scatter
    return CollectiveKind.all_gather  # Sr/Sc -> R, or Sr <-> Sc (gather, then slice)


def collective_cycles(
    mesh: MeshSpec, chip: HardwareSpec, kind: CollectiveKind, chips: int, cfg: AxisConfig, slice_bytes: int, page: int
) -> int:
    op = CollectiveOp(kind, chips, cfg.topology, cfg.links, max(slice_bytes, page), page)
    return collective_model().latency(op, mesh, chip).total_cycles


def transition_cost(
    mesh: MeshSpec,
    chip: HardwareSpec,
    view: MeshView,
    size: TensorSize,
    src: TensorState,
    dst: TensorState,
    config: CollectiveConfig,
    memo: dict[tuple[CollectiveKind, int, AxisConfig, int, int], int] | None = None,
) -> TransitionCost | None:
    """The cheapest order of per-axis collectives from ``src`` to ``dst`` (module docstring); None when no
    sequence of collectives gets there (a partial sum asked for). ``memo``: the cycles of each collective
    priced before on this mesh, by kind, chips, axis config, slice and page bytes (read and filled)."""
    best: TransitionCost | None = None
    for order in permutations(range(len(view.axes))):
        current = list(src.axes)
        steps: list[Collective] = []
        possible = True
        for i in order:
            kind = _step_kind(current[i], dst.axes[i])
            if kind is False:
                possible = False
                break
            piece = size.local_bytes(view, TensorState(view.name, tuple(current)))
            current[i] = dst.axes[i]
            if kind is None or kind is True:
                continue
            axis, cfg = view.axes[i], config.axes[i]
            if kind is CollectiveKind.all_gather:
                slice_bytes = piece
            else:  # the reduction's share per device: a tile at least, whole tiles
                slice_bytes = ceil(piece / axis.chips / size.page_bytes) * size.page_bytes
            key = (kind, axis.chips, cfg, slice_bytes, size.page_bytes)
            cycles = memo.get(key) if memo is not None else None
            if cycles is None:
                cycles = collective_cycles(mesh, chip, kind, axis.chips, cfg, slice_bytes, size.page_bytes)
                if memo is not None:
                    memo[key] = cycles
            steps.append(Collective(axis.name, kind, slice_bytes, cfg.links, cfg.topology, cycles))
        if not possible:
            return None
        cost = TransitionCost(sum(s.latency_cycles for s in steps), tuple(steps))
        if best is None or cost.latency_cycles < best.latency_cycles:
            best = cost
    return best
