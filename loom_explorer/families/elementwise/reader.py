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
