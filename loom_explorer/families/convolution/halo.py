"""The halo step of a sliding-window op (``HaloDeviceOperation``) read as the data movement it is: the
``copy_rows`` kernel over the halo'd shards, on the cores that hold them.

What ttnn runs (``untilize_with_halo_program_factory.cpp``, tenstorrent/tt-metal
``ttnn/cpp/ttnn/operations/sliding_window/halo/device/`` @02a358370cf4ad93e9e1ab53cf68e360b604522c,
``untilize_with_halo_multi_core``): on every core of the output's shard grid, the output buffer holds
``max_out_nsticks_per_core`` sticks of ``C`` elements (one stick per input pixel, its channels); two reader
kernels (``kernels/dataflow/halo_gather.cpp``, one per NoC, alternate blocks) copy the core's own input sticks
and its neighbours' overlap into it in runs (the gather config, local and remote), and write the padding
sticks (the padding config). A row-major input skips the untilize compute kernel (``skip_untilize``); a tiled
input is untilized first (``pack_untilize.cpp``).

The model: ``copy_rows`` (``kernels/copy_rows.py``: one row-major page per stick) with ``H`` = OUTPUT_0's
sticks (``cores x max_out_nsticks_per_core``: every halo'd stick written once) times the channel slices of a
block shard, ``W`` = the channels of a stick in one core's shard (the output shard spec's width: all ``C`` of
a height shard, ``C / ncores_c`` of a block shard), so each core copies ``max_out_nsticks_per_core`` pages of
its shard's width. The source is read as L1-interleaved (``Placement.l1_interleaved``: every stick read over
the NoC from the L1 that holds it, one transaction a stick; the factory's gather copies contiguous runs, so
small sticks are costed high) and the destination is the core's own height shard (``ShardedSplit`` of the
data-movement family, ``data_movement/ttnn_config.py``, costed by its sharded split over the row's
``CORE COUNT`` cores). The data format is the output's (a tiled input is untilized into it first). Not
costed: a tiled input's untilize (``pack_untilize.cpp``: the prediction is low for those rows, said in the
row's note), the padding sticks as anything but copies, the reading of the gather configs.

Refused: an output that is not row-major, a width-sharded operand (its own path in ``halo_gather.cpp``,
not modelled), input and output of different shardings or channels, an output
shard width that does not divide the channels, and a row without ``CORE COUNT``.
"""

from __future__ import annotations

import re

from loom_explorer.accuracy.capture import OpReading, ProfilerRow, RowSkip, count_cell, tensor_format
from loom_explorer.families.data_movement.ttnn_config import ShardedSplit
from loom_explorer.problem import Placement

HALO_OP_CODE = "halodeviceoperation"
HALO_KERNEL = "copy_rows"
_EXTENT = re.compile(r"\s*(\d+)\s*(?:\[\s*\d+\s*\])?\s*")
_SHARD_SHAPE = re.compile(r"shard_spec=ShardSpec\(.*?shape=\{\s*(\d+)\s*;\s*(\d+)\s*\}")


def _rows_cols(row: ProfilerRow, tensor: str) -> tuple[int, int]:
    """(sticks ``W*Z*Y``, channels) of a row-major ``tensor``: its logical sticks and its padded channels (the
    stick as stored: ``528[512]`` is 528)."""
    shape = row.shape(tensor)
    if shape is None:
        raise RowSkip(f"a halo row needs {tensor}'s shape")
    w, z, y, _ = shape
    text = row.get(f"{tensor}_X_PAD[LOGICAL]", f"{tensor}_X")
    m = _EXTENT.fullmatch(text)
    if m is None:
        raise RowSkip(f"{tensor}_X {text!r} is not an extent")
    return w * z * y, int(m.group(1))


def _layout(memory: str) -> str:
    """``height`` or ``block`` of an L1-sharded operand's memory cell; RowSkip for any other."""
    for layout in ("height", "block"):
        if memory.endswith(f"L1_{layout.upper()}_SHARDED"):
            return layout
    raise RowSkip(
        f"halo with an operand in {memory or 'no memory'}: only height- and block-sharded halos are modelled "
        "(a width-sharded halo takes its own path in halo_gather.cpp, not modelled)"
    )


def _shard_channels(attrs: dict[str, str], channels: int) -> int:
    """The channels of a stick in one core's shard: the output shard's width (``output_memory_config``'s
    ``shard_spec`` shape ``{rows; columns}``; older ttnn's ``output_memory_config_``): all of them for a
    height shard, ``channels / ncores_c`` for a block shard."""
    # older ttnn prints its attributes with a trailing underscore
    m = _SHARD_SHAPE.search(attrs.get("output_memory_config") or attrs.get("output_memory_config_", ""))
    if m is None:
        raise RowSkip("ATTRIBUTES output_memory_config has no readable shard_spec shape")
    width = int(m.group(2))
    if width < 1 or channels % width:
        raise RowSkip(f"output shard width {width} does not divide the {channels} channels")
    return width


def read_halo(row: ProfilerRow, attrs: dict[str, str], compute: dict[str, object]) -> OpReading:
    """A halo row as ``copy_rows`` over its shards (module docstring); RowSkip with the reason otherwise."""
    out_layout = row.get("OUTPUT_0_LAYOUT").upper()
    if out_layout != "ROW_MAJOR":
        raise RowSkip(f"halo into OUTPUT_0 {out_layout or 'of no layout'}: a halo writes row-major sticks")
    layouts = {t: _layout(row.get(f"{t}_MEMORY").upper()) for t in ("INPUT_0", "OUTPUT_0")}
    if layouts["INPUT_0"] != layouts["OUTPUT_0"]:
        raise RowSkip(f"halo from {layouts['INPUT_0']} into {layouts['OUTPUT_0']}: a halo keeps its sharding")
    cores = row.number(count_cell, "CORE COUNT")
    if cores is None:
        raise RowSkip("a halo row without CORE COUNT: the cores holding the shards are unknown")
    sticks, channels = _rows_cols(row, "OUTPUT_0")
    _, in_channels = _rows_cols(row, "INPUT_0")
    if in_channels != channels:
        raise RowSkip(f"halo from {in_channels} into {channels} channels: a halo keeps a stick's channels")
    shard_channels = _shard_channels(attrs, channels)
    dtype = tensor_format(row, "OUTPUT_0")
    shape = {"H": sticks * (channels // shard_channels), "W": shard_channels}
    note = f"halo as a copy of its {sticks} halo'd sticks over {cores} cores' shards, each read over the NoC"
    if shard_channels < channels:
        note += f"; block-sharded: {channels // shard_channels} slices of {shard_channels} channels a stick"
    if row.get("INPUT_0_LAYOUT").upper() != "ROW_MAJOR":
        note += "; its tiled input's untilize (pack_untilize, into the output's format) not costed"
    return OpReading(
        kernel=HALO_KERNEL,
        shape=shape,
        model_shape=shape,
        dtype=dtype,
        formats={"x": dtype, "y": dtype},
        grid=None,
        fp32_acc=bool(compute.get("fp32_dest_acc_en")),
        note=note,
        config=ShardedSplit(
            op=row.get("OP CODE"),
            cores=cores,
            sharded=("x", "y"),
            layouts=(Placement.l1_interleaved, Placement.l1_height),  # each core's own rows: see _shard_channels
        ),
    )
