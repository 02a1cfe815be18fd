"""Ingest a Tenstorrent device-profiler report (``ops_perf_results_<timestamp>.csv``, plain or gzipped):
``loom-explorer ingest``.

tt-metal's ``tt_metal/tools/profiler/process_ops_logs.py`` (run by ``python -m tracy``) writes one row per
device op, host op and signpost, with every ``,`` inside a cell replaced by ``;``. Each row is either
ingested (an op the model can describe) or skipped with the reason; row numbers are the file's line
numbers (the header is line 1; blank lines are not rows).

Columns are found by header name -- case, spaces and ``_`` do not matter -- never by position, so the
column order and the extra or missing optional columns of other tt-metal versions do not matter:

Required (else ``IngestError``):

* ``OP CODE``: the codes a kernel family claims (``op_mapping``: ``Matmul`` / ``MatmulDeviceOperation`` /
  ``MinimalMatmulOp`` -> ``gemm``; ``ScaledDotProductAttention`` / ``SDPAOperation`` -> ``flash_attention``;
  the norm, softmax and binary ops -> the shipped kernels their family reads them as); any other op is
  skipped;
* ``DEVICE KERNEL DURATION [ns]``: the measured latency (empty or ``-``: a host op, skipped);
* ``INPUT_0_Y`` and ``INPUT_0_X`` -- shapes are ``INPUT_<i>_{W,Z,Y,X}`` (older tt-metal) or
  ``INPUT_<i>_{W,Z,Y,X}_PAD[LOGICAL]`` with ``padded[logical]`` cells, of which the logical extent is used.

Optional:

* ``INPUT_<i>_DATATYPE``, ``OUTPUT_0_DATATYPE``: ``BFLOAT16`` / ``BFLOAT8_B`` / ``BFLOAT4_B`` / ``FLOAT32``
  -> DataFormat (an empty output or extra input takes in0's);
* ``INPUT_<i>_MEMORY``, ``OUTPUT_0_MEMORY``: ``DEV_<id>_DRAM_INTERLEAVED`` -> ``DRAM``,
  ``DEV_<id>_L1_INTERLEAVED`` -> ``L1_INTERLEAVED`` (``Placement.l1_interleaved``: pages in the worker
  cores' L1 banks, ``model/l1_banks.py``; said in the op's note),
  ``DEV_<id>_L1_{BLOCK,HEIGHT,WIDTH}_SHARDED`` -> ``L1_..._SHARDED``; DRAM-sharded operands are skipped;
  an absent column means DRAM, said in the op's note;
* ``MATH FIDELITY``: ``LoFi`` / ``HiFi2`` / ``HiFi3`` / ``HiFi4`` (else the compute kernel config's);
* ``ATTRIBUTES``: ``{'name': 'value'; ...}``, of which ``program_config`` (``config`` of a minimal matmul),
  ``compute_kernel_config`` (``fp32_dest_acc_en``), ``transpose_a`` / ``transpose_b``, ``is_causal`` and the
  fields the families' readers name are read;
* ``CORE COUNT``, ``DEVICE ID``, ``DEVICE ARCH``, ``AVAILABLE WORKER CORE COUNT`` are kept with the op (the
  last three tell the chip and grid: ``capture_chip``); ``OP TYPE`` ``signpost`` rows are skipped.

A program config prints as ``Name(field=value;...)`` with nested ``(...)``, ``[...]``, ``{...}``; its
``compute_with_storage_grid_size`` as ``(x=8;y=8)`` (older ttnn) or ``8-8`` (newer), flags as ``0``/``1``.

Matmul: in0 = INPUT_0 ``[W, Z, M, K]``, in1 = INPUT_1 ``[.., K, N]`` (swapped by ``transpose_a/b``), bias =
INPUT_2 when present, out = OUTPUT_0. The config becomes a ``TtnnMatmulConfig`` (2-D or 1-D multicast:
other config classes and ``gather_in0`` are skipped); no config is the one ttnn picks itself
(``ttnn_default_evaluated``, on the run's grid; ``families/contraction/ttnn_config.py``); a
``MinimalMatmulConfig`` the multicast config of its blocks (``_minimal_as_2d``), the shape padded to whole
blocks as that kernel computes them. Its
``fused_activation`` is the problem's. A batch ``W*Z > 1`` of in0 with an unbatched in1 and ``fuse_batch`` is
folded into M, as ttnn does; any other batch (in0's, in1's or both alike) is that many matmuls of one batch
run one after another (``repeated_cycles``).
SDPA: q = INPUT_0 ``[B, H, Sq, D]``, k = INPUT_1 ``[B, Hkv, Skv, D]``; ``is_causal`` and the
``SDPAProgramConfig`` chunk sizes (none: ttnn's default, 32-element chunks on the whole grid). A
``RingJointSDPADeviceOperation`` row is one device's local SDPA with its place in the ring (``IngestedOp.ring``,
told the run's device count once the whole report is read; ``families/attention/ring_accuracy.py``).

The file is read row by row and checked whole before anything is predicted or recorded (``csv_input``): it
is refused when it is not UTF-8 text, empty or header-only, past ``csv_input``'s limits (500,000 rows,
1 GiB of text), or has a row with another number of cells than the header; in the row of an op that is
ingested, the duration (a finite number of ns above 0), the shape extents (whole numbers >= 1, logical at
most padded), ``CORE COUNT`` and ``AVAILABLE WORKER CORE COUNT`` (>= 1) and ``DEVICE ID`` (>= 0) are
checked. The first bad one ends the reading with an ``IngestError`` naming the file, line and column; with
``skip_bad_rows`` each is a skipped row, counted. Rows that repeat an op (same cells in every column read
but the duration) are read once, and ops alike predicted once.

``report_measurements`` predicts every op with the config it ran (``captured`` of the TTNN op ttnn calls for
it, ``targets/ttnn/op.py``: the referee's evaluation of the matmul or SDPA config, or of ttnn's interleaved
default) on the chip restricted to the run's worker grid and then to the config's grid; ``record_report``
stores them beside the measured kernel durations (source ``report``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from operator import itemgetter
from pathlib import Path

from loom_explorer.accuracy.capture import (
    INTERLEAVED,
    NO_VALUE,
    BadCell,
    Columns,
    OpReading,
    PriorOutput,
    ProfilerRow,
    RowSkip,
    attributes_of,
    count_cell,
    device_id_cell,
    duration_or_none,
    header_key,
    l1_interleaved_placements,
    math_fidelity,
    tensor_format,
    tensor_memory,
    whole_or_none,
    whole_text,
)
from loom_explorer.accuracy.capture_chip import CaptureChip, CaptureRun, tell_chip
from loom_explorer.accuracy.capture_collective import IngestedCollective, collective_word, read_collective
from loom_explorer.accuracy.capture_window import (
    CaptureWindow,
    DeviceRow,
    Left,
    SignpostWindow,
    WindowError,
    invalid_duration,
    merge_devices,
)
from loom_explorer.accuracy.csv_input import (
    RowIssue,
    TextSource,
    bytes_source,
    cell_issue,
    csv_records,
    open_source,
    positive_time,
    refusal,
    width_issue,
)
from loom_explorer.accuracy.op_mapping import InputShape, InterleavedOp, OpSkip, op_families, unmapped_reason
from loom_explorer.accuracy.progress import Progress
from loom_explorer.accuracy.term_calibration import OpKey, TermScales, shipped_scales
from loom_explorer.errors import LoomError
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.grid import restrict_grid
from loom_explorer.hardware.schema import DataFormat, Fidelity, HardwareSpec
from loom_explorer.hashing import hardware_sha256
from loom_explorer.problem import Placement, Problem, make_problem
from loom_explorer.program import shipped_program
from loom_explorer.program.dsl import TileProgram
from loom_explorer.program.structure import program_family
from loom_explorer.result import Solution
from loom_explorer.store import Measurement, ResultsStore
from loom_explorer.targets.ttnn.config import TtnnConfig
from loom_explorer.targets.ttnn.evaluate import ConfigError, Evaluated
from loom_explorer.targets.ttnn.op import CapturedCall, RingAttentionCall, TtnnOp, problem_ttnn_op, program_ttnn_op

OP_CODE, DURATION, ATTRIBUTES = "OP CODE", "DEVICE KERNEL DURATION [ns]", "ATTRIBUTES"
SIGNPOST_REASON = "signpost (a marker, not an op)"
NO_DURATION_REASON = f"{DURATION} is empty (host-only op or no device data)"
AVAILABLE = "AVAILABLE WORKER CORE COUNT"


class IngestError(LoomError, ValueError):
    """A report that cannot be read at all; the message names the file (and the column)."""


@dataclass(frozen=True, slots=True)
class IngestedOp:
    """One matmul or SDPA op of the report, as the model sees it. ``model_shape`` is the problem shape the
    model evaluates (batch folded into M), ``None`` when it cannot (``note`` says why)."""

    row: int
    op_code: str
    kernel: str  # the shipped kernel a family reads the row as (``op_mapping``)
    shape: dict[str, int]
    dtype: DataFormat
    formats: dict[str, DataFormat]
    fidelity: Fidelity
    config: TtnnConfig | None  # the program config the op ran (None: none given, or the op takes none)
    options: frozenset[str]  # the program options the op ran with (SDPA: causal when is_causal)
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
    available_cores: int | None = None  # AVAILABLE WORKER CORE COUNT: the worker cores the run had
    batch_repeats: int = 1  # a batched matmul: this many matmuls of ``model_shape`` one after another
    note: str = ""
    placements: dict[str, Placement] = field(default_factory=dict)  # operands not in DRAM, besides the config's
    ring: RingAttentionCall | None = None  # an op across a ring of devices (``devices`` set once the report is read)


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
    bad: tuple[RowIssue, ...] = ()  # the skipped rows that were unusable (read with skip_bad_rows)
    device_ns_by_op: tuple[tuple[str, float], ...] = ()  # every device row's kernel duration, summed by op code
    device_rows_by_op: tuple[tuple[str, int], ...] = ()  # how many device rows each op code has
    left_out: tuple[Left, ...] = ()  # rows outside the analysed window (``capture_window``), each with its reason
    window: CaptureWindow = CaptureWindow()
    merged_devices: frozenset[int] = frozenset()  # the devices whose rows were merged (``--merge-devices``)
    # what every analysed device row says of the machine (``DEVICE ARCH``, ``AVAILABLE WORKER CORE COUNT``,
    # ``DEVICE ID``), ingested or not: the chip is told from these and the ingested ops' configs
    device_archs: frozenset[str] = frozenset()
    available_counts: frozenset[int] = frozenset()
    device_ids: frozenset[int] = frozenset()
    # the collective ops' rows (all-gather, reduce-scatter, all-reduce; ``capture_collective``), one per device
    collectives: tuple[IngestedCollective, ...] = ()


def _interleaved(
    row: ProfilerRow,
    name: str,
    read: Callable[[str, dict[str, str], list[InputShape]], InterleavedOp],
    attrs: dict[str, str],
    compute: dict[str, object],
) -> OpReading:
    """An op its family ``read``s as a kernel ttnn runs with its interleaved default (``op_mapping``), costed
    as that default. An L1-interleaved ``INPUT_<i>`` is the kernel's ``i``-th input placed in the L1 banks,
    an L1-interleaved ``OUTPUT_0`` its first output (``Placement.l1_interleaved``)."""
    shapes: list[InputShape] = []
    while (shape := row.shape(f"INPUT_{len(shapes)}")) is not None:
        shapes.append(shape)
    notes: list[str] = []
    memory = {f"INPUT_{i}": tensor_memory(row, f"INPUT_{i}", notes) for i in range(len(shapes))}
    for column, where in memory.items():
        if where not in INTERLEAVED:
            raise RowSkip(f"{column} is sharded: only ttnn's interleaved default of this op is modelled")
    try:
        op = read(name, attrs, shapes)
    except OpSkip as why:
        raise RowSkip(str(why)) from None
    program = shipped_program(op.kernel)
    names = [t.name for t in program.inputs[: op.inputs]]
    placed = l1_interleaved_placements(row, list(memory.values()), names, program.outputs[0].name, notes)
    dtype = tensor_format(row, "INPUT_0")
    return OpReading(
        kernel=op.kernel,
        shape=op.shape,
        model_shape=op.shape,
        dtype=dtype,
        formats={},
        grid=None,
        fp32_acc=bool(compute.get("fp32_dest_acc_en")),
        note="; ".join(filter(None, [*notes, op.note])),
        placements=placed,
        options=op.options,
    )


# the columns an op's reading depends on besides its duration (rows with the same cells in these read alike)
_READ_COLUMNS = {
    header_key(c)
    for c in ("OP TYPE", OP_CODE, ATTRIBUTES, "MATH FIDELITY", "CORE COUNT", "DEVICE ID", "DEVICE ARCH", AVAILABLE)
}


def _op_of(row: ProfilerRow, op_code: str) -> IngestedOp:
    """The op of a row, all but its row number and duration (``row=0``, ``device_kernel_ns=0``)."""
    if row.get("OP TYPE").lower() == "signpost":
        raise RowSkip(SIGNPOST_REASON)
    if row.get(DURATION).lower() in NO_VALUE:
        raise RowSkip(NO_DURATION_REASON)
    name = op_code.split("::")[-1].lower()
    family = op_families().get(name)
    if family is None:
        if "ring" in name or "allgather" in name or "reducescatter" in name:
            raise RowSkip(
                "an op across devices (ring, all-gather, reduce-scatter): the model covers one chip, and "
                "what each device does depends on its place among them, which the report does not say"
            )
        raise RowSkip(unmapped_reason(name))
    # the number cells of an op that is ingested: a bad one is an error (BadCell), not a skip
    core_count = row.number(count_cell, "CORE COUNT")
    available = row.number(count_cell, AVAILABLE)
    device_id = row.number(device_id_cell, "DEVICE ID")
    attributes = row.get(ATTRIBUTES)
    attrs, compute = attributes_of(attributes)
    if name in family.no_math_op_codes and not row.get("MATH FIDELITY") and not compute.get("math_fidelity"):
        fidelity = Fidelity.hifi2  # no math: any fidelity costs it nothing (make_problem's default)
    else:
        fidelity = math_fidelity(row, compute)
    if family.read_interleaved is not None and name not in family.configured_op_codes:
        parts = _interleaved(row, name, family.read_interleaved, attrs, compute)
    else:
        assert family.read_configured is not None, f"{family.name} reads no op"
        parts = family.read_configured(row, attributes, attrs, compute)
    return IngestedOp(
        row=0,
        op_code=op_code,
        kernel=parts.kernel,
        shape=parts.shape,
        dtype=parts.dtype,
        formats=parts.formats,
        fidelity=fidelity,
        config=parts.config,
        options=parts.options,
        q_chunk_size=parts.q_chunk_size,
        k_chunk_size=parts.k_chunk_size,
        device_kernel_ns=0.0,
        core_count=core_count,
        model_shape=parts.model_shape,
        grid=parts.grid,
        fp32_acc=parts.fp32_acc,
        bias=parts.bias,
        activation=parts.activation,
        device_id=device_id,
        device_arch=row.get("DEVICE ARCH") or None,
        available_cores=available,
        batch_repeats=parts.batch_repeats,
        note=parts.note,
        placements=parts.placements,
        ring=parts.ring,
    )


REQUIRED_COLUMNS = {
    OP_CODE: [OP_CODE],
    DURATION: [DURATION],
    **{f"INPUT_0_{a} (or INPUT_0_{a}_PAD[LOGICAL])": [f"INPUT_0_{a}", f"INPUT_0_{a}_PAD[LOGICAL]"] for a in "YX"},
}


def read_ops_perf(
    path: str | Path,
    skip_bad_rows: bool = False,
    progress: Progress | None = None,
    window: CaptureWindow | None = None,
) -> IngestReport:
    """Every row of an ``ops_perf_results_*.csv`` (or ``.csv.gz``), ingested or skipped with the reason
    (module docstring).

    The file is read row by row (``csv_input.TextSource``: memory follows the rows kept, never the whole
    text) and checked whole before anything is predicted or recorded: the first row with another number of
    cells than the header, or with a number cell of an ingested op that is not what its column means, stops
    the reading with an ``IngestError`` naming the file, line and column, unless ``skip_bad_rows`` (then a
    skipped row saying so, counted in ``bad``). A file without data rows, or past one of ``csv_input``'s
    limits (``MAX_ROWS`` rows, ``MAX_DECOMPRESSED_BYTES``, ``MAX_LINE_CHARS``), is an ``IngestError``.
    ``window`` says which rows are analysed (``capture_window``: signposts, trace replays, devices merged;
    default every row); the rows outside it are ``left_out``, each with its reason."""
    with open_source(path, IngestError) as source:
        return parse_ops_perf(Path(path), source, skip_bad_rows, progress, window)


def read_ops_perf_bytes(
    name: str,
    data: bytes,
    skip_bad_rows: bool = False,
    progress: Progress | None = None,
    window: CaptureWindow | None = None,
) -> IngestReport:
    """``read_ops_perf`` of a report's bytes (an upload), ``name`` only labelling it: no file is opened."""
    with bytes_source(name, data, IngestError) as source:
        return parse_ops_perf(Path(Path(name).name or "report.csv"), source, skip_bad_rows, progress, window)


