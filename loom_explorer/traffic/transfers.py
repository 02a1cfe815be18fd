"""Turn a concrete schedule into its NoC transfers.

Each flow of the schedule (``model/traffic.py``) is expanded over the cores the schedule uses, in the
hardware file's NoC coordinates: core (column i, row j) of the grid used is compute core (i, j) (the
top-left ``grid_x`` x ``grid_y`` cores; a 1-D layout fills ``grid_x`` columns row by row).

* ``dram_read``: every sender reads its bytes from all ``C`` DRAM channels, an equal share from each
  (bytes split as evenly as integers allow), through the channel's endpoint (``noc.dram_endpoints``);
* ``dram_write``: the same towards the channels;
* ``multicast``: the sender (first core of its row / column / head group, or the origin) to the other cores
  of that row / column / group / the whole grid used;
* ``gather``: every core but the first along the axis sends to the first.

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


def _senders(flow: TrafficFlow, cores: list[GridPos], group: int | None) -> list[GridPos]:
    if flow.senders == "all":
        return cores
    if flow.senders == "origin":
        return [(0, 0)]
    along = 0 if flow.senders == "row_heads" else 1  # heads: first core of each row (column) or head group
    return [c for c in cores if (c[along] == 0 if group is None else c[along] % group == 0)]


def _receivers(flow: TrafficFlow, sender: GridPos, cores: list[GridPos], group: int | None) -> list[GridPos]:
    i0, j0 = sender
    if flow.axis == "x":
        return [(i, j) for i, j in cores if j == j0 and i != i0 and (group is None or i // group == i0 // group)]
    if flow.axis == "y":
        return [(i, j) for i, j in cores if i == i0 and j != j0 and (group is None or j // group == j0 // group)]
    return [c for c in cores if c != sender]


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
            heads = {(0, j) if f.axis == "x" else (i, 0) for i, j in cores}
            for i, j in cores:
                head = (0, j) if f.axis == "x" else (i, 0)
                if (i, j) not in heads:
                    out.append(Transfer(f.name, f.tensor, f.kind, f.noc, at((i, j)), (at(head),), size, count))
            continue
        for s in _senders(f, cores, group):
            if f.kind == "multicast":
                rx = _receivers(f, s, cores, group)
                if rx:
                    out.append(Transfer(f.name, f.tensor, f.kind, f.noc, at(s), tuple(at(r) for r in rx), size,
                                        count))
                continue
            for ch, share in enumerate(_shares(size, len(eps))):
                if share == 0:
                    continue
                src, dst = (eps[ch], at(s)) if f.kind == "dram_read" else (at(s), eps[ch])
                out.append(Transfer(f.name, f.tensor, f.kind, f.noc, src, (dst,), share, count, ch))
    return out
