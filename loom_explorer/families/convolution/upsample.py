"""A nearest ``UpsampleOperation`` row read as ``upsample_rows`` (``kernels/upsample_rows.py``): each input
stick read once, written ``scale_h * scale_w`` times.

What ttnn runs for a row-major, interleaved input (``upsample_program_factory_multicore_interleaved.cpp``,
tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/pool/upsample/device/``
@6ac853f9d41488a60d4934f0e2ad340ac3cbc42a): the input's sticks (``N*H*W`` rows of ``C`` elements) are dealt
over the grid by ``split_work_to_cores``; on each core the reader
(``reader_upsample_unary_stick_layout_interleaved_start_id.cpp``) reads one stick at a time into a circular
buffer and the writer (``writer_upsample_interleaved.cpp``) writes it to its ``scale_factor_h *
scale_factor_w`` places of the output; no compute kernel for a row-major input.

The model: ``upsample_rows`` with ``H`` = OUTPUT_0's sticks (``W*Z*Y``), ``Hx`` = INPUT_0's, ``W`` = the
channels (``X``), both DRAM pages of one stick, split over the row's ``CORE COUNT`` cores (``ShardedSplit`` of
the data-movement family with no L1 operand: ``ceil(H / cores)`` output sticks a core, i.e. each core's input
sticks times ``k``), one block the ``k`` output sticks of one input stick (``ShardedSplit.block_rows = k``:
one stick read, with its DRAM latency, per ``k`` written; ``evaluate_sharded`` takes the largest divisor of the
core's share up to ``k`` that L1 allows, below ``k`` when ``ceil(H / cores)`` is no multiple of it, where the
factory deals whole input sticks).

Refused, each with its reason: a mode other than ``nearest`` (bilinear interpolates on the compute cores:
``upsample_bilinear_program_factory_multicore.cpp``), a tiled input (untilized on the compute cores first), a
sharded operand (``upsample_program_factory_multicore_sharded.cpp``, another factory), an output whose sticks
are not the input's times the scale, and a row without ``CORE COUNT``.
"""

from __future__ import annotations

from loom_explorer.accuracy.capture import OpReading, ProfilerRow, RowSkip, count_cell, tensor_format
from loom_explorer.families.data_movement.ttnn_config import ShardedSplit

UPSAMPLE_OP_CODE = "upsampleoperation"
UPSAMPLE_KERNEL = "upsample_rows"


def _scale(attrs: dict[str, str], name: str) -> int:
    """A whole-number scale factor of ATTRIBUTES (``scale_factor_h``/``_w``; older ttnn's trailing ``_``)."""
    text = (attrs.get(name) or attrs.get(f"{name}_", "")).strip()
    try:
        value = float(text)
    except ValueError:
        raise RowSkip(f"ATTRIBUTES {name} {text or 'missing'!r} is not a number") from None
    if value < 1 or value != int(value):
        raise RowSkip(f"{name}={text}: only whole scale factors run the interleaved factory")
    return int(value)


def _sticks(row: ProfilerRow, tensor: str) -> tuple[int, int]:
    """(sticks ``W*Z*Y``, channels ``X``) of a row-major ``tensor``."""
    shape = row.shape(tensor)
    if shape is None:
        raise RowSkip(f"an upsample row needs {tensor}'s shape")
    w, z, y, x = shape
    return w * z * y, x


def read_upsample(row: ProfilerRow, attrs: dict[str, str]) -> OpReading:
    """An upsample row as ``upsample_rows`` (module docstring); RowSkip with the reason otherwise."""
    mode = (attrs.get("mode") or attrs.get("mode_", "")).strip().lower()
    if mode != "nearest":
        raise RowSkip(
            f"upsample mode {mode or 'missing'!r}: only nearest is modelled (bilinear interpolates on the compute "
            "cores, upsample_bilinear_program_factory_multicore.cpp)"
        )
    for tensor in ("INPUT_0", "OUTPUT_0"):
        layout = row.get(f"{tensor}_LAYOUT").upper()
        if layout != "ROW_MAJOR":
            raise RowSkip(f"upsample with {tensor} {layout or 'of no layout'}: only row-major sticks are modelled")
        memory = row.get(f"{tensor}_MEMORY").upper()
        if "INTERLEAVED" not in memory:
            raise RowSkip(
                f"upsample with {tensor} in {memory or 'no memory'}: only the interleaved factory is modelled "
                "(a sharded upsample runs upsample_program_factory_multicore_sharded.cpp)"
            )
    cores = row.number(count_cell, "CORE COUNT")
    if cores is None:
        raise RowSkip("an upsample row without CORE COUNT: the cores its sticks are dealt over are unknown")
    k = _scale(attrs, "scale_factor_h") * _scale(attrs, "scale_factor_w")
    in_sticks, in_channels = _sticks(row, "INPUT_0")
    out_sticks, channels = _sticks(row, "OUTPUT_0")
    if in_channels != channels or out_sticks != in_sticks * k:
        raise RowSkip(
            f"upsample of {in_sticks} sticks of {in_channels} into {out_sticks} of {channels}: not the input's "
            f"sticks times the scale {k}"
        )
    dtype = tensor_format(row, "OUTPUT_0")
    shape = {"H": out_sticks, "Hx": in_sticks, "W": channels}
    return OpReading(
        kernel=UPSAMPLE_KERNEL,
        shape=shape,
        model_shape=shape,
        dtype=dtype,
        formats={"x": tensor_format(row, "INPUT_0", dtype), "y": dtype},
        grid=None,
        fp32_acc=False,
        note=f"nearest upsample: {in_sticks} sticks each read once and written {k} times over {cores} cores",
        config=ShardedSplit(op=row.get("OP CODE"), cores=cores, sharded=(), block_rows=k),
    )
