"""A tiled copy whose source and output are both sharded in L1 on the same cores: ttnn's sharded move, each
core copying its shard to the output's place in its own L1 over the NoC.

``ttnn.move`` of an L1-sharded tensor (``MoveOpParallelizationStrategy::MULTI_CORE_SHARDED``:
tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/data_movement/move/device/move_sharded_program_factory.cpp``
@05438935) runs one data-movement kernel on every core of the shard grid,
``kernels/dataflow/reader_unary_local_l1_copy_backwards.cpp`` (@120b164d): the core reads its whole shard from
its own L1 into the output's buffer with ``noc_async_read`` (in chunks of the two buffers' address distance,
each waited for; a distance past the shard is one chunk) and waits. The model's sharded split costs nothing for
an operand in L1 (it is consumed and produced in place), so such a copy would cost only its launch; its bytes
do cross the NoC, at one core's unicast rate:

    local = ceil(B * b / r_noc) + L_noc       per block (``ttnn.py``: the whole shard is one block)

``b`` the tile's bytes, ``r_noc = noc.unicast_bytes_per_cycle`` (the hardware file's "One To One" rate),
``L_noc = noc.transaction_latency_cycles`` (the read's round trip, waited for: one chunk). It bounds the step
as the other streams do (``latency.py``). Applies when no compute kernel takes part (``c_tile = 0``), every
source and the output are sharded in L1, and both are tiled (a row-major sharded move is costed elsewhere);
0 otherwise. Not modelled: several chunks when the two buffers overlap closer than a shard (the chunk size is
the allocator's address distance, not in a profiler row), each one more ``L_noc``.
"""

from __future__ import annotations

from fractions import Fraction

from loom_explorer.families.data_movement.quantities import DataMovementQuantities
from loom_explorer.model.expr import Expr, ceil_rate, const, mul


def copies_in_l1(q: DataMovementQuantities, c_tile: int) -> bool:
    """Whether the data-movement core copies every tile within L1 (module docstring)."""
    program, problem = q.problem.program, q.problem
    tensors = (*q.streamed, q.output)
    return (
        c_tile == 0
        and all(problem.placement(t).in_l1 for t in tensors)
        and all(program.tensor(t).layout == "tile" for t in tensors)
    )


def local_copy_cycles(q: DataMovementQuantities, c_tile: int) -> Expr:
    """``local`` of one block (module docstring); 0 unless ``copies_in_l1``."""
    if not copies_in_l1(q, c_tile):
        return const(0)
    nbytes = mul(q.block, q.tile_bytes(q.output))
    return ceil_rate(nbytes, Fraction(q.hw.noc.unicast_bytes_per_cycle)) + q.hw.noc.transaction_latency_cycles
