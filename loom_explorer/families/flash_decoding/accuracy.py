"""The ``sdpa_decode`` rows of a device-profiler report (``SdpaDecodeDeviceOperation``): ttnn's
``scaled_dot_product_attention_decode``, read as attention's ``flash_attention`` kernel with one query row, which
this family's TTNN op takes over (``ttnn.py``, ``ttnn_config.py``) (``accuracy/op_mapping.py``: ``ACCURACY``
plugs into ``loom_explorer.accuracy_ops``).

A row's tensors (``sdpa_decode_device_operation.cpp`` / ``sdpa_decode_program_factory.cpp``,
tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/transformer/sdpa_decode/device/`` @91b3892f):

* INPUT_0 the queries ``[1, B, H, D]`` (Z the batch ``B``, Y the query heads ``H`` (their padded extent when the
  logical one is not given), X the head dim ``D``);
* INPUT_1 / INPUT_2 the key / value cache: ``[B, Hkv, Skv, D]``, or with ``paged_attention`` true a paged cache
  ``[blocks, Hkv, block_size, D]`` whose page table (the last input, ``[B, max_blocks_per_seq]``) gives each user
  ``max_blocks_per_seq * block_size`` cache positions;
* ``cur_pos`` (or the ``cur_pos`` tensor): how far each user has decoded. The kernel reads only the key chunks up
  to it, but a position tensor's values are not in the report (the ``cur_pos`` attribute is then ``{}``): the op
  is costed over the whole cache length ``Skv`` (a user's capacity), an upper bound, said in the note;
* ``program_config``: an ``SDPAProgramConfig`` (its ``compute_with_storage_grid_size`` is the grid, its
  ``k_chunk_size`` and ``max_cores_per_head_batch`` ttnn's decode work split: ``ttnn_config.py``); without one
  the op runs ttnn's default (``ttnn_config.ttnn_default_decode_config``).

The decode problem is ``B, H, Hkv, Sq=1, Skv, D`` (not causal: the kernel's ``is_causal`` means "up to
``cur_pos``", which the cost already bounds by the whole cache).
"""

from __future__ import annotations

from loom_explorer.accuracy.capture import (
    NO_VALUE,
    OpReading,
    ProfilerRow,
    RowSkip,
    core_grid,
    flag,
    parse_struct,
    tensor_format,
    whole_or_none,
)
from loom_explorer.accuracy.op_mapping import AccuracyOps
from loom_explorer.families.attention.published import KERNEL
from loom_explorer.families.attention.ttnn_config import TtnnSdpaConfig

SDPA_DECODE_OP_CODES = frozenset({"sdpadecodedeviceoperation", "sdpadecodeoperation", "sdpadecode"})


def _logical(row: ProfilerRow, tensor: str, axis: str) -> int | None:
    """``tensor``'s logical extent on ``axis`` (``W``, ``Z``, ``Y``, ``X``), its padded one when the row gives
    no logical one; None when the row has no such cell."""
    text = row.get(f"{tensor}_{axis}_PAD[LOGICAL]", f"{tensor}_{axis}").strip()
    if not text:
        return None
    head, _, tail = text.partition("[")
    value = whole_or_none(tail.rstrip("]") if tail else head)
    if value is None:
        raise RowSkip(f"{tensor}_{axis} {text!r} is not an extent")
    return value


def _extent(row: ProfilerRow, tensor: str, axis: str) -> int:
    value = _logical(row, tensor, axis)
    if value is None:
        raise RowSkip(f"sdpa_decode needs {tensor}'s {axis} extent")
    return value


def _last_input(row: ProfilerRow) -> str:
    """The last INPUT_<n> the row gives a shape of (a paged decode's page table)."""
    n = 3
    while _logical(row, f"INPUT_{n + 1}", "X") is not None:
        n += 1
    return f"INPUT_{n}"


