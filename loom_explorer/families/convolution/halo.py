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
sticks (``cores x max_out_nsticks_per_core``: every halo'd stick written once, each read once from the input
shard of the core that holds it), ``W`` = the channels (OUTPUT_0 ``X``), both operands height-sharded in L1
over the row's ``CORE COUNT`` cores (``data_movement/ttnn_config.py``: ``ShardedSplit``, costed by that
family's sharded split). The remote reads (a neighbour's overlap over the NoC) are costed as local L1 reads:
the overlap is a small part of a shard (an approximation, said in the row's note); so is the padding written
as sticks copied.

Refused: a tiled input (the untilize step is not modelled), an operand not height-sharded in L1 (block and
width sharding split channels too), and a row without ``CORE COUNT``.
"""

from __future__ import annotations

from loom_explorer.accuracy.capture import OpReading, ProfilerRow, RowSkip, count_cell, tensor_format
from loom_explorer.families.data_movement.ttnn_config import ShardedSplit
from loom_explorer.problem import Placement

HALO_OP_CODE = "halodeviceoperation"
HALO_KERNEL = "copy_rows"


def _rows_cols(row: ProfilerRow, tensor: str) -> tuple[int, int]:
    """(sticks ``W*Z*Y``, channels ``X``) of a row-major ``tensor``, its logical extents."""
    shape = row.shape(tensor)
    if shape is None:
        raise RowSkip(f"a halo row needs {tensor}'s shape")
    w, z, y, x = shape
    return w * z * y, x


def read_halo(row: ProfilerRow, compute: dict[str, object]) -> OpReading:
    """A halo row as ``copy_rows`` over its shards (module docstring); RowSkip with the reason otherwise."""
    for tensor in ("INPUT_0", "OUTPUT_0"):
        layout = row.get(f"{tensor}_LAYOUT").upper()
        if layout != "ROW_MAJOR":
            raise RowSkip(
                f"halo with {tensor} {layout or 'of no layout'}: a tiled input is untilized first "
                "(pack_untilize), which the copy of sticks does not model"
            )
        memory = row.get(f"{tensor}_MEMORY").upper()
        if not memory.endswith("L1_HEIGHT_SHARDED"):
            raise RowSkip(
                f"halo with {tensor} {memory or 'of no memory'}: only height-sharded halo'd shards are "
                "modelled (block and width sharding split the channels over cores too)"
            )
    cores = row.number(count_cell, "CORE COUNT")
    if cores is None:
        raise RowSkip("a halo row without CORE COUNT: the cores holding the shards are unknown")
    sticks, channels = _rows_cols(row, "OUTPUT_0")
    _, in_channels = _rows_cols(row, "INPUT_0")
    if in_channels != channels:
        raise RowSkip(f"halo from {in_channels} into {channels} channels: a halo keeps a stick's channels")
    dtype = tensor_format(row, "INPUT_0")
    shape = {"H": sticks, "W": channels}
    return OpReading(
        kernel=HALO_KERNEL,
        shape=shape,
        model_shape=shape,
        dtype=dtype,
        formats={"x": dtype, "y": tensor_format(row, "OUTPUT_0", dtype)},
        grid=None,
        fp32_acc=bool(compute.get("fp32_dest_acc_en")),
        note=f"halo as a copy of its {sticks} halo'd sticks over {cores} cores' shards (remote overlap read as local)",
        config=ShardedSplit(
            op=row.get("OP CODE"),
            cores=cores,
            sharded=("x", "y"),
            layouts=(Placement.l1_interleaved, Placement.l1_height),
        ),
    )