def parse_ops_perf(
    p: Path,
    text: str | TextSource,
    skip_bad_rows: bool = False,
    progress: Progress | None = None,
    window: CaptureWindow | None = None,
) -> IngestReport:
    """``read_ops_perf`` of the text of ``p`` (whole, or streamed)."""
    window = window or CaptureWindow()
    signposts = SignpostWindow(window)
    left: list[Left] = []
    device_rows: list[DeviceRow] = []  # the rows merged across devices (``window.merge_devices``)
    records = csv_records(p, text, IngestError)
    header, columns = _read_header(p, records)
    ops: list[IngestedOp] = []
    skipped: list[SkippedRow] = []
    bad: list[RowIssue] = []
    # a trace repeats the same ops: rows alike in every column an op's reading depends on are read once
    read_columns = [
        i
        for i, name in enumerate(header)
        if header_key(name) in _READ_COLUMNS or header_key(name).startswith(("INPUT", "OUTPUT"))
    ]
    cells_read = itemgetter(*read_columns)  # OP CODE is among them
    known: dict[tuple[object, ...], IngestedOp | RowSkip | BadCell] = {}
    collectives: list[IngestedCollective] = []
    known_collectives: dict[tuple[object, ...], IngestedCollective | RowSkip] = {}
    streamed = text if isinstance(text, TextSource) else None
    if progress and streamed:
        progress.phase("reading (bytes of the file)", streamed.size_bytes)
    device_ns: dict[str, float] = {}
    device_count: dict[str, int] = {}
    machine = _Machine()
    rows = 0
    (op_column,) = columns.find((OP_CODE,))
    widths: dict[int, RowIssue] = {}  # a short or long row's issue by its number of cells: its texts shared
    prior: dict[str, PriorOutput] = {}  # DEVICE ID -> the output of the last device op read on it
    for number, cells in records:
        rows += 1
        if progress and streamed and not rows & 1023:
            progress.update(streamed.position())
        if len(cells) != len(header):
            wrong = _width_issue(p, number, cells, header, widths)
            if not skip_bad_rows:  # the first unusable row ends the reading
                raise IngestError(refusal([wrong]))
            bad.append(wrong)
            op_code = sys.intern(cells[op_column].strip()) if op_column < len(cells) else ""
            skipped.append(SkippedRow(number, op_code, wrong.detail))
            continue
        row = ProfilerRow(columns, cells)
        device = row.get("DEVICE ID")
        row.prior = prior.get(device)
        op_code = row.get(OP_CODE)
        is_signpost = row.get("OP TYPE").lower() == "signpost"
        outside = _outside(signposts, row, number, op_code, is_signpost)
        if outside is not None:
            left.append(outside)
            continue
        duration = duration_or_none(row.get(DURATION))
        if duration is not None and not is_signpost:
            machine.add(row)
            prior[device] = row.output_of_op()
            device_id = whole_or_none(whole_text(device)) if window.merge_devices else None
            if device_id is not None:
                device_rows.append(DeviceRow(number, op_code, device_id, duration))
            else:
                device_ns[op_code] = device_ns.get(op_code, 0.0) + duration
                device_count[op_code] = device_count.get(op_code, 0) + 1
        key = (row.get(DURATION).lower() in NO_VALUE, cells_read(cells), row.prior)
        op = _read_row(row, number, op_code, None if is_signpost else duration, key, known, known_collectives)
        if isinstance(op, IngestedOp | IngestedCollective):
            _kept(op, ops, collectives)
        elif isinstance(op, RowSkip):
            skipped.append(SkippedRow(number, op_code, str(op)))
        else:
            issue = cell_issue(str(p), number, op.column, op.error)
            if not skip_bad_rows:
                raise IngestError(refusal([issue]))
            bad.append(issue)
            skipped.append(SkippedRow(number, op_code, str(op)))
    if not rows:
        raise IngestError(f"{p}: no data rows (only the header)")
    try:
        signposts.check(str(p))
    except WindowError as exc:
        raise IngestError(str(exc)) from None
    report = IngestReport(
        p,
        tuple(ops),
        tuple(skipped),
        tuple(bad),
        (),
        (),
        tuple(left),
        window,
        device_archs=frozenset(machine.archs),
        available_counts=frozenset(machine.available),
        device_ids=frozenset(machine.devices),
        collectives=tuple(collectives),
    )
    report = _ring_devices(report)
    if device_rows:
        return _merged(report, device_rows, device_ns, device_count)
    return _timed(report, device_ns, device_count)


