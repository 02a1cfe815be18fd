"""The cycles a data-movement RISC-V spends gathering a strided slice's elements, element by element.

ttnn's row-major slice with a step (``ttnn.slice`` of a row-major interleaved tensor with any step other than
1 takes ``SliceRmStrideProgramFactory``: ``slice_device_operation.cpp::select_program_factory``, tenstorrent/
tt-metal ``ttnn/cpp/ttnn/operations/data_movement/slice/device/``) deals the output rows over the grid with
``split_work_to_cores`` (``slice_program_factory_rm_stride.cpp`` @00b0fa3f, a circular buffer of two input
rows). Its reader ``kernels/dataflow/reader_multicore_slice_4d.cpp`` (@018f1290), for every output row, reads
the whole input row into the buffer, waits for it (``noc_async_read`` then ``noc_async_read_barrier``), and,
when the last dimension is cut or stepped, moves the kept elements to the front of the buffer **byte by byte
through volatile L1 pointers** on its RISC-V before pushing the row to the writer. The program option
``strided`` (``kernels/slice_rows.py``) says so; the source's rows are then waited one by one
(``barriers.py``) and each output element costs, on the reader core,

    g_elem = e * (L_load + I_byte) + I_elem            cycles   (e the element's bytes)

* ``L_load = compute.riscv_l1_load_cycles``: each byte's store needs the byte its load brings from L1 (the
  load's latency is exposed: the in-order core has nothing independent to issue meanwhile);
* ``I_byte = 5``: the inner loop's other instructions, one cycle each (the source and destination
  addresses, the store, the byte index's increment, its compare-and-branch), counted from the kernel source;
  an estimate (the compiled code is not read);
* ``I_elem = 8``: the element loop's own instructions (two ``col * element_size`` products, the input and
  output column updates, two bound compares and branches, the byte index reset), likewise counted, an
  estimate.

A store's own throughput (``compute.riscv_l1_store_cycles``, one in five cycles on Wormhole) is below the loop's
pace of one byte per ``L_load + I_byte`` cycles, so it does not bind. A chip whose hardware file states no
``riscv_l1_load_cycles`` costs no gather. A block of ``B`` iteration tiles (one output row's ``32`` elements
each, the last ragged: ``f_Y`` of them real) gathers ``ceil(B * 32 * f_Y) * g_elem`` cycles on top of its read.
Not modelled: the reader's walk over the rows before its own first one (a few cycles a row skipped).
"""

from __future__ import annotations

import math

from loom_explorer.families.data_movement.program import DataMovement
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.problem import Problem

STRIDED = "strided"
BYTE_LOOP_INSTRUCTIONS = 5  # I_byte (module docstring): an estimate counted from the kernel source
ELEMENT_LOOP_INSTRUCTIONS = 8  # I_elem (module docstring): likewise


def gathers(problem: Problem) -> bool:
    """Whether the reader gathers the output's elements one by one: the program option ``strided`` is on."""
    return STRIDED in problem.program.options and problem.has_option(STRIDED)


def element_gather_cycles(hw: HardwareSpec, element_bytes: int) -> int:
    """``g_elem`` of an element of ``element_bytes`` bytes (module docstring); 0 without a stated load latency."""
    load = hw.compute.riscv_l1_load_cycles
    if load is None:
        return 0
    return element_bytes * (load + BYTE_LOOP_INSTRUCTIONS) + ELEMENT_LOOP_INSTRUCTIONS


def tile_gather_elements(problem: Problem, st: DataMovement) -> int:
    """Output elements one iteration tile holds: ``prod_d tile_d`` over the output's dimensions."""
    return math.prod(problem.program.dim(d).tile for d in st.dims)
