"""The sharded split of a data-movement op as a config the core reads (``targets/ttnn/config.py::TtnnConfig``):
which operands are height-sharded in L1 and over how many cores (``accuracy.py`` reads it from a row;
``ttnn.py::evaluate_sharded`` costs it).

A height-sharded tensor keeps ``ceil(rows / cores)`` rows (tile rows of a tiled kernel, single rows of
``copy_rows``) on each of ``cores`` cores; ttnn's sharded program factories (``interleaved_to_sharded``,
``sharded_to_interleaved``, ``move`` and ``tilize``/``untilize`` of sharded tensors, ``padded_slice``,
``slice_write``) work on the core that holds each shard: ``interleaved_to_sharded_program_factory.cpp``
(tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/data_movement/sharded/interleaved_to_sharded/device/``
@019b681e) runs its reader and writer on the shard grid's cores, each reading its ``num_units_per_shard``
pages into a buffer bound to its shard. The other sharded factories are read as working alike (not checked
one by one). The model reads that as the rows on a 1-D layout,
``per_core_<rows> = ceil(rows / cores)``, the sharded operands in L1 (no DRAM read or write for them); the block
is ``ttnn.py::evaluate_sharded``'s. A block- or width-sharded operand is costed as that same split over the
same cores: each core holds ``1/cores`` of the tensor either way; a block shard's narrower row-major pages are
not modelled (an approximation, said in the row's note).
"""

from __future__ import annotations

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from loom_explorer.problem import Placement
from loom_explorer.targets.ttnn.config import NoProgramConfig


class ShardedSplit(NoProgramConfig):
    """What ttnn runs for a data-movement op with a height-sharded operand (module docstring)."""

    op: str  # the profiler op, e.g. "InterleavedToShardedDeviceOperation"
    cores: int = Field(ge=1)  # the row's CORE COUNT: the cores holding a shard
    sharded: tuple[str, ...]  # the program's tensors that are sharded in L1
    layouts: tuple[Placement, ...] = ()  # each one's sharding (default: height), as ``sharded`` orders them
    # rows one block moves when the op's factory fixes it (at most; ``ttnn.py::evaluate_sharded``), None: its own
    block_rows: int | None = Field(default=None, ge=1)
    # the tiles flattened over the cores, one tile a block (a reader that pushes tile by tile, ``ttnn.py``)
    flat: bool = False

    @model_serializer(mode="wrap")
    def _without_default_block(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        """Dumped without ``block_rows`` when unset, nor ``flat`` when off: a split that sets neither reads as
        before."""
        data: dict[str, object] = handler(self)
        if self.block_rows is None:
            data.pop("block_rows", None)
        if not self.flat:
            data.pop("flat", None)
        return data

    @property
    def compute_with_storage_grid_size(self) -> tuple[int, int]:
        return (self.cores, 1)

    def ttnn_lines(self) -> list[str]:
        held = ", ".join(f"{t} {p.value}" for t, p in self.placements().items())
        return [f"no program config: {held} over {self.cores} cores"]

    def placements(self) -> dict[str, Placement]:
        layouts = self.layouts or (Placement.l1_height,) * len(self.sharded)
        return dict(zip(self.sharded, layouts, strict=True))
