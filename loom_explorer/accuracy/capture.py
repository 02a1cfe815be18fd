"""The cells, ATTRIBUTES and rows of a device-profiler report (``ops_perf_results_*.csv``), as ``ingest``
reads them (its docstring gives the columns): header names compared without case, spaces or ``_``; tensor
extents ``padded[logical]``; ``{'name': 'value'; ...}`` attributes and ``Name(field=value;...)`` program
configs; a tensor's data format and memory, the math fidelity. A row the model cannot use is a ``RowSkip``
(the message is the reason); a number cell that is not what its column means is a ``BadCell``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TypeVar

from loom_explorer.accuracy.csv_input import CellError, positive_int
from loom_explorer.hardware.schema import DataFormat, Fidelity
from loom_explorer.problem import Placement
from loom_explorer.targets.ttnn.config import TtnnConfig
from loom_explorer.targets.ttnn.op import RingAttentionCall

DTYPES = {
    "BFLOAT16": DataFormat.bfloat16,
    "BFLOAT8_B": DataFormat.bfloat8_b,
    "BFLOAT4_B": DataFormat.bfloat4_b,
    "FLOAT32": DataFormat.float32,
}
MEMORY = {
    "DRAM_INTERLEAVED": "DRAM",
    "L1_INTERLEAVED": "L1_INTERLEAVED",
    "L1_BLOCK_SHARDED": "L1_BLOCK_SHARDED",
    "L1_HEIGHT_SHARDED": "L1_HEIGHT_SHARDED",
    "L1_WIDTH_SHARDED": "L1_WIDTH_SHARDED",
}
NO_VALUE = {"", "-", "std::nullopt", "nullopt", "none"}
T = TypeVar("T")


class RowSkip(Exception):
    """A row the model cannot use; the message is the reason."""


# ---- cells -------------------------------------------------------------------------------------------


@lru_cache(maxsize=1024)
def header_key(name: str) -> str:
    """Header names compare without case, spaces or ``_``."""
    return re.sub(r"[\s_]+", "", name).upper()


class Columns:
    """The header: a name (any case, spaces, ``_``) -> the first column of that name, and its header text."""

    def __init__(self, header: list[str]) -> None:
        self.header = header
        self.index: dict[str, int] = {}
        for i, name in enumerate(header):
            self.index.setdefault(header_key(name), i)
        self._found: dict[tuple[str, ...], tuple[int, ...]] = {}

    def __contains__(self, name: str) -> bool:
        return header_key(name) in self.index

    def find(self, names: tuple[str, ...]) -> tuple[int, ...]:
        """The columns of ``names`` that the header has, in the order given."""
        found = self._found.get(names)
        if found is None:
            found = self._found[names] = tuple(self.index[header_key(n)] for n in names if header_key(n) in self.index)
        return found


class BadCell(Exception):
    """A number cell of an ingested row that is not what its column means (module docstring)."""

    def __init__(self, column: str, error: CellError) -> None:
        super().__init__(f"column {column}: {error}")
        self.column, self.error = column, error


OUTPUT_MEMORY_CONFIGS = ("output_mem_config", "output_memory_config", "memory_config")
"""The ATTRIBUTES an op prints its output's memory config under, in the order looked for."""


@dataclass(frozen=True, slots=True)
class PriorOutput:
    """The first output of the device op the report lists just before a row on the same device, as that op's
    row prints it: the tensor's logical shape and ``OUTPUT_0_MEMORY`` cell, and the op's ATTRIBUTES.

    The report names no tensors. A row whose input has this shape and memory is read as taking the previous
    op's output (the ops of a model run in order, each usually feeding the next), so it may use what only
    that op printed of the tensor: its memory config's shard spec, which an input's own cells do not print.
    Nothing else is assumed: a row whose input does not match it has no prior output."""

    shape: tuple[int, int, int, int] | None
    memory: str
    attributes: str

    def memory_config(self) -> str:
        """The op's printed output memory config (``OUTPUT_MEMORY_CONFIGS``); ``""`` when it prints none."""
        attrs, _ = attributes_of(self.attributes)
        return next((attrs[k] for k in OUTPUT_MEMORY_CONFIGS if attrs.get(k, "").lower() not in NO_VALUE), "")


