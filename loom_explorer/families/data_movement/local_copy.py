"""A copy (tiled or row-major) whose source and output are both sharded in L1 on the same cores: each core
copies its own shard from one L1 buffer into the other over the NoC (a read of its own L1), which costs time
although no DRAM is touched.

ttnn's sharded ``ttnn.move`` (``MoveDeviceOperation`` of a sharded tensor into a shard of the same spec, the
profiler rows whose INPUT_0 and OUTPUT_0 are both L1-sharded) runs ``move_sharded_program_factory.cpp``
(tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/data_movement/move/device/`` @05438935): one kernel on each
core of the shard grid, ``reader_unary_local_l1_copy_backwards.cpp`` (``.../move/device/kernels/dataflow/``
@120b164d), which walks the core's whole shard (``aligned_size_per_bank`` bytes) from its top down in chunks,
each ``noc_async_read(get_noc_addr(src), dst, chunk)`` from the core's own L1 followed by
``noc_async_read_barrier()``. There is no compute kernel and no DRAM transaction; the shard's bytes cross the
core's NoC port once, so a core of ``S`` shard bytes takes

    local = ceil(S / r_noc) + L_noc        cycles

``r_noc = noc.unicast_bytes_per_cycle`` (the hardware file's one-to-one NoC rate, the bandwidth of one
core's reads over the NoC) and ``L_noc = noc.transaction_latency_cycles`` (the round trip the last chunk's
barrier waits for). The chunk is the distance between the two buffers' addresses, which the profiler row does
not give: the copy is costed as one chunk (a lower bound on the barriers it waits for).

In the model a core's copy is ``local = ceil(T * b_X * f_X / r_noc)`` for its ``T`` iteration tiles, over the
whole shard at once (the kernel's chunks are not the model's blocks: ``ttnn.py::evaluate_sharded`` cuts a
shard into the largest divisor of its rows that L1 allows, which may be one row, and a copy rounded up per
block would cost a 16-byte row a whole cycle). ``latency.py`` adds it to the steady state after the blocks (the
one reader does it alongside nothing else: there is no DRAM read or write for an L1 shard) and ``L_noc`` to the
drain. Only copies with no compute (``c_tile = 0``) and source and output of one layout are costed so: a
tilize or untilize of a shard passes it through the compute core (``work.py``). Not modelled: several chunks
when the two buffers lie closer than a shard apart (the chunk is the allocator's address distance, not in a
profiler row), each one more ``L_noc``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from loom_explorer.model.expr import Expr, ceil_rate, const, mul, total

if TYPE_CHECKING:
    from loom_explorer.families.data_movement.quantities import DataMovementQuantities


def local_sources(q: DataMovementQuantities, c_tile: int) -> tuple[str, ...]:
    """The sources each core copies from its own L1 into its own L1 (module docstring): sources sharded in L1
    whose output, of the same layout, is sharded in L1 too, with no compute core in the way."""
    problem, program, out = q.problem, q.problem.program, q.output
    layout = program.tensor(out).layout
    if c_tile or not problem.placement(out).in_l1:
        return ()
    return tuple(t for t in q.streamed if problem.placement(t).in_l1 and program.tensor(t).layout == layout)


def noc_rate(q: DataMovementQuantities, tensor: str) -> Fraction:
    """``r_noc / f_X``: bytes of the iteration's tiles per cycle (moving ``B*b*f`` bytes at ``r`` takes as long
    as ``B*b`` at ``r/f``, as ``latency.py::rate``)."""
    return q.iteration_rate(tensor, Fraction(q.hw.noc.unicast_bytes_per_cycle))


def local_copy_cycles(q: DataMovementQuantities, c_tile: int) -> Expr:
    """``local`` of a core's whole shard, summed over ``local_sources``: ``ceil(T*b_X*f_X / r_noc)`` each
    (module docstring); 0 when there are none."""
    sources = local_sources(q, c_tile)
    if not sources:
        return const(0)
    return total(ceil_rate(mul(q.core_tiles, q.tile_bytes(t)), noc_rate(q, t)) for t in sources)


def local_copy_latency_cycles(q: DataMovementQuantities, c_tile: int) -> int:
    """``L_noc`` once per core when it copies a shard locally (the last chunk's barrier; module docstring), in
    the drain: 0 otherwise."""
    return q.hw.noc.transaction_latency_cycles if local_sources(q, c_tile) else 0
