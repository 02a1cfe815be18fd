"""ttnn's interleaved-to-sharded reader of row-major sticks, and the chips on which it waits for every stick.

``ttnn.interleaved_to_sharded`` of a row-major tensor (``InterleavedToSharded[Partial]DeviceOperation``) runs
``interleaved_to_sharded_program_factory.cpp`` (tenstorrent/tt-metal
``ttnn/cpp/ttnn/operations/data_movement/sharded/interleaved_to_sharded/device/``, the 2025 versions the
shipped captures ran), whose reader ``reader_unary_stick_layout_sharded_blocks_interleaved_start_id.cpp``
(``.../sharded/device/kernels/dataflow/`` @064aeec1) has two paths:

* ``aligned``: every stick of the core's shard read with ``noc_async_read`` straight into the shard, one
  ``noc_async_read_barrier()`` at the end: the sticks stream (the model's page rate, ``pages.py``);
* unaligned: each stick read into a scratch buffer, ``noc_async_read_barrier()``, then copied from the scratch
  into the shard by a local NoC read: **every stick waits for its DRAM round trip** (the local copy of one
  stick overlaps the next stick's read, which the next barrier waits for anyway).

The factory picks ``aligned = src_is_dram ? (curr_idx_w % dram_alignment == 0 && padded_offset_bytes %
dram_alignment == 0) : true`` and then ``aligned = aligned and !is_blackhole`` ("for blackhole ... always
enforce unaligned kernel call"). So on Blackhole every row-major stick is waited for; on Wormhole a height
shard of whole rows (offset 0) takes the aligned path and streams.

The program option ``to_shard`` (``kernels/copy_rows.py``; ``accuracy.py`` sets it on a row-major
``InterleavedToSharded`` row) says the copy is that reader's: on a Blackhole chip its row-major source is then
waited page by page (``barriers.py``), each stick costing ``L_read + p / r(p)`` (``pages.py``), about one DRAM
read latency. An L1-interleaved source (also unaligned on Blackhole) is read with no per-core cost in this
family (``latency.py``), so the option changes nothing for it. Not modelled: the width offsets of a width- or
block-sharded output on Wormhole (costed as aligned).
"""

from __future__ import annotations

from loom_explorer.families.data_movement.program import DataMovement
from loom_explorer.hardware.schema import Arch
from loom_explorer.problem import Problem

TO_SHARD = "to_shard"  # the program option: the rows are read by ttnn's interleaved-to-sharded reader


def waits_each_stick(problem: Problem, st: DataMovement, tensor: str, arch: Arch | None) -> bool:
    """Whether ``tensor``'s sticks are read one at a time with a barrier after each by the interleaved-to-sharded
    reader (module docstring): a row-major source of a ``to_shard`` copy on a Blackhole chip."""
    program = problem.program
    return (
        arch is Arch.blackhole
        and TO_SHARD in program.options
        and problem.has_option(TO_SHARD)
        and tensor in st.streamed
        and program.tensor(tensor).layout == "row_major"
    )
