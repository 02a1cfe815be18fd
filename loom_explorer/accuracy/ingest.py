"""Ingest a Tenstorrent device-profiler report (``ops_perf_results_<timestamp>.csv``): ``loom-explorer ingest``.

tt-metal's ``tt_metal/tools/profiler/process_ops_logs.py`` (run by ``python -m tracy``) writes one row per
device op, host op and signpost, with every ``,`` inside a cell replaced by ``;``. Each row is either
ingested (a matmul or SDPA op the model can describe) or skipped with the reason; row numbers are the
file's line numbers (the header is line 1; blank lines are not rows).

Columns are found by header name -- case, spaces and ``_`` do not matter -- never by position, so the
column order and the extra or missing optional columns of other tt-metal versions do not matter:

Required (else ``IngestError``):

* ``OP CODE``: ``Matmul`` / ``MatmulDeviceOperation`` -> ``gemm``; ``ScaledDotProductAttention`` /
  ``SDPAOperation`` -> ``flash_attention``; any other op is skipped;
* ``DEVICE KERNEL DURATION [ns]``: the measured latency (empty or ``-``: a host op, skipped);
* ``INPUT_0_Y`` and ``INPUT_0_X`` -- shapes are ``INPUT_<i>_{W,Z,Y,X}`` (older tt-metal) or
  ``INPUT_<i>_{W,Z,Y,X}_PAD[LOGICAL]`` with ``padded[logical]`` cells, of which the logical extent is used.

Optional:

* ``INPUT_<i>_DATATYPE``, ``OUTPUT_0_DATATYPE``: ``BFLOAT16`` / ``BFLOAT8_B`` / ``BFLOAT4_B`` / ``FLOAT32``
  -> DataFormat (an empty output or extra input takes in0's);
* ``INPUT_<i>_MEMORY``, ``OUTPUT_0_MEMORY``: ``DEV_<id>_DRAM_INTERLEAVED`` -> ``DRAM``,
  ``DEV_<id>_L1_{BLOCK,HEIGHT,WIDTH}_SHARDED`` -> ``L1_..._SHARDED``; other kinds (L1-interleaved,
  DRAM-sharded) are skipped; an absent column means DRAM, said in the op's note;
* ``MATH FIDELITY``: ``LoFi`` / ``HiFi2`` / ``HiFi3`` / ``HiFi4`` (else the compute kernel config's);
* ``ATTRIBUTES``: ``{'name': 'value'; ...}``, of which ``program_config``, ``compute_kernel_config``
  (``fp32_dest_acc_en``), ``transpose_a`` / ``transpose_b`` and ``is_causal`` are read;
* ``CORE COUNT``, ``DEVICE ID``, ``DEVICE ARCH`` are kept with the op; ``OP TYPE`` ``signpost`` rows are skipped.

A program config prints as ``Name(field=value;...)`` with nested ``(...)``, ``[...]``, ``{...}``; its
``compute_with_storage_grid_size`` as ``(x=8;y=8)`` (older ttnn) or ``8-8`` (newer), flags as ``0``/``1``.

Matmul: in0 = INPUT_0 ``[W, Z, M, K]``, in1 = INPUT_1 ``[.., K, N]`` (swapped by ``transpose_a/b``), bias =
INPUT_2 when present, out = OUTPUT_0; the config becomes a ``TtnnMatmulConfig`` (2-D or 1-D multicast only:
other config classes, ``gather_in0``, no config are skipped), its ``fused_activation`` the problem's. A
batch ``W*Z > 1`` of in0 with an unbatched in1 and ``fuse_batch`` is folded into M, as ttnn does; other
batched matmuls are ingested but not predicted.
SDPA: q = INPUT_0 ``[B, H, Sq, D]``, k = INPUT_1 ``[B, Hkv, Skv, D]``; ``is_causal`` and the
``SDPAProgramConfig`` chunk sizes (none: ttnn's default, 32-element chunks on the whole grid).

``record_report`` predicts every op with its own config (``evaluate_config`` / ``evaluate_sdpa_config``,
the referee) on ``--hw`` restricted to the config's grid, and stores it beside the measured kernel
duration (source ``report``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from loom_explorer.accuracy.ttnn_configs import (
    ConfigError,
    TtnnMatmulConfig,
    candidate_name,
    evaluate_config,
    parse_config,
    placements,
)
from loom_explorer.accuracy.sdpa_configs import TtnnSdpaConfig, evaluate_sdpa_config, ttnn_default_sdpa_config
from loom_explorer.deploy.store import Measurement, ResultsStore
from loom_explorer.export.schedule_json import hardware_sha256
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.grid import restrict_grid
from loom_explorer.hardware.schema import DataFormat, Fidelity, HardwareSpec
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program

Kernel = Literal["gemm", "flash_attention"]
OP_CODE, DURATION, ATTRIBUTES = "OP CODE", "DEVICE KERNEL DURATION [ns]", "ATTRIBUTES"
MATMUL_OPS = {"matmul", "matmuldeviceoperation"}
SDPA_OPS = {"scaleddotproductattention", "scaleddotproductattentiondeviceoperation", "sdpaoperation"}
MAPPED_CONFIGS = ("MatmulMultiCoreReuseMultiCastProgramConfig", "MatmulMultiCoreReuseMultiCast1DProgramConfig")
DTYPES = {"BFLOAT16": DataFormat.bfloat16, "BFLOAT8_B": DataFormat.bfloat8_b, "BFLOAT4_B": DataFormat.bfloat4_b,
          "FLOAT32": DataFormat.float32}
MEMORY = {"DRAM_INTERLEAVED": "DRAM", "L1_BLOCK_SHARDED": "L1_BLOCK_SHARDED",
          "L1_HEIGHT_SHARDED": "L1_HEIGHT_SHARDED", "L1_WIDTH_SHARDED": "L1_WIDTH_SHARDED"}
ARCH_HARDWARE = {"wormhole": "wormhole_n150", "blackhole": "blackhole_p150a"}
NO_VALUE = {"", "-", "std::nullopt", "nullopt", "none"}


class IngestError(ValueError):
    """A report that cannot be read at all; the message names the file (and the column)."""


class _Skip(Exception):
    """A row the model cannot use; the message is the reason."""


@dataclass(frozen=True, slots=True)
class IngestedOp:
    """One matmul or SDPA op of the report, as the model sees it. ``model_shape`` is the problem shape the
    model evaluates (batch folded into M), ``None`` when it cannot (``note`` says why)."""

    row: int
    op_code: str
    kernel: Kernel
    shape: dict[str, int]
    dtype: DataFormat
    formats: dict[str, DataFormat]
    fidelity: Fidelity
    config: TtnnMatmulConfig | None
    causal: bool
    q_chunk_size: int | None
    k_chunk_size: int | None
    device_kernel_ns: float
    core_count: int | None
    model_shape: dict[str, int] | None = None
    grid: tuple[int, int] | None = None
    fp32_acc: bool = False
    bias: bool = False
    activation: str | None = None
    device_id: int | None = None
    device_arch: str | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class SkippedRow:
    row: int
    op_code: str
    reason: str

    def __str__(self) -> str:
        return f"row {self.row}{f' ({self.op_code})' if self.op_code else ''}: {self.reason}"


@dataclass(frozen=True, slots=True)
class IngestReport:
    file: Path
    ops: tuple[IngestedOp, ...]
    skipped: tuple[SkippedRow, ...]


# ---- cells -------------------------------------------------------------------------------------------

def _key(name: str) -> str:
    """Header names compare without case, spaces or ``_``."""
    return re.sub(r"[\s_]+", "", name).upper()


class _Row:
    def __init__(self, columns: dict[str, int], cells: list[str]) -> None:
        self.columns, self.cells = columns, cells

    def get(self, *names: str) -> str:
        for name in names:
            i = self.columns.get(_key(name))
            if i is not None and i < len(self.cells) and self.cells[i].strip():
                return self.cells[i].strip()
        return ""

    def shape(self, tensor: str) -> tuple[int, int, int, int] | None:
        """Logical ``(W, Z, Y, X)`` of ``tensor`` (e.g. ``INPUT_0``); None when the row has no such tensor."""
        dims = [_logical(self.get(f"{tensor}_{a}_PAD[LOGICAL]", f"{tensor}_{a}"), f"{tensor}_{a}") for a in "WZYX"]
        if dims[2] is None or dims[3] is None:
            return None
        return (dims[0] or 1, dims[1] or 1, dims[2], dims[3])


def _logical(text: str, column: str) -> int | None:
    """``"32[19]"`` (padded[logical]) -> 19; ``"19"`` -> 19; empty -> None."""
    if text.lower() in NO_VALUE:
        return None
    m = re.fullmatch(r"(\d+)\s*(?:\[\s*(\d+)\s*\])?", text)
    if m is None:
        raise _Skip(f"{column} {text!r} is not a tensor extent")
    return int(m.group(2) or m.group(1))


def _int(text: str) -> int | None:
    return int(text) if re.fullmatch(r"\d+", text.strip()) else None


def _flag(text: str) -> bool | None:
    return {"1": True, "true": True, "0": False, "false": False}.get(text.strip().lower())


# ---- ATTRIBUTES --------------------------------------------------------------------------------------

_ATTR = re.compile(r"'([^']*)'\s*:\s*'(.*?)'(?=\s*[;,]\s*'[^']*'\s*:|\s*$)", re.DOTALL)
_STRUCT = re.compile(r"(?:[\w:]*::)?(\w+)\s*\((.*)\)", re.DOTALL)


def parse_attributes(text: str) -> dict[str, str]:
    """``{'name': 'value'; ...}`` -> ``{name: value}`` (values unparsed)."""
    body = text.strip().removeprefix("{").removesuffix("}")
    return {m.group(1).strip(): m.group(2).strip() for m in _ATTR.finditer(body)}


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch in "([{") - (ch in ")]}")
        if ch in ";," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [p.strip() for p in [*parts, text[start:]] if p.strip()]


def parse_struct(text: str) -> tuple[str, dict[str, str]] | None:
    """``ns::Name(a=1;b=(x=8;y=8))`` -> ``("Name", {"a": "1", "b": "(x=8;y=8)"})``; None if not that form."""
    m = _STRUCT.fullmatch(text.strip())
    if m is None:
        return None
    fields = {}
    for part in _split_top(m.group(2)):
        key, eq, value = part.partition("=")
        if eq:
            fields[key.strip()] = value.strip()
    return m.group(1), fields


def _grid(text: str) -> tuple[int, int] | None:
    """``(x=8;y=8)``, ``CoreCoord(x=8, y=8)`` or ``8-8`` -> (8, 8): (columns, rows)."""
    m = re.search(r"x\s*=\s*(\d+)\D+?y\s*=\s*(\d+)", text) or \
        re.fullmatch(r"\s*[({\[]?\s*(\d+)\s*[-;,]\s*(\d+)\s*[)}\]]?\s*", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _compute(attrs: dict[str, str]) -> dict[str, object]:
    parsed = parse_struct(attrs.get("compute_kernel_config", ""))
    if parsed is None:
        return {}
    out: dict[str, object] = {}
    for key, value in parsed[1].items():
        if key == "math_fidelity":
            out[key] = value.split("::")[-1]
        elif key in ("math_approx_mode", "fp32_dest_acc_en", "packer_l1_acc", "dst_full_sync_en"):
            out[key] = _flag(value)
    return out


def _activation(text: str) -> str | None:
    if text.strip().lower() in NO_VALUE:
        return None
    m = re.search(r"UnaryOpType::(\w+)", text) or re.search(r"\(\s*([A-Za-z_]+)\s*[;,)]", text)
    if m is None:
        raise _Skip(f"fused_activation {text!r} is not readable")
    return m.group(1).lower()


# ---- rows --------------------------------------------------------------------------------------------

def _dtype(row: _Row, tensor: str, default: DataFormat | None = None) -> DataFormat:
    text = row.get(f"{tensor}_DATATYPE", f"{tensor}_DATA TYPE").split("::")[-1].upper()
    if not text and default is not None:
        return default
    if text not in DTYPES:
        raise _Skip(f"{tensor}_DATATYPE {text or 'empty'!r} is not a data format the model knows "
                    f"({', '.join(DTYPES)})")
    return DTYPES[text]


def _memory(row: _Row, tensor: str, notes: list[str]) -> str:
    text = row.get(f"{tensor}_MEMORY").upper()
    if not text:
        notes.append(f"{tensor}_MEMORY absent: assumed DRAM")
        return "DRAM"
    m = re.fullmatch(r"(?:DEV_\d+_)?((?:DRAM|L1)_\w+)", text)
    if m is None or m.group(1) not in MEMORY:
        raise _Skip(f"{tensor}_MEMORY {text}: the model maps DRAM-interleaved or L1-sharded operands only")
    return MEMORY[m.group(1)]


def _fidelity(row: _Row, compute: dict[str, object]) -> Fidelity:
    text = (row.get("MATH FIDELITY") or str(compute.get("math_fidelity") or "")).split("::")[-1]
    try:
        return Fidelity(text.lower())
    except ValueError:
        raise _Skip(f"math fidelity {text or 'empty'!r} is not LoFi/HiFi2/HiFi3/HiFi4") from None


def _matmul_config(attrs: dict[str, str], memory: dict[str, str],
                   compute: dict[str, object]) -> tuple[TtnnMatmulConfig, bool, str | None]:
    """(config, fuse_batch, fused activation) from ATTRIBUTES' ``program_config``."""
    text = attrs.get("program_config", "")
    if text.lower() in NO_VALUE:
        raise _Skip("no program_config in ATTRIBUTES (ttnn picked one; the report does not say which)")
    parsed = parse_struct(text)
    if parsed is None:
        raise _Skip(f"program_config {text[:80]!r} is not a readable config")
    name, f = parsed
    if name not in MAPPED_CONFIGS:
        raise _Skip(f"program config {name} is not one the model maps ({' or '.join(MAPPED_CONFIGS)})")
    if _flag(f.get("gather_in0", "")):
        raise _Skip(f"{name} with gather_in0=1 (ring all-gather matmul) is not what the model maps")
    grid = _grid(f.get("compute_with_storage_grid_size", ""))
    if grid is None:
        raise _Skip(f"compute_with_storage_grid_size {f.get('compute_with_storage_grid_size', '')!r} is not readable")
    raw: dict[str, object] = {"program_config": name, "compute_with_storage_grid_size": grid, "memory": memory,
                              "compute": compute}
    for key in ("in0_block_w", "per_core_M", "per_core_N", "out_block_h", "out_block_w", "out_subblock_h",
                "out_subblock_w"):
        if _int(f.get(key, "")) is not None:
            raw[key] = _int(f[key])
    for key in ("transpose_mcast", "mcast_in0"):
        if _flag(f.get(key, "")) is not None:
            raw[key] = _flag(f[key])
    try:
        cfg = parse_config(raw, "program_config")
    except ConfigError as exc:
        raise _Skip(str(exc)) from None
    return cfg, bool(_flag(f.get("fuse_batch", ""))), _activation(f.get("fused_activation", ""))


