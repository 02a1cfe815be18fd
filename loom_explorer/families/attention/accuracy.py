"""The SDPA rows of a device-profiler report, the error-table family of the ``flash_attention`` kernel and its
published measurements (``published_runs.PUBLISHED``) (``accuracy/op_mapping.py``: ``ACCURACY`` plugs into
``loom_explorer.accuracy_ops``).

``ScaledDotProductAttention`` / ``ScaledDotProductAttentionDeviceOperation`` / ``SDPAOperation`` rows are this
family's; ``read_sdpa`` reads their shapes, formats and program config as ``accuracy/ingest.py``'s docstring
says. ``RingJointSDPADeviceOperation`` rows (one per device of a ring) are read alike as the device's local
SDPA with its place in the ring (``ring_accuracy.py``), predicted per device (``ring_predict.py``). An op with
one query row is ttnn's decode op (``sdpa_decode`` in ``model_error.csv``), any other its prefill op (``sdpa``).
"""

from __future__ import annotations

from collections.abc import Mapping

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
from loom_explorer.families.attention.published import ERROR_FAMILY, KERNEL
from loom_explorer.families.attention.published_runs import PUBLISHED
from loom_explorer.families.attention.ring_accuracy import RING_JOINT_OP_CODES, read_ring_joint

SDPA_OP_CODES = frozenset({"scaleddotproductattention", "scaleddotproductattentiondeviceoperation", "sdpaoperation"})
OP_CODES = SDPA_OP_CODES | RING_JOINT_OP_CODES


def error_family(kernel: str, shape: Mapping[str, int]) -> str | None:
    """``sdpa_decode`` (one query row) or ``sdpa`` for the ``flash_attention`` kernel, None for any other."""
    if kernel != KERNEL:
        return None
    return "sdpa_decode" if shape.get("Sq") == 1 else ERROR_FAMILY


def read_sdpa(row: ProfilerRow, attributes: str, attrs: dict[str, str], compute: dict[str, object]) -> OpReading:
    """What an SDPA row says of its op (module docstring of ``accuracy/ingest.py``); RowSkip otherwise."""
    q, k = row.shape("INPUT_0"), row.shape("INPUT_1")
    if q is None or k is None:
        raise RowSkip("SDPA needs the shapes of q (INPUT_0) and k (INPUT_1)")
    (b, h, sq, d), (bk, hkv, skv, dk) = q, k
    if (bk, dk) != (b, d) or h % hkv:
        raise RowSkip(
            f"q [{b}, {h}, {sq}, {d}] and k [{bk}, {hkv}, {skv}, {dk}] do not form an attention "
            "(same batch and head dim, k heads dividing q heads)"
        )
    dtype = tensor_format(row, "INPUT_0")
    formats = {
        "q": dtype,
        "k": tensor_format(row, "INPUT_1", dtype),
        "v": tensor_format(row, "INPUT_2", dtype),
        "o": tensor_format(row, "OUTPUT_0", dtype),
    }
    q_chunk = k_chunk = grid = None
    text = attrs.get("program_config", "")
    if text.lower() not in NO_VALUE:
        parsed = parse_struct(text)
        if parsed is None or parsed[0] != "SDPAProgramConfig":
            raise RowSkip(f"program_config {text[:80]!r} is not an SDPAProgramConfig")
        chunks = {key: parsed[1].get(key, "") for key in ("q_chunk_size", "k_chunk_size")}
        for key, value in chunks.items():
            if value and whole_or_none(value) is None:
                raise RowSkip(f"SDPAProgramConfig {key}={value!r} is not a whole number")
        q_chunk, k_chunk = whole_or_none(chunks["q_chunk_size"]), whole_or_none(chunks["k_chunk_size"])
        grid = core_grid(parsed[1].get("compute_with_storage_grid_size", ""))
    shape = {"B": b, "H": h, "Hkv": hkv, "Sq": sq, "Skv": skv, "D": d}
    reading = OpReading(
        kernel=KERNEL,
        shape=shape,
        model_shape=shape,
        dtype=dtype,
        formats=formats,
        options=frozenset({"causal"}) if flag(attrs.get("is_causal", "")) else frozenset(),
        q_chunk_size=q_chunk,
        k_chunk_size=k_chunk,
        grid=grid,
        fp32_acc=bool(compute.get("fp32_dest_acc_en")),
        note="" if q_chunk else "no SDPAProgramConfig: predicted with ttnn's default (32-element chunks)",
    )
    if row.get("OP CODE").split("::")[-1].lower() in RING_JOINT_OP_CODES:
        return read_ring_joint(reading, row, attrs)
    return reading


ACCURACY = AccuracyOps(
    name="attention",
    op_codes=OP_CODES,
    kernels=(KERNEL,),
    error_family=error_family,
    read_configured=read_sdpa,
    op_words=("sdpa", "scaleddotproduct", "attention"),
    published=PUBLISHED,
    ops_phrase="SDPA",
    unmapped_variant=(
        "an SDPA variant the model does not map (only ScaledDotProductAttention / SDPAOperation / "
        "RingJointSDPADeviceOperation)"
    ),
)
