"""How TTNN's reader kernel fetches a row reduction's DRAM input when the columns are split over cores: its
interleaved group norm (``ttnn.group_norm`` with ``GroupNormMultiCoreProgramConfig``), the one TTNN op that
reads a DRAM-interleaved input whose reduced dimension is spread over a multicast group of cores.

The reader (``ttnn/cpp/ttnn/operations/normalization/groupnorm/device/kernels/dataflow/
reader_mcast_sender_unary_gn.cpp`` and ``reader_mcast_receiver_unary_gn.cpp`` @
6dbf7d2b75c2498517f6628c11fa3ad0c9fb7900) does not hold a block of the input in L1 across the passes: for
every group it streams the core's tiles from DRAM once per pass over them (``num_reads_of_input = 3``: the
mean's pass, the variance's pass and the final normalising pass), and in the last pass it also reads back
the output tiles it wrote (``cb_reread_out``: groups that share a tile add into it). Every tile is one
``noc_async_read_tile`` followed by ``noc_async_read_barrier``, so each costs a full DRAM round trip before
the next is issued; the block is pushed to the compute kernel only once all its tiles are in.

For a rows input ``X`` read from DRAM, a block of ``B`` tiles of ``b_X`` bytes (``L_read``, ``r_core``: the
chip file's DRAM read latency and one core's read rate):

    reads_X = p * B * (L_read + ceil(b_X / r_core))          one round trip a tile, p passes
    reread  = B * (L_read + ceil(b_Y / r_core))              the output Y, read back in the last pass

    p = 3                                                    TTNN's ``num_reads_of_input``

against ``ceil(B * b_X / r_core) + L_read`` (one latency a block, the reads in flight together) of a
reader that streams a block once. Only for the group norm program (the shipped ``groupnorm`` kernel, up to
tensor names: ``signature.py``) on ``KernelTarget.ttnn``: TTNN has no other op on this split, and the
exported TT-Lang kernels read each block once.

The same readers (and the sharded ones, ``reader_mcast_sender_unary_sharded_gn_v2.cpp``) gather each
reduction's partials on the first core of the multicast group one core at a time: for each of the ``g - 1``
other cores a ``noc_async_read_one_packet`` of its partial (one datum) and a ``noc_async_read_barrier``, so
the gather is ``g - 1`` NoC round trips, not one transfer of all the partials (``serial_gather``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from loom_explorer.families.row_reduction.quantities import RowReductionQuantities
from loom_explorer.families.row_reduction.signature import is_group_norm
from loom_explorer.model.dram_reads import reads_dram
from loom_explorer.model.expr import Expr, mul, total
from loom_explorer.problem import KernelTarget

INPUT_READS = 3  # the reader's num_reads_of_input: the mean's, the variance's and the normalising pass


@dataclass(frozen=True, slots=True)
class TileRoundTripReader:
    """TTNN's split-column interleaved reader (module docstring): which inputs it re-reads per pass, how
    many passes, and the output it reads back."""

    inputs: tuple[str, ...]  # rows inputs read from DRAM
    passes: int  # reads of each of them per block
    reread: tuple[str, ...]  # outputs read back once per block (DRAM outputs)

    def tile_cycles(self, q: RowReductionQuantities, tensor: str) -> int:
        """``L_read + ceil(b / r_core)``: one tile's read, waited for before the next."""
        dram = q.hw.dram
        return dram.read_latency_cycles + math.ceil(q.tile_bytes(tensor) / dram.core_read_bytes_per_cycle)

    def input_cycles(self, q: RowReductionQuantities, tensor: str) -> Expr:
        """``p * B * (L_read + ceil(b_X / r_core))`` for one block of ``tensor``."""
        return mul(self.passes, q.tiles(tensor), self.tile_cycles(q, tensor))

    def reread_cycles(self, q: RowReductionQuantities) -> Expr:
        """The outputs' tiles of one block read back, one round trip each."""
        return total(mul(q.tiles(t), self.tile_cycles(q, t)) for t in self.reread)


def tile_round_trip_reader(q: RowReductionQuantities) -> TileRoundTripReader | None:
    """The reader of module docstring when ``q`` is TTNN's (``KernelTarget.ttnn``) group norm, splits the
    columns over a gather axis and reads a rows input from DRAM; None otherwise (the model's streaming
    reader)."""
    if q.problem.target is not KernelTarget.ttnn or q.candidate.gather_axis is None:
        return None
    inputs = tuple(t for t in q.st.full if reads_dram(q, t))
    if not inputs or not is_group_norm(q.problem.program):
        return None
    return TileRoundTripReader(inputs=inputs, passes=INPUT_READS, reread=q.dram_outputs)


def serial_gather(q: RowReductionQuantities) -> bool:
    """Whether the partials are gathered one core at a time, a round trip each (module docstring): TTNN's group
    norm (``KernelTarget.ttnn``) with its columns split over a gather axis, sharded or interleaved."""
    return (
        q.problem.target is KernelTarget.ttnn
        and q.candidate.gather_axis is not None
        and is_group_norm(q.problem.program)
    )
