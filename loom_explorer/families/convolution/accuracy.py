"""The conv2d rows of a device-profiler report (``accuracy/op_mapping.py``: ``ACCURACY`` plugs into
``loom_explorer.accuracy_ops``).

``Conv2dDeviceOperation`` (and the older ``OptimizedConvNew``) rows are read as the ``conv2d`` kernel with
the config they ran, from ATTRIBUTES:

* ``sliding_window_config``: ``window_hw`` (KH, KW), ``stride_hw``, ``padding``, ``dilation_hw`` (only KH
  enters the implicit GEMM; the others shaped the halo op that ran before);
* ``memory_config``: the shard layout (``HEIGHT_SHARDED`` / ``BLOCK_SHARDED``; ``WIDTH_SHARDED`` is skipped:
  another program factory) and the shard orientation (``COL_MAJOR``: transposed);
* ``parallelization_config``: ``grid_size``, ``num_cores_nhw``, ``num_cores_c_out``, the per-core output
  block (older ttnn's ``OptimizedConvParallelizationConfig``: ``num_cores_c``, the block in elements);
  ``block_config``: ``act_block_h_ntiles``, ``act_block_w_ntiles``, the output sub-block;
* ``activation`` (``relu``, fused; older ttnn's ``fuse_relu``), ``has_bias``, ``groups`` (above 1 is skipped),
  ``enable_act_double_buffer`` and ``enable_weights_double_buffer`` (the buffers' blocks).

The shape: ``M`` = OUTPUT_0's rows (batch x OH x OW), ``N`` = ``output_channels``, ``KH`` = the window's
height, ``KWC`` = the weight matrix's padded height (INPUT_1 ``Y``, padded: ttnn's K) divided by ``KH``. The
activation's tiles are in the output's data format (the conv tilizes its row-major input into a buffer of
the output's format: ``tilized_act_df`` in ``conv2d_op_sharded_program_factory.cpp`` @
55e3268f4a5804bee2240c6abda418cadb7e9f04), the weights in INPUT_1's.
"""

from __future__ import annotations

import re

from loom_explorer.accuracy.capture import (
    OpReading,
    ProfilerRow,
    RowSkip,
    core_grid,
    flag,
    fused_activation,
    parse_struct,
    tensor_format,
    whole_or_none,
)
from loom_explorer.accuracy.op_mapping import AccuracyOps
from loom_explorer.families.convolution.halo import HALO_KERNEL, HALO_OP_CODE, read_halo
from loom_explorer.families.convolution.ttnn_config import parse_conv_config
from loom_explorer.families.convolution.upsample import UPSAMPLE_KERNEL, UPSAMPLE_OP_CODE, read_upsample
from loom_explorer.targets.ttnn.evaluate import ConfigError

CONV_OP_CODES = frozenset({"conv2ddeviceoperation", "optimizedconvnew"})
WINDOW_OP_SKIPS = {
    "pool2d": "max/avg pool2d reduces each output stick's window of input sticks of the halo'd shard on the "
    "compute cores; no shipped kernel reduces a window of sticks",
}
"""The other sliding-window ops of a CNN capture: claimed by the family, each skipped with its reason. The halo
step (``halo.py``) and a nearest upsample (``upsample.py``) are read as the data movement they are (their rows
may leave MATH FIDELITY empty: they do no math, ``AccuracyOps.no_math_op_codes``)."""
KERNEL = "conv2d"

_LAYOUT = re.compile(r"memory_layout=TensorMemoryLayout::(\w+)")
_ORIENTATION = re.compile(r"orientation=ShardOrientation::(\w+)")
_WINDOW = re.compile(r"window_hw=\(\s*(\d+)\s*[;,]\s*(\d+)\s*\)")


def _fields(attrs: dict[str, str], name: str) -> dict[str, str]:
    parsed = parse_struct(attrs.get(name, ""))
    if parsed is None:
        raise RowSkip(f"ATTRIBUTES has no readable {name}")
    return parsed[1]


