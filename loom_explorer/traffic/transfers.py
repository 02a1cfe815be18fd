"""Turn a concrete schedule into its NoC transfers.

Each flow of the schedule (``model/traffic.py``) is expanded over the cores the schedule uses, in the
hardware file's NoC coordinates: core (column i, row j) of the grid used is compute core (i, j) (the
top-left ``grid_x`` x ``grid_y`` cores; a 1-D layout fills ``grid_x`` columns row by row).

* ``dram_read``: every sender reads its bytes from all ``C`` DRAM channels, an equal share from each
  (bytes split as evenly as integers allow), through the channel's endpoint (``noc.dram_endpoints``);
* ``dram_write``: the same towards the channels;
* ``multicast``: the sender (first core of its row / column / head group, or the origin) to the other cores
  of that row / column / group / the whole grid used;
* ``gather``: every core but the first along the axis sends to the first (on ``xy``: to core 0, or to the
  first of its group of ``group`` consecutive cores when the flow is grouped: flash-decoding);
* senders ``group_heads``: the first core of each group of ``group`` consecutive cores of a 1-D layout.

The slowest core's counts are used for every core, as in the latency model.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.expr import evaluate
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.noc.graph import Coord, core_coord, dram_endpoints

GridPos = tuple[int, int]  # (column, row) in the grid used


@dataclass(frozen=True, slots=True)
class Transfer:
    """``count`` repetitions of ``bytes`` from ``src`` to every one of ``dsts`` on ``noc`` (one packet
    stream; a multicast when there are several destinations). ``channel`` is the DRAM channel of a DRAM
    read or write."""

    flow: str
    tensor: str
    kind: str
    noc: int
    src: Coord
    dsts: tuple[Coord, ...]
    bytes: int
    count: int
    channel: int | None = None
    format_of: str | None = None  # as TrafficFlow.format_of

    @property
    def format_tensor(self) -> str:
        return self.format_of or self.tensor

    @property
    def bytes_sent(self) -> int:
        return self.bytes * self.count

    @property
    def bytes_received(self) -> int:
        return self.bytes * self.count * len(self.dsts)


def used_cores(schedule: SymbolicSchedule, values: dict[str, int]) -> list[GridPos]:
    gx, gy = values["grid_x"], values["grid_y"]
    if schedule.candidate.is_1d:
        u = evaluate(schedule.cores_used, values)
        return [(k % gx, k // gx) for k in range(u)]
    return [(i, j) for j in range(gy) for i in range(gx)]


def _group_of(pos: GridPos, axis: str | None, group: int | None) -> int:
    """Index of the head group a core belongs to along ``axis`` (0 when the flow is not grouped)."""
    if axis is None or group is None:
        return 0
    return pos[0 if axis == "x" else 1] // group


def _senders(flow: TrafficFlow, cores: list[GridPos], group: int | None) -> list[GridPos]:
    """Who reads (and multicasts): every core, or the first core along x (of each row), along y (of each
    column) or both (the origin) -- first of its head group along a grouped axis."""
    if flow.senders == "all":
        return cores
    if flow.senders == "group_heads":
        return cores[:: group or 1]
    axes = {"row_heads": (0,), "col_heads": (1,), "origin": (0, 1)}[flow.senders]
    grouped = {"x": 0, "y": 1}.get(flow.group_axis or "")

    def first(c: GridPos, a: int) -> bool:
        return c[a] % group == 0 if a == grouped and group else c[a] == 0

    return [c for c in cores if all(first(c, a) for a in axes)]


def _receivers(flow: TrafficFlow, sender: GridPos, cores: list[GridPos], group: int | None) -> list[GridPos]:
    i0, j0 = sender
    same = [c for c in cores if _group_of(c, flow.group_axis, group) == _group_of(sender, flow.group_axis, group)]
    if flow.axis == "x":
        return [(i, j) for i, j in same if j == j0 and i != i0]
    if flow.axis == "y":
        return [(i, j) for i, j in same if i == i0 and j != j0]
    return [c for c in same if c != sender]


def _shares(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if k < total % parts else 0) for k in range(parts)]


def schedule_transfers(hw: HardwareSpec, schedule: SymbolicSchedule, values: dict[str, int]) -> list[Transfer]:
    """Every transfer of the schedule at ``values`` (module docstring)."""
    cores = used_cores(schedule, values)
    eps = dram_endpoints(hw)

    def at(pos: GridPos) -> Coord:
        return core_coord(hw, *pos)

    out: list[Transfer] = []
    for f in schedule.traffic:
        size, count = evaluate(f.bytes, values), evaluate(f.count, values)
        if size == 0 or count == 0:
            continue
        group = evaluate(f.group, values) if f.group is not None else None
        if f.kind == "gather":
            for index, (i, j) in enumerate(cores):
                head = {"x": (0, j), "y": (i, 0)}.get(f.axis or "", cores[index - index % group] if group else (0, 0))
                if (i, j) != head:
                    out.append(
                        Transfer(
                            f.name, f.tensor, f.kind, f.noc, at((i, j)), (at(head),), size, count, format_of=f.format_of
                        )
                    )
            continue
        for s in _senders(f, cores, group):
            if f.kind == "multicast":
                rx = _receivers(f, s, cores, group)
                if rx:
                    out.append(
                        Transfer(
                            f.name,
                            f.tensor,
                            f.kind,
                            f.noc,
                            at(s),
                            tuple(at(r) for r in rx),
                            size,
                            count,
                            format_of=f.format_of,
                        )
                    )
                continue
            for ch, share in enumerate(_shares(size, len(eps))):
                if share == 0:
                    continue
                src, dst = (eps[ch], at(s)) if f.kind == "dram_read" else (at(s), eps[ch])
                out.append(Transfer(f.name, f.tensor, f.kind, f.noc, src, (dst,), share, count, ch, f.format_of))
    return out
