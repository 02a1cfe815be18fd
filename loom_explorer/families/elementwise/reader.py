"""The element-wise family's reader thread: one step's reads of every streamed input, as ttnn's element-wise
readers issue them (``quantities.py`` for the notation).

ttnn's interleaved element-wise readers issue the reads of every operand a step needs and then wait on one
read barrier before pushing them all to compute:

* ``binary_ng``: ``kernels_ng/dataflow/reader_interleaved_no_bcast.cpp`` @068a02f5 (and the row-broadcast
  reader ``reader_interleaved_row_bcast.cpp`` @39626323) read a tile of ``a`` and a tile of ``b``, then one
  ``noc.async_read_barrier()`` per output tile;
* the older binary op: ``eltwise/binary/device/kernels/dataflow/reader_binary_interleaved_start_id.cpp``
  @01656bf7, the same two reads then one barrier per tile;
* the rotary embedding: ``rotary_embedding_llama/device/kernels/dataflow/
  reader_rotary_embedding_llama_interleaved_start_id.cpp`` @06fb9344 reads a row of ``x``, ``sin`` and
  ``cos`` tiles, then one barrier;
* the unary op reads its one input (``reader_unary_interleaved_start_id.cpp`` @0469be37): one read, one
  barrier, the formula below with one term.

So the reads of a step overlap one another in flight: the step waits for the sum of their transfers
through the core's read port and one round trip, the longest of theirs, not one round trip per input.
Over the inputs ``G`` each core reads itself (``Comm.dram``: from DRAM or the L1 banks)

    reads = sum_{X in G} ceil(B_X / r_core) + max_{X in G} L_read(depth_X)
          + sum_{X multicast} (read_X + mcast_X)          (the sender reads, then multicasts, as before)

and of these the part compute waits for when an input's buffer holds one block (``depth_X = 1``):

    exposed = sum_{X in G} [depth_X = 1] ceil(B_X / r_core) + max_{X in G} [depth_X = 1] L_read(depth_X)
            + sum_{X multicast} [depth_X = 1] (read_X + mcast_X)

A scalar operand is not streamed: ttnn's ``binary_ng`` builds its tile once per core on a data-movement
RISC-V, word by word, before the first output tile (the ``scalar`` attribute: ``writer_interleaved_scalar.cpp``
@00635679, ``fill_with_val_bfloat16``, 512 32-bit stores for a bfloat16 tile; a one-element tensor operand:
``reader_interleaved_scalar_bcast.cpp`` reads its tile, then ``fill_tile_with_first_element_bfloat16`` stores
the first element over the whole tile, ``fill_tile_utils.hpp`` @04f0123e). Such a fill costs

    scalar_fill = sum_{scalar X} ceil(b_X / 4) * s_store        (s_store = compute.riscv_l1_store_cycles)

cycles before compute can start (0 when the hardware file gives no store rate). It joins the scalar's read
in ``fill``: the one-element-tensor path's order (read, fill, then the first tiles); for the ``scalar``
attribute, whose tile is filled on the writer while the reader reads the first tiles and which reads nothing
from DRAM, this is an upper bound by the scalar's read and the overlap.

A one-input reader (``unary``) is what ``model/latency.py::one_reader_step`` costs. The TT-Lang writer's
kernels (``ttlang.py``) wait on each copy before issuing the next, so for a kernel of ``k`` inputs read
per step the model is short of them by ``(k - 1) * L_read`` per step (``docs/elementwise.md`` says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loom_explorer.families.elementwise.quantities import ElementwiseQuantities
from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.expr import Expr, const, maximum, mul, total
from loom_explorer.model.latency import (
    multicast_cycles,
    read_cycles,
    read_latency_cycles,
    read_transfer_cycles,
    single_buffered,
)


@dataclass(frozen=True, slots=True)
class StepReads:
    """One step's reads on the slowest core: ``cycles`` (``reads``) and ``exposed`` (the part compute waits
    for behind single-buffered inputs), in cycles (module docstring)."""

    cycles: Expr
    exposed: Expr


def _longest(latencies: Sequence[Expr]) -> Expr:
    return maximum(*latencies) if latencies else const(0)


def step_reads(q: ElementwiseQuantities, tensors: Sequence[str]) -> StepReads:
    """The reads of ``tensors`` (the inputs streamed every step) in one step: module docstring."""
    own = [t for t in tensors if q.candidate.comm(t) is Comm.dram]
    sent = [t for t in tensors if t not in own]
    sent_dm = {t: read_cycles(q, t) + multicast_cycles(q, t) for t in sent}
    cycles = (
        total(read_transfer_cycles(q, t) for t in own)
        + _longest([read_latency_cycles(q, t) for t in own])
        + total(sent_dm.values())
    )
    exposed = (
        total(mul(single_buffered(q, t), read_transfer_cycles(q, t)) for t in own)
        + _longest([mul(single_buffered(q, t), read_latency_cycles(q, t)) for t in own])
        + total(mul(single_buffered(q, t), sent_dm[t]) for t in sent)
    )
    return StepReads(cycles, exposed)


def scalar_fill_cycles(q: ElementwiseQuantities) -> int:
    """``scalar_fill``: each scalar's tile stored word by word by a data-movement RISC-V (module docstring)."""
    store = q.hw.compute.riscv_l1_store_cycles
    if store is None:
        return 0
    return sum(-(-q.tile_bytes(t) // 4) * store for t in q.st.scalars)