class ProfilerRow:
    def __init__(self, columns: Columns, cells: list[str], prior: PriorOutput | None = None) -> None:
        self.columns, self.cells = columns, cells
        self.prior = prior  # the previous device op's output on the same device (``PriorOutput``)

    def prior_output(self, tensor: str) -> PriorOutput | None:
        """The previous device op's output (``PriorOutput``) when ``tensor`` (e.g. ``INPUT_0``) has its shape
        and memory cell, else None."""
        prior = self.prior
        if prior is None or not prior.memory or prior.memory != self.get(f"{tensor}_MEMORY"):
            return None
        try:
            shape = self.shape(tensor)
        except BadCell:
            return None
        return prior if shape is not None and shape == prior.shape else None

    def output_of_op(self) -> PriorOutput:
        """This row's first output as the next row on its device sees it (``PriorOutput``)."""
        try:
            shape = self.shape("OUTPUT_0")
        except BadCell:
            shape = None
        return PriorOutput(shape, self.get("OUTPUT_0_MEMORY"), self.get("ATTRIBUTES"))

    def cell(self, *names: str) -> tuple[str, str]:
        """(header name, stripped text) of the first of ``names`` with a non-empty cell; ``("", "")`` if none."""
        for i in self.columns.find(names):
            if i < len(self.cells) and self.cells[i].strip():
                return self.columns.header[i].strip(), self.cells[i].strip()
        return "", ""

    def get(self, *names: str) -> str:
        return self.cell(*names)[1]

    def number(self, parse: Callable[[str], T], *names: str) -> T | None:
        """The cell of ``names`` read by ``parse`` (``csv_input``); None when empty or ``-``; a bad value is a
        ``BadCell`` naming the column."""
        column, text = self.cell(*names)
        if text.lower() in NO_VALUE:
            return None
        try:
            return parse(text)
        except CellError as exc:
            raise BadCell(column, exc) from None

    def shape(self, tensor: str) -> tuple[int, int, int, int] | None:
        """Logical ``(W, Z, Y, X)`` of ``tensor`` (e.g. ``INPUT_0``); None when the row has no such tensor."""
        dims = [self.number(logical_extent, f"{tensor}_{a}_PAD[LOGICAL]", f"{tensor}_{a}") for a in "WZYX"]
        if dims[2] is None or dims[3] is None:
            return None
        return (dims[0] or 1, dims[1] or 1, dims[2], dims[3])


_EXTENT = re.compile(r"([0-9]+)\s*(?:\[\s*([0-9]+)\s*\])?")
_WHOLE = re.compile(r"[0-9]+")


def logical_extent(text: str) -> int:
    """``"32[19]"`` (padded[logical]) -> 19; ``"19"`` -> 19: a whole number >= 1 (``positive_int``), the
    logical extent at most the padded one."""
    m = _EXTENT.fullmatch(text)
    if m is None:
        raise CellError(text, "not a tensor extent (N or padded[logical])")
    logical = positive_int(m.group(2) or m.group(1))
    if m.group(2) is not None and logical > positive_int(m.group(1)):
        raise CellError(text, "a logical extent above its padded one")
    return logical


_WHOLE_FLOAT = re.compile(r"([0-9]+)\.0+")


def whole_text(text: str) -> str:
    """``"110.0"``, a whole number that a tool wrote as a float (tt-perf-report's test captures, saved through
    pandas, have ``DEVICE ID`` ``0.0`` and ``CORE COUNT`` ``32.0``) -> ``"110"``; any other text unchanged."""
    m = _WHOLE_FLOAT.fullmatch(text.strip())
    return m.group(1) if m else text


def count_cell(text: str) -> int:
    """``CORE COUNT`` / ``AVAILABLE WORKER CORE COUNT``: a whole number >= 1 (``positive_int``), also as ``N.0``."""
    return positive_int(whole_text(text))


def device_id_cell(text: str) -> int:
    text = whole_text(text)
    if not _WHOLE.fullmatch(text):
        raise CellError(text, "not a whole number")
    return int(text)