def _matmul(row: _Row, attrs: dict[str, str], compute: dict[str, object]) -> dict[str, object]:
    a, b = row.shape("INPUT_0"), row.shape("INPUT_1")
    if a is None or b is None:
        raise _Skip("a matmul needs the shapes of INPUT_0 and INPUT_1")
    m, k = (a[3], a[2]) if _flag(attrs.get("transpose_a", "")) else (a[2], a[3])
    k1, n = (b[3], b[2]) if _flag(attrs.get("transpose_b", "")) else (b[2], b[3])
    if k != k1:
        raise _Skip(f"in0 has K={k} but in1 has K={k1}")
    notes: list[str] = []
    bias = row.shape("INPUT_2") is not None
    tensors = {"in0": "INPUT_0", "in1": "INPUT_1", "out": "OUTPUT_0", **({"bias": "INPUT_2"} if bias else {})}
    memory = {t: _memory(row, col, notes) for t, col in tensors.items()}
    dtype = _dtype(row, "INPUT_0")
    formats = {t: _dtype(row, col, dtype) for t, col in tensors.items()}
    cfg, fuse_batch, activation = _matmul_config(attrs, memory, compute)
    batch, in1_batch = a[0] * a[1], b[0] * b[1]
    shape = {"M": m, "K": k, "N": n, **({"batch": batch} if batch > 1 else {})}
    model_shape: dict[str, int] | None = {"M": m, "K": k, "N": n}
    if batch > 1 and in1_batch == 1 and fuse_batch:
        model_shape = {"M": batch * m, "K": k, "N": n}
        notes.append(f"batch {batch} folded into M={batch * m} (fuse_batch)")
    elif batch > 1 or in1_batch > 1:
        model_shape = None
        notes.append(f"not predicted: batched matmul (in0 batch {batch}, in1 batch {in1_batch}, fuse_batch "
                     f"{int(fuse_batch)}) and the model's gemm has no batch dimension")
    return {"kernel": "gemm", "shape": shape, "model_shape": model_shape, "dtype": dtype, "formats": formats,
            "config": cfg, "grid": cfg.compute_with_storage_grid_size, "bias": bias, "activation": activation,
            "fp32_acc": bool(compute.get("fp32_dest_acc_en")), "note": "; ".join(notes)}


