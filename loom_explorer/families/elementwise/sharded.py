"""An element-wise op ttnn runs on L1-sharded tensors, as a profiler row shows it, and its cost.

ttnn's element-wise ops take no program config; on a sharded output the op runs on the output's shard grid and
every core computes its own shard (``binary_ng``: ``ttnn/cpp/ttnn/operations/eltwise/binary_ng/device/
binary_ng_program_factory.cpp`` @5eb4ca29 with native L1 sharding, a sharded operand's circular buffer being
the shard itself; the compute kernel still makes one output tile per read-compute-write cycle,
``num_tiles_per_cycle = 1``; ``eltwise/unary/device/unary_sharded_program_factory.cpp`` @048e7258 gives
the compute kernel the whole shard as one block, which it works tile by tile in Dst). So the row's
``memory_config`` (``output_memory_config`` of a unary op) says the whole split:

* ``HEIGHT_SHARDED``: shards of ``[h, W]`` elements, one per core of the grid: the candidate ``R@xy`` with
  ``per_core_R = ceil(h / 32)``;
* ``WIDTH_SHARDED``: shards of ``[H, w]``: ``C@xy`` with ``per_core_C = ceil(w / 32)``;
* ``BLOCK_SHARDED`` (row-major orientation): ``[h, w]`` shards, grid rows down the tensor's rows and grid
  columns across its columns: ``R@y,C@x``.

The config's grid is the shard grid's bounding box; the candidate's is the cores whose shards hold data,
numbered row by row over the box's columns (``grid_x x ceil(used / grid_x)``, or ``used x 1`` on one row;
block sharding: the shards down and across the tensor), the rest of the box idle as on the card. A sharded
operand is read from its own core's L1 (``local``: no transfer); an interleaved one (DRAM or L1-interleaved)
is read from DRAM by each core as it needs it. Blocks are one tile (``block_h = block_w = 1``) and every
streamed operand's buffer 2 tiles, as the interleaved default (``targets/ttnn/defaults.py``). The output
stays in L1: no write-back.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import Field

from loom_explorer.families.elementwise.program import analyse_elementwise
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Axis, Candidate, Comm
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import Placement, Problem
from loom_explorer.targets.ttnn.config import NoProgramConfig
from loom_explorer.targets.ttnn.evaluate import Evaluated, check_grid, evaluate_values

Layout = Literal["height", "width", "block"]
TILE = 32
BUFFER_TILES = 2  # an interleaved operand's circular buffer (tiles), as the interleaved default

_LAYOUT = re.compile(r"memory_layout\s*=\s*(?:TensorMemoryLayout::)?(\w+)")
# the ShardSpec ends before ``;nd_shard_spec`` (newer reports) or closes its MemoryConfig (older reports, which
# print no nd_shard_spec and end the spec on ``mode=...;physical_shard_shape=...``)
_SHARD_SPEC = re.compile(r"shard_spec\s*=\s*ShardSpec\((.*?)\)\s*(?:;\s*nd_shard_spec|\))", re.DOTALL)
_RANGE = re.compile(r"\[\(x=(\d+);y=(\d+)\)\s*-\s*\(x=(\d+);y=(\d+)\)\]")
_SHAPE = re.compile(r"shape=\{\s*(\d+)\s*;\s*(\d+)\s*\}")
_ORIENTATION = re.compile(r"orientation=(?:ShardOrientation::)?(\w+)")
LAYOUTS: dict[str, Layout] = {"HEIGHT_SHARDED": "height", "WIDTH_SHARDED": "width", "BLOCK_SHARDED": "block"}
PLACEMENTS: dict[Layout, Placement] = {
    "height": Placement.l1_height,
    "width": Placement.l1_width,
    "block": Placement.l1_block,
}


class NotSharded(ValueError):
    """A memory config that is not an L1 shard spec the model reads; the message says why."""


class ShardedElementwise(NoProgramConfig):
    """An element-wise op run on a sharded output (module docstring): the ``TtnnConfig`` ``ingest`` reads it as."""

    op: str  # e.g. "ttnn.add"
    layout: Layout
    grid: tuple[int, int]  # the shard grid's bounding box (columns, rows)
    cores: int = Field(ge=1)  # cores of the shard grid
    shard_tiles: tuple[int, int]  # a shard's [rows, columns] in tiles
    sharded: tuple[str, ...]  # the program's tensors held as shards (the output and the sharded inputs)

    @property
    def compute_with_storage_grid_size(self) -> tuple[int, int]:
        return self.grid

    def describe(self) -> str:
        h, w = self.shard_tiles
        return (
            f"{self.op} on {self.layout}-sharded {', '.join(self.sharded)}: {h}x{w}-tile shards on {self.cores} "
            f"cores of a {self.grid[0]}x{self.grid[1]} grid"
        )

    def ttnn_lines(self) -> list[str]:
        return [f"no program config: {self.describe()}"]

    def placements(self) -> dict[str, Placement]:
        return {t: PLACEMENTS[self.layout] for t in self.sharded}


def read_shard_spec(memory_config: str) -> tuple[Layout, tuple[int, int], int, tuple[int, int]]:
    """(layout, bounding grid, cores, shard [rows, columns] in elements) of a profiler ``MemoryConfig(...)``
    cell; NotSharded saying why when it is not an L1 shard spec the model reads."""
    m = _LAYOUT.search(memory_config)
    layout = LAYOUTS.get(m.group(1)) if m else None
    spec = _SHARD_SPEC.search(memory_config)
    if layout is None or spec is None or "BufferType::L1" not in memory_config:
        raise NotSharded("not an L1 height, width or block shard spec")
    ranges = [tuple(int(v) for v in r) for r in _RANGE.findall(spec.group(1))]
    shape = _SHAPE.search(spec.group(1))
    if not ranges or shape is None:
        raise NotSharded("without a core grid or a shard shape")
    orientation = _ORIENTATION.search(spec.group(1))
    if layout == "block" and orientation and orientation.group(1) != "ROW_MAJOR":
        raise NotSharded(f"of {orientation.group(1)} block shards (the model maps ROW_MAJOR block sharding)")
    columns = max(x1 for _, _, x1, _ in ranges) + 1
    rows = max(y1 for _, _, _, y1 in ranges) + 1
    cores = sum((x1 - x0 + 1) * (y1 - y0 + 1) for x0, y0, x1, y1 in ranges)
    return layout, (columns, rows), cores, (int(shape.group(1)), int(shape.group(2)))


def sharded_candidate(problem: Problem, config: ShardedElementwise) -> tuple[Candidate, dict[str, int]]:
    """The candidate and parameter values (but the buffer depths) of ``config`` on ``problem`` (module
    docstring)."""
    st = analyse_elementwise(problem.program)
    r, c = st.dims
    per_core = dict(zip((r, c), config.shard_tiles, strict=True))
    axes: tuple[tuple[Axis, str], ...]
    if config.layout == "height":
        axes = (("xy", r),)
    elif config.layout == "width":
        axes = (("xy", c),)
    else:
        axes = (("y", r), ("x", c))
    comms = tuple((t, Comm.local if t in config.sharded else Comm.dram) for t in st.streamed)
    shares = {d: min(per_core[d], problem.tiles(d)) for _, d in axes}
    used = {d: math.ceil(problem.tiles(d) / shares[d]) for d in shares}  # shards with data
    columns = config.grid[0]
    if config.layout == "block":
        grid = (used[c], used[r])
    else:
        (n,) = used.values()
        grid = (columns, math.ceil(n / columns)) if n > columns else (n, 1)
    values = {"grid_x": grid[0], "grid_y": grid[1], "block_h": 1, "block_w": 1}
    values |= {f"per_core_{d}": share for d, share in shares.items()}
    return Candidate(axes=axes, comms=comms), values


def evaluate_sharded(hw: HardwareSpec, problem: Problem, config: ShardedElementwise) -> Evaluated:
    """The referee's evaluation of ``config`` on ``problem`` (module docstring); ConfigError when the grid does
    not fit the chip."""
    check_grid(hw, config.grid)
    candidate, values = sharded_candidate(problem, config)
    schedule = build_schedule(hw, problem, candidate)
    values |= {p: BUFFER_TILES for p in schedule.param_names if p.endswith("_buffer_depth")}
    return evaluate_values(schedule, values)


def shard_tiles(layout: Layout, shard: tuple[int, int], rows: int, columns: int) -> tuple[int, int]:
    """A shard's [rows, columns] in tiles of a ``rows x columns`` (elements) tensor: a height shard spans
    every column, a width shard every row."""
    h = math.ceil(shard[0] / TILE) if layout != "width" else math.ceil(rows / TILE)
    w = math.ceil(shard[1] / TILE) if layout != "height" else math.ceil(columns / TILE)
    return h, w
