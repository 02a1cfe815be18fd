"""The work split ttnn's gather factories make (``GatherSplit``): they take no program config, so what the model
reads and costs of a call is how the factory deals the output rows over the cores.

* ``ttnn.embedding`` on interleaved tensors (``ttnn/cpp/ttnn/operations/embedding/device/
  embeddings_tilized_indices_program_factory.cpp`` @0021b0dc): ``split_work_to_cores_aligned(grid, rows,
  FACE_HEIGHT)``, the rows in runs of a multiple of 16 (a tile face's height) per core: the busiest core has
  ``16 * ceil(ceil(rows / cores) / 16)`` rows, on ``ceil(rows / per_core)`` cores;
* ``ttnn.grid_sample`` (``ttnn/cpp/ttnn/operations/pool/grid_sample/device/grid_sample_program_factory.cpp``
  @0150c910): on an interleaved output ``split_work_to_cores(grid, output sticks)`` (a stick holds the
  points of one grid row, ``grid_batching_factor`` of them: the busiest core has ``ceil(sticks / cores)``
  sticks); on a height-sharded output every core of the shard grid computes its shard's sticks
  (``..._program_factory_sharded.cpp``).

The split also says how many output rows' index entries the reader reads before one wait
(``index_rows_per_read``, the model's ``index_block``): a grid sample's reader reads one grid stick per wait,
``grid_batching_factor`` points (``latency.py``); the embedding is costed reading its core's share at once.

The model packs the busiest core's rows onto ``cores`` cores row by row over the grid's columns, as
``targets/ttnn/defaults.py`` does for the element-wise ops.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from loom_explorer.problem import Placement
from loom_explorer.targets.ttnn.config import NoProgramConfig

FACE_HEIGHT = 16


class GatherSplit(NoProgramConfig):
    """What a gather call runs: its op, the factory's split of the output rows, and where its output lives."""

    op: Literal["ttnn.embedding", "ttnn.grid_sample"]
    program: str  # e.g. "interleaved, rows aligned to 16"
    compute_with_storage_grid_size: tuple[int, int]
    rows: int = Field(ge=1)  # output rows (points)
    per_core: int = Field(ge=1)  # output rows of the busiest core
    cores: int = Field(ge=1)  # cores with work
    sharded_output: str | None = None  # the output tensor when it is height-sharded in L1
    index_rows_per_read: int = Field(1, ge=1)  # output rows whose index one (waited) read brings

    def describe(self) -> str:
        gx, gy = self.compute_with_storage_grid_size
        return (
            f"{self.op} ({self.program}): {self.rows} rows over {self.cores} of {gx}x{gy} cores, "
            f"{self.per_core} per core"
        )

    @property
    def packed_grid(self) -> tuple[int, int]:
        """The grid the model packs ``cores`` onto: whole rows of the grid's columns (module docstring)."""
        gx = self.compute_with_storage_grid_size[0]
        return (gx, math.ceil(self.cores / gx)) if self.cores > gx else (self.cores, 1)

    def placements(self) -> dict[str, Placement]:
        return {self.sharded_output: Placement.l1_height} if self.sharded_output else {}


def embedding_split(rows: int, grid: tuple[int, int]) -> GatherSplit:
    """``ttnn.embedding``'s split of ``rows`` over ``grid`` (module docstring)."""
    per_core = FACE_HEIGHT * math.ceil(math.ceil(rows / (grid[0] * grid[1])) / FACE_HEIGHT)
    return GatherSplit(
        op="ttnn.embedding",
        program="interleaved, rows in runs of 16 per core",
        compute_with_storage_grid_size=grid,
        rows=rows,
        per_core=per_core,
        cores=math.ceil(rows / per_core),
        index_rows_per_read=per_core,
    )


def grid_sample_split(
    rows: int,
    grid: tuple[int, int],
    shard_rows: int | None = None,
    output: str | None = None,
    points_per_stick: int = 1,
) -> GatherSplit:
    """``ttnn.grid_sample``'s split of ``rows`` output points, ``points_per_stick`` to a grid row, over
    ``grid``: ``split_work_to_cores`` of the grid rows on an interleaved output, ``shard_rows`` points per core
    on a height-sharded one (module docstring)."""
    if rows % points_per_stick:
        raise ValueError(f"{rows} points are not whole grid rows of {points_per_stick}")
    if shard_rows is None:
        per_core = math.ceil(rows // points_per_stick / (grid[0] * grid[1])) * points_per_stick
        program = "interleaved output, split_work_to_cores"
    else:
        per_core = shard_rows
        program = "height-sharded output, one shard per core"
    return GatherSplit(
        op="ttnn.grid_sample",
        program=program,
        compute_with_storage_grid_size=grid,
        rows=rows,
        per_core=per_core,
        cores=math.ceil(rows / per_core),
        sharded_output=output if shard_rows is not None else None,
        index_rows_per_read=points_per_stick,
    )