def _ring_devices(report: IngestReport) -> IngestReport:
    """``report`` with every ring op told how many devices the run had (its ring index depends on the mesh)."""
    if not any(op.ring for op in report.ops):
        return report
    devices = len(report.device_ids) or None
    return replace(
        report, ops=tuple(replace(op, ring=replace(op.ring, devices=devices)) if op.ring else op for op in report.ops)
    )


class _Machine:
    """What the analysed device rows say of the machine (``IngestReport.device_archs`` and the rest); a cell
    that does not read as its column means is left out here (it is checked where an op is ingested)."""

    def __init__(self) -> None:
        self.archs: set[str] = set()
        self.available: set[int] = set()
        self.devices: set[int] = set()
        self._seen: set[tuple[str, str, str]] = set()

    def add(self, row: ProfilerRow) -> None:
        cells = (row.get("DEVICE ARCH"), whole_text(row.get(AVAILABLE)), whole_text(row.get("DEVICE ID")))
        if cells in self._seen:
            return
        self._seen.add(cells)
        arch, available, device = cells
        if arch:
            self.archs.add(sys.intern(arch))
        if (n := whole_or_none(available)) is not None and n >= 1:
            self.available.add(n)
        if (d := whole_or_none(device)) is not None:
            self.devices.add(d)


