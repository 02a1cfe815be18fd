"""Which rows of a device-profiler capture are analysed, as Tenstorrent's own report tool reads them:
a signpost window, trace replays counted once or per replay, and the rows of one op on many devices merged.

The rules follow tenstorrent/tt-perf-report (``src/tt_perf_report/perf_report.py`` @ ``00b7324a``, version
1.4.1, Apache-2.0: ``filter_by_signpost`` and ``merge_device_rows``); the tool itself is not a dependency
(it reads the whole file into pandas, prints its warnings on stdout and pins matplotlib exactly, while
``ingest`` streams the file row by row and names the file, line and column of every refusal).

* **Signposts** (rows of ``OP TYPE`` ``signpost``; their ``OP CODE`` is the signpost's name, e.g.
  ``PERF_DECODE``): with ``start_signpost`` only the rows after its first occurrence are analysed; with
  ``end_signpost`` only the rows before its first occurrence after the start (the same name as the start:
  its next occurrence, as tt-perf-report takes the second). A signpost that the capture does not have is an
  error naming it and the signposts it has (tt-perf-report warns and reads the whole file). With neither, the
  whole file is analysed (tt-perf-report's default without flags is the rows after the *last* signpost;
  ``ingest`` keeps the whole file, as it always has).
* **Trace replays** (``METAL TRACE ID`` and ``METAL TRACE REPLAY SESSION ID`` cells): ``each`` counts every
  replay's rows (the default); ``once`` keeps, for each trace, the rows of its first replay session and
  leaves the later sessions' rows out. Rows outside any trace are always kept.
* **Devices** (``merge_devices``): the device-op rows (a ``DEVICE ID`` and a duration) of each device are
  queued in file order and taken a block at a time, the next row of every device; the devices whose next
  op is another than the first device's keep theirs for a later block. Of a block, an all-gather,
  reduce-scatter or all-reduce keeps its first row at the mean duration of the block; any other op keeps
  its slowest row. The other rows of a block are left out, each saying which row it was merged into.

* **Invalid durations** (always, as tt-perf-report's ``is_invalid_device_duration``): a device row whose
  ``OP TO OP LATENCY [ns]`` is below -1 ms and larger in size than both 1 ms and half its duration did not
  have its device clock aligned with the previous op's (seen in trace replays: durations of ~6.9 s for
  ops of microseconds); it is left out, saying so.

Rows left out are not part of the capture's device time; each is a ``Left`` with its one reason.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

TraceReplays = Literal["each", "once"]
COLLECTIVE_WORDS = ("AllGather", "ReduceScatter", "AllReduce")  # tt-perf-report's collective ops (mean time)


INVALID_GAP_NS = 1_000_000  # tt-perf-report's INVALID_OP_TO_OP_GAP_MIN_NS


def invalid_duration(duration_ns: float, gap_text: str) -> str | None:
    """Why a device row's duration is not valid (module docstring), None when it is; ``gap_text`` is its
    ``OP TO OP LATENCY [ns]`` cell (empty or not a number: no judgement)."""
    try:
        gap_ns = float(gap_text)
    except ValueError:
        return None
    if gap_ns < -INVALID_GAP_NS and abs(gap_ns) > max(duration_ns * 0.5, INVALID_GAP_NS):
        return (
            f"the duration {duration_ns:.0f} ns is not valid: OP TO OP LATENCY {gap_ns:.0f} ns, a negative gap "
            "beyond 1 ms and half the duration (the device clock was not aligned; tt-perf-report leaves such "
            "rows out)"
        )
    return None


class WindowError(ValueError):
    """A signpost the capture does not have; the message names it and the signposts the capture has."""


@dataclass(frozen=True, slots=True)
class CaptureWindow:
    """What of a capture ``ingest`` analyses (module docstring); the default is every row."""

    start_signpost: str | None = None
    end_signpost: str | None = None
    trace_replays: TraceReplays = "each"
    merge_devices: bool = False

    def describe(self) -> str:
        """The window in ``ingest``'s flags, ``""`` for the whole file."""
        parts = []
        if self.start_signpost:
            parts.append(f"--start-signpost {self.start_signpost}")
        if self.end_signpost:
            parts.append(f"--end-signpost {self.end_signpost}")
        if self.trace_replays != "each":
            parts.append(f"--trace-replays {self.trace_replays}")
        if self.merge_devices:
            parts.append("--merge-devices")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Left:
    """A row left out of the analysis, and why."""

    row: int
    op_code: str
    reason: str
    kind: str  # ``signpost window``, ``trace replay``, ``invalid duration`` or ``merged across devices``