def _config(attrs: dict[str, str]) -> TtnnSdpaConfig | None:
    """The ``SDPAProgramConfig`` the row ran; None when it names none; RowSkip for one the model cannot read."""
    text = attrs.get("program_config", "")
    if text.lower() in NO_VALUE:
        return None
    parsed = parse_struct(text)
    if parsed is None or parsed[0] != "SDPAProgramConfig":
        raise RowSkip(f"program_config {text[:80]!r} is not an SDPAProgramConfig")
    fields = parsed[1]
    grid = core_grid(fields.get("compute_with_storage_grid_size", ""))
    if grid is None:
        raise RowSkip("SDPAProgramConfig has no compute_with_storage_grid_size")
    sizes: dict[str, int | None] = {}
    for key in ("q_chunk_size", "k_chunk_size", "max_cores_per_head_batch"):
        value = fields.get(key, "")
        sizes[key] = None if value.lower() in NO_VALUE else whole_or_none(value)
        if value.lower() not in NO_VALUE and sizes[key] is None:
            raise RowSkip(f"SDPAProgramConfig {key}={value!r} is not a whole number")
    k_chunk = sizes["k_chunk_size"]
    if not k_chunk or k_chunk % 32:
        raise RowSkip(f"SDPAProgramConfig k_chunk_size={k_chunk} is not a multiple of 32")
    return TtnnSdpaConfig(
        compute_with_storage_grid_size=grid,
        q_chunk_size=sizes["q_chunk_size"] or 32,
        k_chunk_size=k_chunk,
        max_cores_per_head_batch=sizes["max_cores_per_head_batch"],
    )


def read_sdpa_decode(row: ProfilerRow, attributes: str, attrs: dict[str, str], compute: dict[str, object]) -> OpReading:
    """What an ``sdpa_decode`` row says of its op (module docstring); RowSkip otherwise."""
    if flag(attrs.get("use_mla", "")):
        raise RowSkip("multi-latent attention (use_mla) decode: k and v of different widths are not modelled")
    b, h, d = _extent(row, "INPUT_0", "Z"), _extent(row, "INPUT_0", "Y"), _extent(row, "INPUT_0", "X")
    hkv, dk = _extent(row, "INPUT_1", "Z"), _extent(row, "INPUT_1", "X")
    notes = []
    if flag(attrs.get("paged_attention", "")):
        table = _last_input(row)
        users, blocks = _extent(row, table, "Y"), _extent(row, table, "X")
        if users != b:
            raise RowSkip(f"page table {table} has {users} users for a batch of {b}")
        skv = blocks * _extent(row, "INPUT_1", "Y")
        notes.append(f"paged cache: {blocks} blocks of {_extent(row, 'INPUT_1', 'Y')} positions a user")
    else:
        bk, skv = _extent(row, "INPUT_1", "W"), _extent(row, "INPUT_1", "Y")
        if bk != b:
            raise RowSkip(f"k cache batch {bk} is not q's {b}")
    if dk != d or h % hkv:
        raise RowSkip(
            f"q [1, {b}, {h}, {d}] and k heads {hkv} of width {dk} do not form an attention "
            "(same head dim, k heads dividing q heads)"
        )
    if attrs.get("cur_pos", "").strip() in ("", "{}", "[]"):
        notes.append(
            f"cur_pos is a device tensor the report does not give: costed over the whole cache ({skv} positions), "
            "an upper bound"
        )
    else:
        notes.append(f"cur_pos {attrs['cur_pos']}: costed over the whole cache ({skv} positions), an upper bound")
    config = _config(attrs)
    if config is None:
        notes.append("no SDPAProgramConfig: predicted with ttnn's sdpa_decode default")
    dtype = tensor_format(row, "INPUT_0")
    shape = {"B": b, "H": h, "Hkv": hkv, "Sq": 1, "Skv": skv, "D": d}
    return OpReading(
        kernel=KERNEL,
        shape=shape,
        model_shape=shape,
        dtype=dtype,
        formats={
            "q": dtype,
            "k": tensor_format(row, "INPUT_1", dtype),
            "v": tensor_format(row, "INPUT_2", dtype),
            "o": tensor_format(row, "OUTPUT_0", dtype),
        },
        grid=config.compute_with_storage_grid_size if config else None,
        fp32_acc=bool(compute.get("fp32_dest_acc_en")),
        note="; ".join(notes),
        config=config,
        q_chunk_size=config.q_chunk_size if config else None,
        k_chunk_size=config.k_chunk_size if config else None,
    )


ACCURACY = AccuracyOps(
    name="flash_decoding",
    op_codes=SDPA_DECODE_OP_CODES,
    read_configured=read_sdpa_decode,
    ops_phrase="SDPA decode",
)