def _sdpa(row: _Row, attrs: dict[str, str], compute: dict[str, object]) -> dict[str, object]:
    q, k = row.shape("INPUT_0"), row.shape("INPUT_1")
    if q is None or k is None:
        raise _Skip("SDPA needs the shapes of q (INPUT_0) and k (INPUT_1)")
    (b, h, sq, d), (bk, hkv, skv, dk) = q, k
    if (bk, dk) != (b, d) or h % hkv:
        raise _Skip(f"q [{b}, {h}, {sq}, {d}] and k [{bk}, {hkv}, {skv}, {dk}] do not form an attention "
                    "(same batch and head dim, k heads dividing q heads)")
    dtype = _dtype(row, "INPUT_0")
    formats = {"q": dtype, "k": _dtype(row, "INPUT_1", dtype), "v": _dtype(row, "INPUT_2", dtype),
               "o": _dtype(row, "OUTPUT_0", dtype)}
    q_chunk = k_chunk = grid = None
    text = attrs.get("program_config", "")
    if text.lower() not in NO_VALUE:
        parsed = parse_struct(text)
        if parsed is None or parsed[0] != "SDPAProgramConfig":
            raise _Skip(f"program_config {text[:80]!r} is not an SDPAProgramConfig")
        q_chunk, k_chunk = _int(parsed[1].get("q_chunk_size", "")), _int(parsed[1].get("k_chunk_size", ""))
        grid = _grid(parsed[1].get("compute_with_storage_grid_size", ""))
    shape = {"B": b, "H": h, "Hkv": hkv, "Sq": sq, "Skv": skv, "D": d}
    return {"kernel": "flash_attention", "shape": shape, "model_shape": shape, "dtype": dtype, "formats": formats,
            "causal": bool(_flag(attrs.get("is_causal", ""))), "q_chunk_size": q_chunk, "k_chunk_size": k_chunk,
            "grid": grid, "fp32_acc": bool(compute.get("fp32_dest_acc_en")),
            "note": "" if q_chunk else "no SDPAProgramConfig: predicted with ttnn's default (32-element chunks)"}


