"""A schedule's traffic counted the way tt-lang-sim counts it: tiles read from and written to DRAM per
tensor, and tiles each core receives over pipes (multicasts and split-K gathers).

The counts come from the model's transfers (:func:`~loom_explorer.traffic.transfers.schedule_transfers`),
bytes divided by the bytes of one tile of the tensor's format (of the accumulator's format for partial
sums), so that a simulated kernel that moves anything else disagrees with the model.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from loom_explorer.hardware.schema import DataFormat, HardwareSpec
from loom_explorer.problem import Problem
from loom_explorer.traffic.transfers import GridPos, Transfer


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
    grid_pos = {(hw.grid.noc_x[i], hw.grid.noc_y[j]): (i, j)
                for i in range(hw.grid.columns) for j in range(hw.grid.rows)}
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

    return TileTraffic(dram_read_tiles=in_tiles(read, "reads"), dram_written_tiles=in_tiles(written, "writes"),
                       pipe_received_tiles=dict(received))