def _outside(signposts: SignpostWindow, row: ProfilerRow, number: int, op_code: str, is_signpost: bool) -> Left | None:
    """Row ``number`` left out (``capture_window``: outside the signpost window, a later trace replay, an invalid
    duration), None when it is analysed; a signpost row moves the window."""
    outside = signposts.outside()
    if is_signpost:
        signposts.signpost(op_code)
        if outside is None and signposts.ended:
            outside = f"the end signpost {op_code!r} (--end-signpost)"
    if outside is not None:
        return Left(number, op_code, outside, "signpost window")
    replay = signposts.replay(row.get("METAL TRACE ID"), row.get("METAL TRACE REPLAY SESSION ID"))
    if replay is not None:
        return Left(number, op_code, replay, "trace replay")
    duration = None if is_signpost else duration_or_none(row.get(DURATION))
    invalid = invalid_duration(duration, row.get("OP TO OP LATENCY [ns]")) if duration is not None else None
    return Left(number, op_code, invalid, "invalid duration") if invalid is not None else None


def _timed(report: IngestReport, device_ns: dict[str, float], device_count: dict[str, int]) -> IngestReport:
    return replace(
        report, device_ns_by_op=tuple(sorted(device_ns.items())), device_rows_by_op=tuple(sorted(device_count.items()))
    )