def duration_or_none(text: str) -> float | None:
    """A duration cell as a finite number >= 0 for the device-time total, None otherwise (not checked here:
    only an ingested op's duration is, by ``positive_time``)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def whole_or_none(text: str) -> int | None:
    return int(text) if re.fullmatch(r"\d+", text.strip()) else None


def flag(text: str) -> bool | None:
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


def core_grid(text: str) -> tuple[int, int] | None:
    """``(x=8;y=8)``, ``CoreCoord(x=8, y=8)`` or ``8-8`` -> (8, 8): (columns, rows)."""
    m = re.search(r"x\s*=\s*(\d+)\D+?y\s*=\s*(\d+)", text) or re.fullmatch(
        r"\s*[({\[]?\s*(\d+)\s*[-;,]\s*(\d+)\s*[)}\]]?\s*", text
    )
    return (int(m.group(1)), int(m.group(2))) if m else None


def compute_config(attrs: dict[str, str]) -> dict[str, object]:
    parsed = parse_struct(attrs.get("compute_kernel_config", ""))
    if parsed is None:
        return {}
    out: dict[str, object] = {}
    for key, value in parsed[1].items():
        if key == "math_fidelity":
            out[key] = value.split("::")[-1]
        elif key in ("math_approx_mode", "fp32_dest_acc_en", "packer_l1_acc", "dst_full_sync_en"):
            out[key] = flag(value)
    return out


def fused_activation(text: str) -> str | None:
    if text.strip().lower() in NO_VALUE:
        return None
    m = re.search(r"UnaryOpType::(\w+)", text) or re.search(r"\(\s*([A-Za-z_]+)\s*[;,)]", text)
    if m is None:
        raise RowSkip(f"fused_activation {text!r} is not readable")
    return m.group(1).lower()


# ---- rows --------------------------------------------------------------------------------------------


def tensor_format(row: ProfilerRow, tensor: str, default: DataFormat | None = None) -> DataFormat:
    text = row.get(f"{tensor}_DATATYPE", f"{tensor}_DATA TYPE").split("::")[-1].upper()
    if not text and default is not None:
        return default
    if text not in DTYPES:
        raise RowSkip(
            f"{tensor}_DATATYPE {text or 'empty'!r} is not a data format the model knows ({', '.join(DTYPES)})"
        )
    return DTYPES[text]


def tensor_memory(row: ProfilerRow, tensor: str, notes: list[str]) -> str:
    text = row.get(f"{tensor}_MEMORY").upper()
    if not text:
        notes.append(f"{tensor}_MEMORY absent: assumed DRAM")
        return "DRAM"
    m = re.fullmatch(r"(?:DEV_\d+_)?((?:DRAM|L1)_\w+)", text)
    if m is None or m.group(1) not in MEMORY:
        raise RowSkip(f"{tensor}_MEMORY {text}: the model maps interleaved or L1-sharded operands only")
    if m.group(1) == "L1_INTERLEAVED":
        notes.append(f"{tensor} L1-interleaved: its pages moved over the NoC from/to the worker cores' L1 banks")
    return MEMORY[m.group(1)]


INTERLEAVED = frozenset({"DRAM", "L1_INTERLEAVED"})  # ``tensor_memory``'s interleaved answers


def l1_interleaved_placements(
    row: ProfilerRow, memories: Sequence[str], inputs: Sequence[str], output: str, notes: list[str]
) -> dict[str, Placement]:
    """The operands of an op run on interleaved tensors that sit in the worker cores' L1 banks: input ``i``
    (named ``inputs[i]``) when ``memories[i]`` (``tensor_memory`` of ``INPUT_<i>``) is ``L1_INTERLEAVED``, and
    ``output`` when ``OUTPUT_0`` is (any other output memory is costed as DRAM)."""
    placed = {
        name: Placement.l1_interleaved
        for name, where in zip(inputs, memories, strict=False)
        if where == "L1_INTERLEAVED"
    }
    if "L1_INTERLEAVED" in row.get("OUTPUT_0_MEMORY").upper():
        tensor_memory(row, "OUTPUT_0", notes)
        placed[output] = Placement.l1_interleaved
    return placed


def math_fidelity(row: ProfilerRow, compute: dict[str, object]) -> Fidelity:
    text = (row.get("MATH FIDELITY") or str(compute.get("math_fidelity") or "")).split("::")[-1]
    try:
        return Fidelity(text.lower())
    except ValueError:
        raise RowSkip(f"math fidelity {text or 'empty'!r} is not LoFi/HiFi2/HiFi3/HiFi4") from None


@lru_cache(maxsize=4096)
def attributes_of(text: str) -> tuple[dict[str, str], dict[str, object]]:
    """ATTRIBUTES and its compute kernel config, parsed once per distinct text (rows repeat ops); the dicts
    are shared, never changed."""
    attrs = parse_attributes(text)
    return attrs, compute_config(attrs)


@dataclass(frozen=True, slots=True)
class OpReading:
    """What a family's reader says of one profiler row's op (``ingest.IngestedOp`` but its row, duration and
    the cells every op has): its kernel and shapes, formats, config and options, the grid it ran on, notes."""

    kernel: str
    shape: dict[str, int]
    model_shape: dict[str, int] | None
    dtype: DataFormat
    formats: dict[str, DataFormat]
    grid: tuple[int, int] | None
    fp32_acc: bool
    note: str
    config: TtnnConfig | None = None  # the program config the op ran (None: none given, or the op takes none)
    options: frozenset[str] = frozenset()
    q_chunk_size: int | None = None
    k_chunk_size: int | None = None
    bias: bool = False
    activation: str | None = None
    batch_repeats: int = 1
    placements: dict[str, Placement] = field(default_factory=dict)  # operands not in DRAM, besides the config's
    ring: RingAttentionCall | None = None  # an op across a ring of devices: this device's place in it
