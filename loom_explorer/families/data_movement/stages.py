"""Which stages a data-movement pipeline has: a tiled copy into or out of L1 shards is one stage, with nothing
to fill or drain.

``latency.py`` times a core as ``fill + n * step + drain``: the first block read before the later stages (the
compute, the write) start, ``n`` steps of the slowest stage, the last block written after the earlier stages
end. That holds while there is a later stage for the first read to feed, or an earlier one for the last write to
follow. ttnn's moves between DRAM and L1 shards have one stage only:

* ``ttnn.interleaved_to_sharded`` (tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/data_movement/sharded/
  interleaved_to_sharded/device/interleaved_to_sharded_program_factory.cpp`` @019b681e, ``ttnn_config.py``):
  its reader reads the shard's tiles straight into the circular buffer bound to the output shard and no compute
  or writer kernel moves them on; the reads are the whole of the op, so the first block's read is one of the
  ``n`` steps, not a fill before them;
* ``ttnn.sharded_to_interleaved`` (``.../sharded_to_interleaved/device/`` program factory): its writer writes the
  tiles from the circular buffer bound to the input shard; nothing reads before it, so the last block's write is
  the last of the ``n`` steps, not a drain after them (only its latency, ``L_write``, follows the last write).

So, with no compute (``c_tile = 0``) and tiled operands: ``fill = 0`` when the output is sharded in L1 (there is
no write stage), and the drain is ``L_write`` alone when every source is sharded in L1 (there is no read stage).
Row-major sharded moves are not covered here.
"""

from __future__ import annotations

from loom_explorer.families.data_movement.quantities import DataMovementQuantities


def _tiled(q: DataMovementQuantities) -> bool:
    program = q.problem.program
    return all(program.tensor(t).layout == "tile" for t in (*q.streamed, q.output))


def reads_alone(q: DataMovementQuantities, c_tile: int) -> bool:
    """Whether the reads are the only stage: no compute, tiled, the output sharded in L1 (``fill = 0``)."""
    return c_tile == 0 and _tiled(q) and q.problem.placement(q.output).in_l1


def writes_alone(q: DataMovementQuantities, c_tile: int) -> bool:
    """Whether the writes are the only stage: no compute, tiled, every source sharded in L1 (the drain is the
    write latency alone)."""
    return c_tile == 0 and _tiled(q) and all(q.problem.placement(t).in_l1 for t in q.streamed)