def _count(fields: dict[str, str], key: str, where: str) -> int:
    """A whole-number field of a config, under its name or older ttnn's: ``..._ntiles`` for ``..._ntile``, or
    the extent in elements (``per_core_out_matrix_height=256``: 8 tiles)."""
    text = fields.get(key, "")
    if not text and key.endswith("_ntile"):
        text = fields.get(f"{key}s", "")
        elements = whole_or_none(fields.get(key.removesuffix("_ntile"), ""))
        if not text and elements:
            text = str(-(-elements // 32))
    value = whole_or_none(text)
    if not value:
        raise RowSkip(f"{where}.{key} {text or 'missing'!r} is not a whole number >= 1")
    return value


def read_conv(row: ProfilerRow, attributes: str, attrs: dict[str, str], compute: dict[str, object]) -> OpReading:
    """What a conv2d row says of its op (module docstring), a halo row's (``halo.py``); RowSkip with the reason
    otherwise (and for the other sliding-window ops, ``WINDOW_OP_SKIPS``)."""
    name = row.get("OP CODE").split("::")[-1].lower()
    if name == HALO_OP_CODE:
        return read_halo(row, attrs, compute)
    if name == UPSAMPLE_OP_CODE:
        return read_upsample(row, attrs)
    skip = WINDOW_OP_SKIPS.get(name)
    if skip is not None:
        raise RowSkip(skip)
    groups = whole_or_none(attrs.get("groups", "1")) or 1
    if groups != 1:
        raise RowSkip(f"groups={groups}: a grouped or depthwise conv is not the implicit GEMM the model costs")
    memory = attrs.get("memory_config", "")
    layout = _LAYOUT.search(memory)
    if layout is None:
        raise RowSkip("ATTRIBUTES memory_config names no memory_layout")
    shard_layout = layout.group(1)
    if shard_layout not in ("HEIGHT_SHARDED", "BLOCK_SHARDED"):
        raise RowSkip(
            f"{shard_layout} conv: another program factory (conv2d_op_width_sharded_program_factory.cpp), not modelled"
        )
    orientation = _ORIENTATION.search(memory)
    window = _WINDOW.search(attrs.get("sliding_window_config", ""))
    if window is None:
        raise RowSkip("ATTRIBUTES sliding_window_config has no readable window_hw")
    kh = int(window.group(1))
    out, weights = row.shape("OUTPUT_0"), row.shape("INPUT_1")
    if out is None or weights is None:
        raise RowSkip("a conv2d row needs OUTPUT_0 and INPUT_1 (the weight matrix)")
    k_padded = row.number(_padded, "INPUT_1_Y_PAD[LOGICAL]", "INPUT_1_Y")
    if k_padded is None or k_padded % (32 * kh):
        raise RowSkip(f"weight matrix height {k_padded} is not {kh} filter rows of whole tiles")
    channels = whole_or_none(attrs.get("output_channels", ""))
    if not channels:
        raise RowSkip("ATTRIBUTES output_channels is not a whole number")
    par = _fields(attrs, "parallelization_config")
    block = _fields(attrs, "block_config")
    grid = core_grid(par.get("grid_size", ""))
    if grid is None:
        raise RowSkip(f"parallelization_config.grid_size {par.get('grid_size', '')!r} is not readable")
    sharding = {
        "shard_layout": shard_layout,
        "compute_with_storage_grid_size": grid,
        "num_cores_nhw": _count(par, "num_cores_nhw", "parallelization_config"),
        "num_cores_c": _count(par, "num_cores_c_out", "parallelization_config")
        if "num_cores_c_out" in par
        else _count(par, "num_cores_c", "parallelization_config"),
        "per_core_out_matrix_height_ntile": _count(par, "per_core_out_matrix_height_ntile", "parallelization_config"),
        "per_core_out_matrix_width_ntile": _count(par, "per_core_out_matrix_width_ntile", "parallelization_config"),
        "act_block_w_ntiles": _count(block, "act_block_w_ntiles", "block_config"),
        "out_subblock_h_ntiles": _count(block, "out_subblock_h_ntiles", "block_config"),
        "out_subblock_w_ntiles": _count(block, "out_subblock_w_ntiles", "block_config"),
    }
    raw = {
        "act_block_h_override": 32 * _count(block, "act_block_h_ntiles", "block_config"),
        "transpose_shards": bool(orientation and orientation.group(1) == "COL_MAJOR"),
        "enable_act_double_buffer": flag(attrs.get("enable_act_double_buffer", "")) or False,
        "enable_weights_double_buffer": flag(attrs.get("enable_weights_double_buffer", "")) or False,
        "memory": sharding,
        "compute": compute,
    }
    try:
        config = parse_conv_config(raw, "conv2d config")
    except ConfigError as exc:
        raise RowSkip(str(exc)) from None
    out_format = tensor_format(row, "OUTPUT_0")
    formats = {"in0": out_format, "in1": tensor_format(row, "INPUT_1", out_format), "out": out_format}
    bias = (attrs.get("has_bias", "").strip().lower() == "true") and row.shape("INPUT_2") is not None
    if bias:
        formats["bias"] = tensor_format(row, "INPUT_2", out_format)
    shape = {"M": out[0] * out[1] * out[2], "N": channels, "KH": kh, "KWC": k_padded // kh}
    return OpReading(
        kernel=KERNEL,
        shape=shape,
        model_shape=shape,
        dtype=out_format,
        formats=formats,
        grid=None,
        fp32_acc=bool(compute.get("fp32_dest_acc_en")),
        note=f"{shard_layout.lower().replace('_', '-')} conv as its implicit GEMM (K = {k_padded // 32} tiles)",
        config=config,
        bias=bias,
        activation=fused_activation(attrs.get("activation", ""))
        or ("relu" if flag(attrs.get("fuse_relu", "")) else None),
    )


def _activation(attrs: dict[str, str]) -> str | None:
    """The fused activation: ``activation`` (a ``UnaryWithParam``), or older ttnn's ``fuse_relu``."""
    return fused_activation(attrs.get("activation", "")) or ("relu" if flag(attrs.get("fuse_relu", "")) else None)


def _padded(text: str) -> int:
    """``"96[27]"`` -> 96: the padded extent (the weight matrix ttnn laid out)."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:\[\s*\d+\s*\])?\s*", text)
    if m is None:
        from loom_explorer.accuracy.csv_input import CellError

        raise CellError(text, "not a tensor extent (N or padded[logical])")
    return int(m.group(1))


ACCURACY = AccuracyOps(
    name="convolution",
    op_codes=CONV_OP_CODES | WINDOW_OP_SKIPS.keys() | {HALO_OP_CODE, UPSAMPLE_OP_CODE},
    kernels=(KERNEL, HALO_KERNEL, UPSAMPLE_KERNEL),
    read_configured=read_conv,
    no_math_op_codes=frozenset({HALO_OP_CODE, UPSAMPLE_OP_CODE}),
    # no ops_phrase: the reason an unclaimed row is skipped keeps listing the ops it listed before
)
