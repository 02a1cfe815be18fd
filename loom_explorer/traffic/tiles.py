"""A schedule's traffic counted the way tt-lang-sim counts it: tiles read from and written to DRAM per
tensor, and tiles each core receives over pipes (multicasts and split-K gathers).

The counts come from the model's transfers (:func:`~loom_explorer.traffic.transfers.schedule_transfers`),
bytes divided by the bytes of one tile of the tensor's format (of the accumulator's format for partial
sums), so that a simulated kernel that moves anything else disagrees with the model.

The transfers repeat every core's flow at the slowest core's count, as the latency does (the slowest core
bounds the time). The tiles moved are each core's own work: :func:`schedule_tile_traffic` gives each working
core's transfers of a flow that core's own repetitions where the family knows them
(``ModelFamily.core_flow_counts``, e.g. attention's causal tasks of different lengths or uneven runs of key
chunks), so that
``sum over cores c of count_c * bytes`` is what is counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from loom_explorer.hardware.schema import DataFormat, HardwareSpec
from loom_explorer.model.families import model_family
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.noc.graph import core_coord
from loom_explorer.problem import Problem
from loom_explorer.traffic.transfers import GridPos, Transfer, schedule_transfers, used_cores


@dataclass(frozen=True, slots=True)
class TileTraffic:
    """Tiles moved: DRAM reads/writes per tensor, pipe tiles received per core (grid column, row)."""

    dram_read_tiles: dict[str, int] = field(default_factory=dict)
    dram_written_tiles: dict[str, int] = field(default_factory=dict)
    pipe_received_tiles: dict[GridPos, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "dram_read_tiles": dict(sorted(self.dram_read_tiles.items())),
            "dram_written_tiles": dict(sorted(self.dram_written_tiles.items())),
            "pipe_received_tiles": {f"{x},{y}": n for (x, y), n in sorted(self.pipe_received_tiles.items())},
        }


def _exact_tiles(nbytes: int, tile_bytes: int, what: str) -> int:
    tiles, rest = divmod(nbytes, tile_bytes)
    if rest:
        raise ValueError(f"{what}: {nbytes:,} B is not a whole number of {tile_bytes:,}-byte tiles")
    return tiles


def tile_traffic(hw: HardwareSpec, problem: Problem, transfers: list[Transfer]) -> TileTraffic:
    """Count ``transfers`` in tiles (module docstring)."""
    grid_pos = {
        (hw.grid.noc_x[i], hw.grid.noc_y[j]): (i, j) for i in range(hw.grid.columns) for j in range(hw.grid.rows)
    }
    read: dict[str, int] = defaultdict(int)
    written: dict[str, int] = defaultdict(int)
    received: dict[GridPos, int] = defaultdict(int)
    formats: dict[str, DataFormat] = {}
    for t in transfers:
        fmt = problem.data_format(t.format_tensor)
        if t.kind == "gather" and problem.fp32_acc:
            fmt = DataFormat.float32
        nbytes = t.bytes * t.count
        if t.kind in ("dram_read", "dram_write"):
            (read if t.kind == "dram_read" else written)[t.tensor] += nbytes
            formats[t.tensor] = fmt
        else:
            tiles = _exact_tiles(nbytes, hw.tile_bytes[fmt], f"{t.flow} to each receiver")
            for d in t.dsts:
                received[grid_pos[d]] += tiles

    def in_tiles(totals: dict[str, int], what: str) -> dict[str, int]:
        return {k: _exact_tiles(v, hw.tile_bytes[formats[k]], f"{k} DRAM {what}") for k, v in totals.items()}

    return TileTraffic(
        dram_read_tiles=in_tiles(read, "reads"),
        dram_written_tiles=in_tiles(written, "writes"),
        pipe_received_tiles=dict(received),
    )


def exact_transfers(hw: HardwareSpec, schedule: SymbolicSchedule, values: Mapping[str, int]) -> list[Transfer]:
    """The schedule's transfers with each working core's own repetitions of the flows whose count differs
    between cores (``ModelFamily.core_flow_counts``): a DRAM read counted at the core it reaches, a write at the
    core it leaves (module docstring)."""
    transfers = schedule_transfers(hw, schedule, dict(values))
    own_counts = model_family(schedule.problem.program, schedule.candidate).core_flow_counts
    counts = own_counts(schedule, values) if own_counts is not None else {}
    if not counts:
        return transfers
    index = {core_coord(hw, *pos): n for n, pos in enumerate(used_cores(schedule, dict(values)))}
    out = []
    for t in transfers:
        own = counts.get(t.flow)
        if own is not None and t.kind in ("dram_read", "dram_write"):
            core = t.dsts[0] if t.kind == "dram_read" else t.src
            t = replace(t, count=own[index[core]])
        out.append(t)
    return out


def schedule_tile_traffic(hw: HardwareSpec, schedule: SymbolicSchedule, values: Mapping[str, int]) -> TileTraffic:
    """The tiles ``schedule`` moves at ``values``, every core at its own work (module docstring)."""
    return tile_traffic(hw, schedule.problem, exact_transfers(hw, schedule, values))
