"""ttnn's row-major reshape run by two RISC-Vs on each core, and which profiler rows ran that program.

``ttnn.reshape`` of a row-major interleaved tensor runs the reshape device operation's row-major factory. Every
version deals the source's sticks (``input_log_shape[-2]`` pages of ``p_in = X_in * e`` bytes) over the whole
compute grid, ``ceil(rows / cores)`` a core (rounded up until a core's bytes are whole destination pages), and
runs one kernel, ``rm_reshape_interleaved.cpp``, that reads a stick, waits for it
(``noc_async_read_barrier``), copies it into the destination page being built and writes each destination page
when it is full. The versions differ in how many RISC-Vs of a core run that kernel:

* the older factory (``reshape_view/device/host/reshape_rm_program_factory.cpp``, tenstorrent/tt-metal
  @010ba922, ``rm_reshape_preparer_single_risk``): one instance, on the reader RISC-V: a core's sticks one
  after another. Its operation's attributes are ``logical_output_shape``, ``output_mem_config`` and
  ``padded_output_shape``.
* the later factory (``reshape_view/device/reshape_rm_program_factory.cpp``,
  ``ReshapeRMProgramFactory::create``, as in the versions indexed with ``sub_core_grid``, e.g. the one whose
  ``reshape_row_major_program_factory.hpp`` holds ``reader_kernel_id2`` and ``can_use_dual_kernel``): when
  ``can_use_dual_kernel = p_in % p_out == 0 or p_out % p_in == 0`` it creates a second instance of the same
  kernel on the writer RISC-V (``WriterDataMovementConfig``, its own circular buffers ``c_2``/``c_3``) and
  gives each instance half of the core's sticks (``mid_read = start + pages / 2``, or half the destination
  pages when they are the larger): the two halves run at once. Its operation's attributes add
  ``recreate_mapping_tensor`` and ``sub_core_grid`` (``reshape_device_operation_types.hpp``:
  ``operation_attributes_t``), which the profiler prints in the row's ``ATTRIBUTES``.
* the latest factory (``ReshapeViewRMProgramFactory``, ``ttnn::prim``, the op ``ReshapeViewDeviceOperation``)
  adds ``and (p_in % 16 == 0 and p_out % 16 == 0 or the output is not in DRAM)`` to that condition
  ("Avoid dual-kernel on non-aligned DRAM dests").

So a row is read as two RISC-Vs (``two_riscs_of_row``) when its attributes are the later factory's
(``sub_core_grid`` printed) and its page sizes satisfy that version's condition; a row without those attributes
ran the single instance.

The cost (the program option ``two_riscs``, ``latency.py``): a core's ``n`` blocks are worked by two RISC-Vs
at once, ``ceil(n / 2)`` each, so the steady state is ``ceil(n / 2)`` steps; each step then moves two blocks
through the core's share of the chip's DRAM bandwidth and its NoC links, so those bounds of the step count
twice. The fill (the first stick) and the drain (the last write) are unchanged. Only a program the compute core
takes no part in is split so (the reshape has no compute kernel): with ``c_tile > 0`` the option changes
nothing.
"""

from __future__ import annotations

from loom_explorer.problem import Problem

TWO_RISCS = "two_riscs"  # the program option: a core's rows split over two RISC-Vs running the same kernel

RESHAPE_OPS = frozenset({"reshapedeviceoperation", "reshapeviewdeviceoperation"})
# bytes of one element of a row-major tensor by the profiler's DATATYPE (the reshape takes these only)
ELEMENT_BYTES = {"BFLOAT16": 2, "FLOAT32": 4, "UINT32": 4, "INT32": 4}
NOC_PAGE_ALIGNMENT_BYTES = 16  # the latest factory's ``noc_page_alignment_bytes``


def riscs_sharing_rows(problem: Problem, c_tile: int) -> int:
    """RISC-Vs of a core that work its rows at once: 2 with the option ``two_riscs`` and no compute, else 1."""
    if c_tile == 0 and TWO_RISCS in problem.program.options and problem.has_option(TWO_RISCS):
        return 2
    return 1


def two_riscs_of_row(op: str, attributes: str, in_page_bytes: int, out_page_bytes: int, out_in_dram: bool) -> bool:
    """Whether a row-major reshape row ran on two RISC-Vs a core (module docstring): ``op`` the lower-case op
    name, ``attributes`` the row's ATTRIBUTES text, the source and destination pages' bytes, whether the
    output is in DRAM."""
    if op not in RESHAPE_OPS or "sub_core_grid" not in attributes or min(in_page_bytes, out_page_bytes) < 1:
        return False
    divisible = in_page_bytes % out_page_bytes == 0 or out_page_bytes % in_page_bytes == 0
    if op == "reshapeviewdeviceoperation":
        aligned = in_page_bytes % NOC_PAGE_ALIGNMENT_BYTES == 0 and out_page_bytes % NOC_PAGE_ALIGNMENT_BYTES == 0
        return divisible and (aligned or not out_in_dram)
    return divisible
