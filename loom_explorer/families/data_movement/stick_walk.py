"""The RISC-V work per stick of ttnn's row-major slice readers and writers: the address of every stick found by
walking a multi-dimensional index kept in L1, on top of the stick's NoC transaction.

ttnn's ``padded_slice`` of a row-major interleaved tensor into an L1 shard (``PaddedSliceDeviceOperation``) and
``slice_write`` of a row-major L1 shard into an interleaved tensor (``SliceWriteDeviceOperation``) move one stick
per NoC transaction and wait once per batch of sticks (not per stick). Their per-stick loops
(tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/experimental/padded_slice/device/kernels/dataflow/
padded_slice_reader_rm_interleaved_start_id.cpp`` @050f24fa, its aligned path; ``.../slice_write/device/kernels/
dataflow/slice_write_writer_interleaved.cpp`` @030ecd74, run by ``slice_write_rm_sharded_input_program_factory.cpp``
@00555207) do, for every stick, besides the ``noc_async_read`` / ``noc_async_write`` itself:

* ``get_noc_addr(stick_id, addrgen)`` of the interleaved tensor: the bank (``stick_id`` divided by the number of
  banks, a compile-time constant: a multiply-high and a shift, no division routine), the bank's offset and its
  NoC coordinates read from the two bank tables in L1: **2 loads**;
* the index walk over ``id_per_dim``, a ``volatile`` array of L1 (the kernel's runtime arguments), with the
  stick counts per dimension beside it (``num_unpadded_sticks``, ``num_padded_sticks``): the factory sets the
  first dimension's count to 1, so every stick wraps it and steps the next: for ``j = 0``, ``id_per_dim[0]++``
  (a load and a store), its re-read for the compare (volatile: a load), ``num_unpadded_sticks[0]`` (a load: it
  may alias the volatile stores, so it is re-read), the reset ``id_per_dim[0] = 0`` (a store) and
  ``num_padded_sticks[0]`` (volatile: a load); for ``j = 1``, ``id_per_dim[1]++`` (a load and a store), its
  re-read and ``num_unpadded_sticks[1]`` (two loads), unequal: break. **7 loads and 3 stores**;
* about ``I_stick = 16`` other instructions (the bank arithmetic's multiply-high, shift, two multiplies, a
  subtraction and two additions; the walk's increments, compares, branches and the stick id's updates),
  counted from the source, one cycle each: an estimate (the compiled code is not read).

The NoC command (the command buffer's registers, the issued-transaction counters) is what tt-metal's
"DRAM Interleaved Packet Sizes" benchmark does too, so it is in the page rate already (``pages.py``); that
benchmark reads one bank at precomputed addresses (no address generator, no index walk), and at the sticks'
sizes its per-transaction time is flat (about 37 cycles from 64 to 512 B on Blackhole): the RISC-V's issue
is what bounds it, so the walk adds to it rather than hiding under the transfers. A stick then costs

    w_stick = 9 * L_load + 3 * s_store + I_stick           cycles on top of its page time

``L_load = compute.riscv_l1_load_cycles`` (each load's value is used by the next instruction: the in-order core
waits for it), ``s_store = compute.riscv_l1_store_cycles``: 91 cycles on Blackhole (8, 1), 103 on Wormhole
(8, 5). A chip whose hardware file states neither costs no walk.

The program option ``stick_walk`` (``kernels/copy_rows.py``; ``accuracy.py`` sets it on a row-major
``PaddedSlice`` / ``SliceWrite`` row) says the copy is those kernels': the walk is paid by the RISC-V that moves
the interleaved side, the reader of a DRAM source or the writer of a DRAM output. A block of ``B`` iteration
tiles moves ``B * b_X * f_X / p_X`` of that tensor's sticks (``p_X`` its page bytes), so its walk is

    walk = ceil(B * b_X * f_X / p_X * w_stick)

in the reader's or the writer's step (``latency.py``), not in the fill or the drain: RISC-V work, as the strided
slice's gather (``gather.py``). Not modelled: the walk's rarer deeper wraps (one stick in a dimension's count
steps a third dimension), the non-aligned reader's transaction-id slots, the halo's gather (another kernel).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.dram_reads import reads_dram
from loom_explorer.model.expr import Expr, ceil_rate, const, mul
from loom_explorer.problem import Problem

if TYPE_CHECKING:
    from loom_explorer.families.data_movement.quantities import DataMovementQuantities

STICK_WALK = "stick_walk"  # the program option: the sticks' addresses come from the slice kernels' index walk
WALK_L1_LOADS = 9  # 2 bank-table loads + 7 of the index walk (module docstring)
WALK_L1_STORES = 3  # the index walk's stores (module docstring)
WALK_INSTRUCTIONS = 16  # I_stick (module docstring): an estimate counted from the kernel source


def walks(problem: Problem) -> bool:
    """Whether the program option ``stick_walk`` is on."""
    return STICK_WALK in problem.program.options and problem.has_option(STICK_WALK)


def stick_walk_cycles(hw: HardwareSpec) -> int:
    """``w_stick`` (module docstring); 0 on a chip whose hardware file states no L1 load or store cycles."""
    load, store = hw.compute.riscv_l1_load_cycles, hw.compute.riscv_l1_store_cycles
    if load is None or store is None:
        return 0
    return WALK_L1_LOADS * load + WALK_L1_STORES * store + WALK_INSTRUCTIONS


def walk_cycles(q: DataMovementQuantities, tensor: str, direction: str) -> Expr:
    """``walk`` of one block for ``tensor`` moved in ``direction`` (module docstring): 0 without the option, for a
    tiled tensor, or for one not on the DRAM side (read from DRAM as a source, written to DRAM as the output)."""
    problem = q.problem
    if not walks(problem) or problem.program.tensor(tensor).layout != "row_major":
        return const(0)
    if direction == "read" and not reads_dram(q, tensor):
        return const(0)
    if direction == "write" and (tensor != q.output or problem.placement(tensor).in_l1):
        return const(0)
    per_stick = stick_walk_cycles(q.hw)
    if per_stick == 0:
        return const(0)
    sticks_per_tile = Fraction(q.tile_bytes(tensor)) * q.fraction(tensor) / q.page_bytes(tensor)
    return ceil_rate(mul(q.block, per_stick), (1 / sticks_per_tile).limit_denominator(1000))