def _merged(
    report: IngestReport, device_rows: list[DeviceRow], device_ns: dict[str, float], device_count: dict[str, int]
) -> IngestReport:
    """``report`` with the rows of one op on many devices merged (``capture_window.merge_devices``): the rows
    merged into another are left out, and the device time is the kept rows'."""
    merged = merge_devices(device_rows)
    op_of_row = {r.row: r.op_code for r in device_rows}
    for row_number, ns in merged.kept_ns.items():
        code = op_of_row[row_number]
        device_ns[code] = device_ns.get(code, 0.0) + ns
        device_count[code] = device_count.get(code, 0) + 1
    gone = {x.row for x in merged.left}
    return _timed(
        replace(
            report,
            ops=tuple(op for op in report.ops if op.row not in gone),
            collectives=tuple(c for c in report.collectives if c.row not in gone),
            skipped=tuple(s for s in report.skipped if s.row not in gone),
            left_out=tuple(sorted([*report.left_out, *merged.left], key=lambda x: x.row)),
            merged_devices=merged.devices,
        ),
        device_ns,
        device_count,
    )


def _read_header(p: Path, records: Iterator[tuple[int, list[str]]]) -> tuple[list[str], Columns]:
    """The header's cells and columns, the first record of ``records``; an ``IngestError`` when there is
    none or a ``REQUIRED_COLUMNS`` entry has none of its columns."""
    header_line = next(records, None)
    if header_line is None:
        raise IngestError(f"{p}: empty file (no header, no data rows)")
    header = header_line[1]
    columns = Columns(header)
    missing = [name for name, alts in REQUIRED_COLUMNS.items() if not any(alt in columns for alt in alts)]
    if missing:
        raise IngestError(
            f"{p}: required column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            "missing (not an ops_perf_results CSV of tt-metal's device profiler?)"
        )
    return header, columns


def _width_issue(p: Path, number: int, cells: list[str], header: list[str], widths: dict[int, RowIssue]) -> RowIssue:
    """The issue of row ``number``, whose number of cells is not the header's; the texts of an issue are
    made once for each number of cells (kept in ``widths``)."""
    shape = widths.get(len(cells))
    if shape is None:
        shape = widths[len(cells)] = width_issue(str(p), number, cells, header) or RowIssue("", 0, None, "")
    return RowIssue(shape.file, number, None, shape.reason, shape.detail)


def _row_op(
    row: ProfilerRow,
    number: int,
    op_code: str,
    key: tuple[object, ...],
    known: dict[tuple[object, ...], IngestedOp | RowSkip | BadCell],
) -> IngestedOp | RowSkip | BadCell:
    """The op of data row ``number`` with its row number and duration, or why it is skipped or unusable;
    rows with the same ``key`` share their op's reading (kept in ``known``), not their duration."""
    op = known.get(key)
    if op is None:
        try:
            op = _op_of(row, op_code)
        except (RowSkip, BadCell) as why:
            op = why
        known[key] = op
    if isinstance(op, IngestedOp):
        try:
            duration_ns = row.number(positive_time, DURATION)
            assert duration_ns is not None, "a row without a duration is skipped when its op is read"
            op = replace(op, row=number, device_kernel_ns=duration_ns)
        except BadCell as cell:
            op = cell
    return op


def _read_row(
    row: ProfilerRow,
    number: int,
    op_code: str,
    duration_ns: float | None,
    key: tuple[object, ...],
    known: dict[tuple[object, ...], IngestedOp | RowSkip | BadCell],
    known_collectives: dict[tuple[object, ...], IngestedCollective | RowSkip],
) -> IngestedOp | IngestedCollective | RowSkip | BadCell:
    """A device row of a collective (``_row_collective``), else any row as an op (``_row_op``)."""
    if duration_ns is not None and _is_collective(op_code):
        return _row_collective(row, number, op_code, duration_ns, key, known_collectives)
    return _row_op(row, number, op_code, key, known)


def _kept(op: IngestedOp | IngestedCollective, ops: list[IngestedOp], collectives: list[IngestedCollective]) -> None:
    if isinstance(op, IngestedOp):
        ops.append(op)
    else:
        collectives.append(op)


def _is_collective(op_code: str) -> bool:
    """A collective's op code (``capture_collective``) that no kernel family claims."""
    name = op_code.split("::")[-1].lower()
    return collective_word(name) and name not in op_families()


def _row_collective(
    row: ProfilerRow,
    number: int,
    op_code: str,
    duration_ns: float,
    key: tuple[object, ...],
    known: dict[tuple[object, ...], IngestedCollective | RowSkip],
) -> IngestedCollective | RowSkip:
    """The collective of data row ``number`` (``capture_collective.read_collective``) with its row, device and
    duration, or why it is skipped; rows with the same ``key`` share the reading."""
    read = known.get(key)
    if read is None:
        try:
            reading = read_collective(row, op_code.split("::")[-1].lower(), row.get(ATTRIBUTES))
            read = IngestedCollective(0, op_code, reading, 0.0, None, row.get("DEVICE ARCH") or None)
        except RowSkip as why:
            read = why
        known[key] = read
    if isinstance(read, RowSkip):
        return read
    device = whole_or_none(whole_text(row.get("DEVICE ID")))
    return replace(read, row=number, device_kernel_ns=duration_ns, device_id=device)


# ---- predictions and the store -----------------------------------------------------------------------


def capture_chip(report: IngestReport) -> CaptureChip | None:
    """The chip and worker grid the report ran on, told from its analysed device rows and ingested ops'
    configs (``capture_chip.tell_chip``);
    None when the report names no single known architecture."""
    grids = {g for op in report.ops for g in (op.grid, op.config and op.config.compute_with_storage_grid_size) if g}
    return tell_chip(
        CaptureRun(
            archs=frozenset(op.device_arch for op in report.ops if op.device_arch) | report.device_archs,
            available_cores=frozenset(op.available_cores for op in report.ops if op.available_cores)
            | report.available_counts,
            devices=frozenset(op.device_id for op in report.ops if op.device_id is not None)
            | report.merged_devices
            | report.device_ids,
            config_grids=frozenset(grids),
        )
    )


def choose_hardware(report: IngestReport, hw: str | None = None) -> tuple[str, tuple[int, int] | None, str]:
    """(hardware, the run's worker grid, how they were told) to predict ``report`` on: ``hw`` (``--hw``) on
    the run's grid where it fits, else the chip the capture itself shows (``capture_chip``); IngestError
    naming the file when neither says."""
    chip = capture_chip(report)
    if hw:
        grid = chip.grid if chip else None
        return hw, grid, f"{hw} (--hw)" + (f", the run's {grid[0]}x{grid[1]} worker grid where it fits" if grid else "")
    if chip is None:
        raise IngestError(
            f"{report.file}: the report does not say which chip it ran on (no DEVICE ARCH column); "
            "give --hw, e.g. --hw wormhole_n150"
        )
    return chip.hardware, chip.grid, chip.reason


def suggest_hardware(report: IngestReport) -> str | None:
    """The shipped hardware file for the report (``capture_chip``; None when it does not say)."""
    chip = capture_chip(report)
    return chip.hardware if chip else None


def report_measurements(
    report: IngestReport,
    hw_name: str,
    progress: Progress | None = None,
    grid: tuple[int, int] | None = None,
    predict: Predictor | None = None,
    calibration: TermScales | None = None,
) -> list[Measurement]:
    """Every ingested op as a results-store entry, predicted on ``hw_name`` (restricted to the run's worker
    ``grid`` when given and smaller, then to each config's grid) with its own config: a matmul's program
    config or the one ttnn picks, an SDPA op's ``SDPAProgramConfig`` (none: ttnn's default). Ops alike
    (``Predictor``) are predicted once; a caller that goes on with the same ops passes its ``predict`` (made
    for ``hw_name``, ``grid`` and this report) so none is evaluated twice. ``predicted_ns`` is calibrated
    with ``calibration`` (default: the shipped capture calibration; ``term_calibration.UNCALIBRATED`` for the
    hardware file's costs as they are); ``predicted_cycles`` and ``breakdown`` are the model's, uncalibrated."""
    predict = predict or Predictor(load_hardware(hw_name), str(report.file), grid)
    scales = shipped_scales() if calibration is None else calibration
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if progress:
        progress.phase("predicting", len(report.ops))
    out = []
    for done, op in enumerate(report.ops):
        if progress:
            progress.update(done)
        out.append(_measurement(report, op, predict, created, scales))
    return out


def record_report(report: IngestReport, hw_name: str, store: ResultsStore) -> list[int]:
    """Record ``report_measurements`` in ``store`` (one transaction); the new row ids."""
    return store.record_many(report_measurements(report, hw_name))


@dataclass(frozen=True, slots=True)
class Predicted:
    """The model's view of one distinct op: its hardware, evaluation, candidate, and the op's schedule
    document as JSON without its first three keys (``source_file``, ``row``, ``op_code``: per row)."""

    hw: HardwareSpec
    hardware_sha256: str
    evaluated: Evaluated | None
    failure: str  # why it was not predicted ("" when it was, or when the model does not take the op)
    config: TtnnConfig | None = None  # the config costed: the report's, or ttnn's pick
    candidate: str = ""
    document_tail: str = "}"


class Predictor:
    """Evaluates ops on ``base`` restricted to each op's grid, each distinct op once: a report repeats the
    same ops many times, and an evaluation (building the candidate's schedule) is the expensive part."""

    def __init__(self, full: HardwareSpec, source_file: str, grid: tuple[int, int] | None = None) -> None:
        base = full
        if grid and grid[0] <= full.grid.columns and grid[1] <= full.grid.rows:
            base = restrict_grid(full, *grid)
        self.full, self.base, self.source_file = full, base, source_file
        self.chips: dict[tuple[int, int] | None, tuple[HardwareSpec, str]] = {None: (base, hardware_sha256(base))}
        self.known: dict[tuple[object, ...], Predicted] = {}
        self._config_json: dict[int, str] = {}  # by id of a config of report.ops (alive while they are)

    def key(self, op: IngestedOp) -> tuple[object, ...]:
        """What an op's prediction depends on: ops of one key are predicted alike."""
        config = None
        if op.config is not None:
            config = self._config_json.get(id(op.config))
            if config is None:
                config = self._config_json[id(op.config)] = op.config.model_dump_json()
        return (
            op.kernel,
            tuple(op.model_shape.items()) if op.model_shape else None,
            op.dtype,
            tuple(op.formats.items()),
            op.fidelity,
            op.fp32_acc,
            op.bias,
            op.activation,
            op.grid,
            config,
            tuple(sorted(op.options)),
            op.q_chunk_size,
            op.k_chunk_size,
            op.batch_repeats,
            op.ring,
        )

    def __call__(self, op: IngestedOp) -> Predicted:
        key = self.key(op)
        known = self.known.get(key)
        if known is None:
            known = self.known[key] = self._described(op, self._evaluate(op))
        return known

    def _evaluate(self, op: IngestedOp) -> Predicted:
        hw, sha = self.chips[None]
        try:
            if op.grid:
                if op.grid not in self.chips:
                    chip = restrict_grid(self.full, *op.grid)
                    self.chips[op.grid] = (chip, hardware_sha256(chip))
                hw, sha = self.chips[op.grid]
            evaluated = None
            config = op.config
            problem = op_problem(op)
            if problem is not None:
                ttnn = problem_ttnn_op(problem)
                if ttnn.captured is None:
                    raise ConfigError(f"ttnn's {ttnn.name} op has no reading of a captured call")
                config, evaluated = ttnn.captured(hw, problem, captured_call(op))
        except ValueError as exc:  # ConfigError, ProblemError, a grid that does not fit: recorded unpredicted
            return Predicted(hw, sha, None, f"not predicted: {exc}", config=op.config)
        return Predicted(hw, sha, evaluated, "", config=config)

    @staticmethod
    def _described(op: IngestedOp, p: Predicted) -> Predicted:
        """``p`` with its candidate and document tail (the same for every op of its key)."""
        evaluated = p.evaluated
        if evaluated:
            candidate = evaluated.result.candidate_name
        else:
            candidate = kernel_ttnn_op(op.kernel).unpredicted_candidate(replace(captured_call(op), config=p.config))
        tail = json.dumps(
            {
                "candidate": candidate,
                "params": evaluated.values if evaluated else {},
                "dtype": op.dtype.value,
                "fidelity": op.fidelity.value,
                "ttnn_config": p.config.model_dump(mode="json") if p.config else None,
                "options": sorted(op.options),
                "q_chunk_size": op.q_chunk_size,
                "k_chunk_size": op.k_chunk_size,
            }
        )
        return replace(p, candidate=candidate, document_tail=", " + tail[1:])


def captured_call(op: IngestedOp) -> CapturedCall:
    """What ``op``'s row says of its ttnn call (``TtnnOp.captured``)."""
    return CapturedCall(op.config, op.q_chunk_size, op.k_chunk_size, op.ring)


def kernel_ttnn_op(kernel: str) -> TtnnOp:
    """The TTNN op of a shipped ``kernel``'s family (ConfigError when ttnn has none)."""
    return program_ttnn_op(shipped_program(kernel))


ONCE_TERMS = ("launch", "fill")  # paid once per launch, however many batches it loops over


def repeated_terms(solution: Solution, repeats: int) -> tuple[tuple[str, int], ...]:
    """A batched matmul's latency terms from one batch's ``solution``: the kernels loop over the batch inside
    one launch with their circular buffers streaming on, so the launch and the pipeline fill (breakdown terms
    ``launch`` and ``fill``) are paid once and the rest ``repeats`` times."""
    return tuple((n, c if n in ONCE_TERMS else c * repeats) for n, c in solution.breakdown)


def repeated_cycles(solution: Solution, repeats: int) -> int:
    """A batched matmul's latency from one batch's ``solution`` (``repeated_terms``, summed)."""
    return sum(c for _, c in repeated_terms(solution, repeats)) if repeats > 1 else solution.latency_cycles


def op_problem(op: IngestedOp, shape: dict[str, int] | None = None) -> Problem | None:
    """The problem the model evaluates for ``op`` (its ``model_shape``, or ``shape``): formats, placements,
    fidelity, accumulation, bias, activation and program options as the report gives them; None when the model
    does not predict the op (``model_shape`` None)."""
    shape = shape or op.model_shape
    if shape is None:
        return None
    return make_problem(
        shipped_program(op.kernel),
        shape,
        op.dtype,
        op.fidelity,
        formats=op.formats,
        placements={**op.placements, **(op.config.placements() if op.config else {})},
        fp32_acc=op.fp32_acc,
        enabled={"bias"} if op.bias else set(),
        activation=op.activation,
        options=op.options,
    )


def calibrated_ns(
    calibration: TermScales, program: TileProgram, hw: HardwareSpec, terms: tuple[tuple[str, int], ...]
) -> float:
    """An op's predicted time in ns from its latency ``terms`` (cycles): scaled by its family's ``calibration``
    (``term_calibration``), unscaled for a family it does not calibrate."""
    family = program_family(program).name
    return calibration.cycles(OpKey(family, program.name, hw.arch.name), terms) / hw.clock_ghz


def _measurement(
    report: IngestReport, op: IngestedOp, predict: Predictor, created: str, calibration: TermScales
) -> Measurement:
    notes = [f"{report.file.name} row {op.row} ({op.op_code})", *filter(None, [op.note])]
    family = predict.base.name.split("_")[0]
    if op.device_arch and not op.device_arch.lower().startswith(family):
        notes.append(f"the report ran on {op.device_arch}; predicted on {predict.base.name}")
    predicted = predict(op)
    hw, evaluated = predicted.hw, predicted.evaluated
    if predicted.failure:
        notes.append(predicted.failure)
    sol = evaluated.result.solution if evaluated else None
    if evaluated and evaluated.result.conflict:
        notes.append(evaluated.result.conflict.message)
    terms = repeated_terms(sol, op.batch_repeats) if sol else ()
    cycles = sum(c for _, c in terms) if sol else None
    predicted_ns = calibrated_ns(calibration, shipped_program(op.kernel), hw, terms) if sol else None
    family = program_family(shipped_program(op.kernel)).name
    if sol and calibration.fitted(family):
        notes.append(f"calibrated: the {family} family's scales fitted on {calibration.rows[family]} capture rows")
    # the schedule document: {"source_file", "row", "op_code", then the key's part, as JSON}
    head = json.dumps({"source_file": predict.source_file, "row": op.row, "op_code": op.op_code})
    return Measurement(
        source="report",
        hardware=hw.name,
        hardware_sha256=predicted.hardware_sha256,
        kernel=op.kernel,
        shape=dict(op.shape),
        candidate=predicted.candidate,
        schedule_json=head[:-1] + predicted.document_tail,
        predicted_cycles=cycles,
        predicted_ns=predicted_ns,
        breakdown=dict(terms),
        measured_ns=op.device_kernel_ns,
        measured_what="device kernel duration",
        note="; ".join(notes),
        created=created,
    )


def summary_json(report: IngestReport) -> dict[str, object]:
    """The ``ingest --json`` document: the file, every ingested op and every skipped row with its reason."""

    def op_json(op: IngestedOp) -> dict[str, object]:
        return {
            "row": op.row,
            "op_code": op.op_code,
            "kernel": op.kernel,
            "shape": op.shape,
            "model_shape": op.model_shape,
            "dtype": op.dtype.value,
            "formats": {t: f.value for t, f in op.formats.items()},
            "fidelity": op.fidelity.value,
            "fp32_acc": op.fp32_acc,
            "config": op.config.model_dump(mode="json") if op.config else None,
            "grid": list(op.grid) if op.grid else None,
            "options": sorted(op.options),
            "q_chunk_size": op.q_chunk_size,
            "k_chunk_size": op.k_chunk_size,
            "device_kernel_ns": op.device_kernel_ns,
            "core_count": op.core_count,
            "device_id": op.device_id,
            "ring": (
                {"ring_size": op.ring.ring_size, "devices": op.ring.devices, "is_balanced": op.ring.is_balanced}
                if op.ring
                else None
            ),
            "note": op.note,
        }

    return {
        "file": str(report.file),
        "ingested": [op_json(op) for op in report.ops],
        "skipped": [{"row": s.row, "op_code": s.op_code, "reason": s.reason} for s in report.skipped],
        "counts": {"ingested": len(report.ops), "skipped": len(report.skipped)},
    }
