"""Which row-major tensors of a data-movement program ttnn moves one page at a time, waiting for each page's
transaction to complete before it issues the next (a NoC barrier per page).

ttnn's padded tilize and unpadded untilize move their row-major side stick by stick with a barrier after
every stick, where the plain tilize and untilize readers and writers issue a tile row's 32 sticks and wait
once:

* ``ttnn.tilize_with_val_padding`` (the tilize's source a part of the output: ``Hx < H`` or ``Wx < W``):
  ``reader_unary_pad_dims_split_rows_multicore.cpp`` (tenstorrent/tt-metal
  ``ttnn/cpp/ttnn/operations/data_movement/tilize_with_val_padding/device/kernels/dataflow/``, the 2025
  versions the shipped captures ran: ``read_block`` issues ``noc_async_read`` of one stick, fills its column
  padding, then ``noc_async_read_barrier()``, for each of the block's rows; later versions, e.g. @04b34050,
  wait once per tile row) into ``c_0`` of one tile row
  (``tilize_with_val_padding_multi_core_interleaved_program_factory.cpp`` @05a1c9f6: one block, single-buffered);
* ``ttnn.untilize_with_unpadding`` (the untilize's output a part of its source):
  ``writer_unary_stick_layout_split_rows_multicore.cpp`` (tenstorrent/tt-metal
  ``ttnn/cpp/ttnn/operations/data_movement/untilize_with_unpadding/device/kernels/dataflow/`` @0580bed1:
  ``write_block`` issues ``noc_async_write`` of one stick then ``noc_async_write_barrier()``, for each row);
* a strided row-major ``ttnn.slice`` (the program option ``strided``, ``gather.py``): its source, read row by
  row with ``noc_async_read_barrier()`` after each (``slice/device/kernels/dataflow/reader_multicore_slice_4d.cpp``
  @018f1290) before the row's elements are gathered;
* a tiled copy with the program option ``waited``: its source, read tile by tile with a barrier after each, as
  ``nlp_create_qkv_heads``' reader (``experimental/transformer/nlp_create_qkv_heads/device/kernels/dataflow/
  reader_tm_tile_layout_nlp_create_qkv_heads.cpp`` @04b34050: ``async_read`` of one tile then
  ``async_read_barrier``, for every q, k and v tile) and ``nlp_concat_heads``' (``.../nlp_concat_heads/device/
  kernels/dataflow/reader_tm_tile_layout_nlp_concat_heads.cpp`` @09b4c34b: ``noc_async_read_tile`` then
  ``noc_async_read_barrier``) do;
* a row-major ``to_shard`` copy on Blackhole: its source, read stick by stick by ttnn's interleaved-to-sharded
  reader's unaligned path (``shard_reader.py``).

Waiting for each page costs its whole round trip, so a page of ``p`` bytes takes ``L + p / r(p)`` cycles
(``pages.py::waited_page_bytes_per_cycle``: ``L`` the transaction's latency, ``r(p)`` the streamed page
rate) instead of ``p / r(p)``: a stick of a few bytes costs about one DRAM latency.
"""

from __future__ import annotations

from loom_explorer.families.data_movement.gather import gathers
from loom_explorer.families.data_movement.program import DataMovement
from loom_explorer.families.data_movement.shard_reader import waits_each_stick
from loom_explorer.hardware.schema import Arch
from loom_explorer.problem import Problem

WAITED = "waited"  # the program option: the reader waits for every source page (module docstring)


def is_part(problem: Problem, tensor: str) -> bool:
    """Whether ``tensor`` covers less than the whole of a dimension (a padded source, a sliced output): a part
    of a dimension (``Dim(..., part_of=...)``) of a smaller extent than its whole."""
    program = problem.program
    return any(problem.elements(d) < problem.elements(program.whole(d)) for d in program.tensor(tensor).dims)


def waits_each_page(problem: Problem, st: DataMovement, tensor: str, arch: Arch | None = None) -> bool:
    """Whether ``tensor``'s pages are moved one at a time with a barrier after each (module docstring): the
    padded row-major source of a tilize, the cut row-major output of an untilize, or a strided slice's
    row-major source; on the chip of architecture ``arch`` (None: any), the row-major source of the
    interleaved-to-sharded reader (``shard_reader.py``)."""
    if waits_each_stick(problem, st, tensor, arch):
        return True
    if tensor == st.output:
        return any(st.relayout(t) == "untilize" for t in st.streamed) and is_part(problem, tensor)
    if gathers(problem) and problem.program.tensor(tensor).layout == "row_major":
        return True
    if WAITED in problem.program.options and problem.has_option(WAITED) and tensor in st.streamed:
        return True
    return st.relayout(tensor) == "tilize" and is_part(problem, tensor)