def _read_row(row: _Row, number: int, op_code: str) -> IngestedOp:
    if row.get("OP TYPE").lower() == "signpost":
        raise _Skip("signpost (a marker, not an op)")
    text = row.get(DURATION)
    if text.lower() in NO_VALUE:
        raise _Skip(f"{DURATION} is empty (host-only op or no device data)")
    try:
        duration_ns = float(text)
    except ValueError:
        raise _Skip(f"{DURATION} {text!r} is not a number") from None
    if not math.isfinite(duration_ns) or duration_ns <= 0:
        raise _Skip(f"{DURATION} {text!r} is not a positive duration")
    name = op_code.split("::")[-1].lower()
    if name not in MATMUL_OPS | SDPA_OPS:
        if "matmul" in name or "sdpa" in name or "scaleddotproduct" in name:
            raise _Skip("a matmul/SDPA variant the model does not map (only Matmul[DeviceOperation], "
                        "ScaledDotProductAttention / SDPAOperation)")
        raise _Skip("not a matmul or SDPA op")
    attrs = parse_attributes(row.get(ATTRIBUTES))
    compute = _compute(attrs)
    fidelity = _fidelity(row, compute)
    parts = _matmul(row, attrs, compute) if name in MATMUL_OPS else _sdpa(row, attrs, compute)
    defaults = {"config": None, "causal": False, "q_chunk_size": None, "k_chunk_size": None}
    return IngestedOp(row=number, op_code=op_code, fidelity=fidelity, device_kernel_ns=duration_ns,
                      core_count=_int(row.get("CORE COUNT")), device_id=_int(row.get("DEVICE ID")),
                      device_arch=row.get("DEVICE ARCH") or None, **{**defaults, **parts})  # type: ignore[arg-type]