class SignpostWindow:
    """The streaming part of a ``CaptureWindow``: fed every row in file order, says whether it is inside the
    signpost window and which trace replays are counted."""

    def __init__(self, window: CaptureWindow) -> None:
        self.window = window
        self.started = window.start_signpost is None
        self.ended = False
        self.seen: list[str] = []  # the signposts' names, in order (for the error)
        self.first_session: dict[str, str] = {}  # trace id -> the replay session counted

    def signpost(self, name: str) -> None:
        """A signpost row: it opens or closes the window (signposts are never analysed as ops)."""
        if len(self.seen) < 10_000:
            self.seen.append(name)
        w = self.window
        if not self.started:
            self.started = name == w.start_signpost
        elif not self.ended and w.end_signpost is not None and name == w.end_signpost:
            self.ended = True

    def outside(self) -> str | None:
        """Why the next row is outside the signpost window, None when inside."""
        w = self.window
        if not self.started:
            return f"before the start signpost {w.start_signpost!r} (--start-signpost)"
        if self.ended:
            return f"after the end signpost {w.end_signpost!r} (--end-signpost)"
        return None

    def replay(self, trace_id: str, session: str) -> str | None:
        """Why a row of trace ``trace_id``'s replay ``session`` is left out (``once``), None when counted."""
        if self.window.trace_replays == "each" or not trace_id or not session:
            return None
        first = self.first_session.setdefault(trace_id, session)
        if session == first:
            return None
        return (
            f"replay session {session} of trace {trace_id}: replays counted once (--trace-replays once keeps "
            f"session {first})"
        )

    def check(self, file: str) -> None:
        """After the last row: a signpost asked for that the capture does not have is a ``WindowError``."""
        w = self.window
        distinct = list(dict.fromkeys(self.seen))
        names = ", ".join(distinct[:20]) + (f", ... ({len(distinct)} in all)" if len(distinct) > 20 else "")
        names = names or "none"
        if not self.started:
            raise WindowError(f"{file}: no signpost {w.start_signpost!r} (--start-signpost); its signposts: {names}")
        if w.end_signpost is not None and not self.ended:
            raise WindowError(
                f"{file}: no signpost {w.end_signpost!r} after the start (--end-signpost); its signposts: {names}"
            )


@dataclass(frozen=True, slots=True)
class DeviceRow:
    """A device-op row inside the window, as merging sees it."""

    row: int
    op_code: str
    device_id: int
    duration_ns: float


@dataclass(frozen=True, slots=True)
class Merged:
    """The device rows merged (module docstring): the rows kept with the duration each stands for, and the
    rows left out."""

    kept_ns: dict[int, float]  # row -> its block's duration (the slowest row's, or a collective's mean)
    left: tuple[Left, ...]
    devices: frozenset[int]  # every device merged


def merge_devices(rows: Iterable[DeviceRow]) -> Merged:
    """Merge the device rows of one op across devices, a block at a time (module docstring)."""
    queues: dict[int, deque[DeviceRow]] = defaultdict(deque)
    for r in rows:
        queues[r.device_id].append(r)
    devices = sorted(queues)
    kept: dict[int, float] = {}
    left: list[Left] = []
    while any(queues[d] for d in devices):
        first = next(queues[d][0] for d in devices if queues[d])
        block = [queues[d].popleft() for d in devices if queues[d] and queues[d][0].op_code == first.op_code]
        if any(word in first.op_code for word in COLLECTIVE_WORDS):
            keep, ns = block[0], sum(r.duration_ns for r in block) / len(block)
            how = f"the mean of {len(block)} devices, a collective op"
        else:
            keep = max(block, key=lambda r: r.duration_ns)
            ns = keep.duration_ns
            how = f"the slowest of {len(block)} devices"
        kept[keep.row] = ns
        left.extend(
            Left(
                r.row,
                r.op_code,
                f"merged across devices into row {keep.row} (device {keep.device_id}, {how})",
                "merged across devices",
            )
            for r in block
            if r is not keep
        )
    return Merged(kept, tuple(sorted(left, key=lambda x: x.row)), frozenset(devices))
