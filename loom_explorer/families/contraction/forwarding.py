"""``minimal_matmul``'s inputs passed from core to core (``FORWARDED``), in place of a multicast.

tt-metal's ``ttnn.experimental.minimal_matmul`` (``ttnn/cpp/ttnn/operations/experimental/minimal_matmul/
device/kernels/dm_in0_sender.cpp`` and ``dm_in1_sender_out.cpp`` @f3198dc5, core order from
``minimal_matmul_program_factory.cpp`` @856eb4af: ``build_core_order_for_axis``) does not multicast its
input blocks. The first core of each line (the "injector") reads a block from DRAM tile by tile and waits
for it (``read_in0_block_sync``); every other core asks the core before it for the block (a semaphore
increment), waits until it has been written into its own L1, and then, unless it is the last core of the
line (the "sink"), waits for the next core to ask and writes the block on to it with one unicast
(``noc_async_write``) and a semaphore set. So a block reaches the ``n``-th core after ``n - 1`` such hops,
and each hop is one block's unicast plus its semaphore round trip:

    hop_X   = ceil(B_X / w_unicast) + o_hs               (o_hs = noc.multicast_handshake_cycles, the
                                                         semaphore round trip the multicast model prices)
    first_X = read_X + hops_X * hop_X                    (the last core of the line holds its first block)
    s_X     = max(read_X, hop_X) + hop_X                 (one block through one core of the line)

``hops_X`` is the multicast's (``GridQuantities.mcast_hops``: the line's cores less one). One data-movement
core does both halves of a core's part, one after the other: the injector reads a block and only then
passes it on (``read_in0_block_sync`` waits for the read; on Blackhole the write is flushed before the
semaphore set, on Wormhole the core issues the whole block's packets before it goes on), and a core inside
the line asks for the next block only once it has passed the current one on, so the block before it must
then cross one hop to it first. Each core keeps two blocks of each input (``double_buffer_factor = 2`` in
the program factory), so the cores of a line work on successive blocks at once: past the first block a
line delivers one block per ``s_X``, ``read_X`` or ``hop_X`` (the injector's read, or a receiving core's
incoming block) followed by ``hop_X`` (passing it on). Against the multicast (``mcast_X``, a sender
overlapping the next read with the current multicast) this costs a hop per step, and in the fill ``n - 1``
hops where a multicast reaches every core in one transfer: most of the op when a core has only a few K
steps (M of one tile).
"""

from __future__ import annotations

from collections.abc import Sequence

from loom_explorer.mapping.candidate import Tag
from loom_explorer.model.expr import Expr, ceil_rate, const, maximum, mul, total
from loom_explorer.model.latency import block_bytes, chip_read_cycles, read_cycles, single_buffered
from loom_explorer.model.quantities import GridQuantities

FORWARDED = Tag("forwarded", "multicast inputs passed from core to core along the line instead (minimal_matmul)")


def forwarded(q: GridQuantities) -> bool:
    """Whether ``q``'s candidate passes its multicast inputs core to core (``FORWARDED``)."""
    return q.candidate.has_tag(FORWARDED.name)


def hop_cycles(q: GridQuantities, tensor: str) -> Expr:
    """``hop_X = ceil(B_X / w_unicast) + o_hs`` for an input passed along a line, 0 for one every core reads
    itself."""
    if q.candidate.comm(tensor).axis is None:
        return const(0)
    noc = q.hw.noc
    return ceil_rate(block_bytes(q, tensor), noc.unicast_bytes_per_cycle) + noc.multicast_handshake_cycles


def first_block_cycles(q: GridQuantities, tensor: str) -> Expr:
    """``first_X = read_X + hops_X * hop_X``: until the line's last core holds its first block of ``tensor``."""
    if q.candidate.comm(tensor).axis is None:
        return read_cycles(q, tensor)
    return read_cycles(q, tensor) + mul(q.mcast_hops(tensor), hop_cycles(q, tensor))


def forwarded_step(q: GridQuantities, compute: Expr, tensors: Sequence[str], links: Sequence[Expr] = ()) -> Expr:
    """One K step: ``max(compute + sum_{depth_X = 1} (read_X + hop_X), s_X..., chip, link_f...)``, the
    multicast step (``model/latency.py``: ``overlapped_step``) with ``s_X = max(read_X, hop_X) + hop_X`` (module
    docstring) in place of ``max(read_X, mcast_X)``."""
    exposed = total(mul(single_buffered(q, t), read_cycles(q, t) + hop_cycles(q, t)) for t in tensors)
    streaming = [maximum(read_cycles(q, t), hop_cycles(q, t)) + hop_cycles(q, t) for t in tensors]
    return maximum(compute + exposed, *streaming, chip_read_cycles(q, tensors), *links)