def _text(p: Path) -> str:
    if not p.exists():
        raise IngestError(f"{p}: no such file")
    if not p.is_file():
        raise IngestError(f"{p}: not a regular file")
    try:
        text = p.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise IngestError(f"{p}: not a CSV file (not UTF-8 text)") from None
    except OSError as exc:
        raise IngestError(f"{p}: cannot read ({exc.strerror})") from None
    if "\x00" in text:
        raise IngestError(f"{p}: not a CSV file (binary content)")
    if not text.strip():
        raise IngestError(f"{p}: empty file (no header)")
    return text


def read_ops_perf(path: str | Path) -> IngestReport:
    """Every row of an ``ops_perf_results_*.csv``, ingested or skipped with the reason (module docstring)."""
    p = Path(path)
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 24))  # ATTRIBUTES cells can be long
    reader = csv.reader(io.StringIO(_text(p), newline=""))
    ops: list[IngestedOp] = []
    skipped: list[SkippedRow] = []
    try:
        header = next(reader)
        columns: dict[str, int] = {}
        for i, name in enumerate(header):
            columns.setdefault(_key(name), i)
        required = {OP_CODE: [OP_CODE], DURATION: [DURATION],
                    **{f"INPUT_0_{a} (or INPUT_0_{a}_PAD[LOGICAL])": [f"INPUT_0_{a}", f"INPUT_0_{a}_PAD[LOGICAL]"]
                       for a in "YX"}}
        missing = [name for name, alts in required.items() if not any(_key(alt) in columns for alt in alts)]
        if missing:
            raise IngestError(f"{p}: required column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                              "missing (not an ops_perf_results CSV of tt-metal's device profiler?)")
        last_line = reader.line_num
        for cells in reader:
            number, last_line = last_line + 1, reader.line_num
            if not any(c.strip() for c in cells):
                continue
            row = _Row(columns, cells)
            op_code = row.get(OP_CODE)
            try:
                ops.append(_read_row(row, number, op_code))
            except _Skip as why:
                skipped.append(SkippedRow(number, op_code, str(why)))
    except csv.Error as exc:
        raise IngestError(f"{p}: not a readable CSV file (line {reader.line_num}: {exc})") from None
    return IngestReport(p, tuple(ops), tuple(skipped))


# ---- predictions and the store -----------------------------------------------------------------------

def suggest_hardware(report: IngestReport) -> str | None:
    """The shipped hardware file for the report's ``DEVICE ARCH`` (None when it does not say)."""
    archs = {op.device_arch.lower().split("_")[0] for op in report.ops if op.device_arch}
    return ARCH_HARDWARE.get(archs.pop()) if len(archs) == 1 else None


def report_measurements(report: IngestReport, hw_name: str) -> list[Measurement]:
    """Every ingested op as a results-store entry: matmuls predicted with their own config on ``hw_name``
    restricted to the config's grid; SDPA measured only."""
    base = load_hardware(hw_name)
    return [_measurement(report, op, base) for op in report.ops]


def record_report(report: IngestReport, hw_name: str, store: ResultsStore) -> list[int]:
    """Record ``report_measurements`` in ``store``; the new row ids."""
    return [store.record(m) for m in report_measurements(report, hw_name)]


def _measurement(report: IngestReport, op: IngestedOp, base: HardwareSpec) -> Measurement:
    notes = [f"{report.file.name} row {op.row} ({op.op_code})", *filter(None, [op.note])]
    family = base.name.split("_")[0]
    if op.device_arch and not op.device_arch.lower().startswith(family):
        notes.append(f"the report ran on {op.device_arch}; predicted on {base.name}")
    hw, evaluated = base, None
    try:
        if op.grid:
            hw = restrict_grid(base, *op.grid)
        if op.kernel == "gemm" and op.config is not None and op.model_shape is not None:
            problem = make_problem(load_program("gemm"), op.model_shape, op.dtype, op.fidelity,
                                   formats=op.formats, placements=placements(op.config), fp32_acc=op.fp32_acc,
                                   enabled={"bias"} if op.bias else set(), activation=op.activation)
            evaluated = evaluate_config(hw, problem, op.config)
        elif op.kernel == "flash_attention" and op.model_shape is not None:
            problem = make_problem(load_program("flash_attention"), op.model_shape, op.dtype, op.fidelity,
                                   formats=op.formats, fp32_acc=op.fp32_acc,
                                   options={"causal"} if op.causal else set())
            sdpa = (TtnnSdpaConfig(compute_with_storage_grid_size=(hw.grid.columns, hw.grid.rows),
                                   q_chunk_size=op.q_chunk_size, k_chunk_size=op.k_chunk_size or op.q_chunk_size)
                    if op.q_chunk_size else ttnn_default_sdpa_config(hw))
            evaluated = evaluate_sdpa_config(hw, problem, sdpa)
    except ValueError as exc:  # ConfigError, ProblemError, a grid that does not fit: recorded unpredicted
        notes.append(f"not predicted: {exc}")
    sol = evaluated.result.solution if evaluated else None
    if evaluated and evaluated.result.conflict:
        notes.append(evaluated.result.conflict.message)
    if evaluated:
        candidate = evaluated.result.candidate_name
    elif op.config is not None:
        candidate = candidate_name(op.config)
    else:
        candidate = "SDPAProgramConfig" if op.q_chunk_size else "SDPA (ttnn default config)"
    document = {"source_file": str(report.file), "row": op.row, "op_code": op.op_code, "candidate": candidate,
                "params": evaluated.values if evaluated else {}, "dtype": op.dtype.value,
                "fidelity": op.fidelity.value, "ttnn_config": op.config.model_dump(mode="json") if op.config else None,
                "causal": op.causal, "q_chunk_size": op.q_chunk_size, "k_chunk_size": op.k_chunk_size}
    return Measurement(
        source="report", hardware=hw.name, hardware_sha256=hardware_sha256(hw), kernel=op.kernel,
        shape=dict(op.shape), candidate=candidate, schedule_json=json.dumps(document),
        predicted_cycles=sol.latency_cycles if sol else None,
        predicted_ns=hw.cycles_to_us(sol.latency_cycles) * 1e3 if sol else None,
        breakdown=dict(sol.breakdown) if sol else {}, measured_ns=op.device_kernel_ns,
        measured_what="device kernel duration", note="; ".join(notes))


def summary_json(report: IngestReport) -> dict[str, object]:
    """The ``ingest --json`` document: the file, every ingested op and every skipped row with its reason."""
    def op_json(op: IngestedOp) -> dict[str, object]:
        return {"row": op.row, "op_code": op.op_code, "kernel": op.kernel, "shape": op.shape,
                "model_shape": op.model_shape, "dtype": op.dtype.value,
                "formats": {t: f.value for t, f in op.formats.items()}, "fidelity": op.fidelity.value,
                "fp32_acc": op.fp32_acc, "config": op.config.model_dump(mode="json") if op.config else None,
                "grid": list(op.grid) if op.grid else None, "causal": op.causal, "q_chunk_size": op.q_chunk_size,
                "k_chunk_size": op.k_chunk_size, "device_kernel_ns": op.device_kernel_ns,
                "core_count": op.core_count, "device_id": op.device_id, "note": op.note}

    return {"file": str(report.file), "ingested": [op_json(op) for op in report.ops],
            "skipped": [{"row": s.row, "op_code": s.op_code, "reason": s.reason} for s in report.skipped],
            "counts": {"ingested": len(report.ops), "skipped": len(report.skipped)}}
