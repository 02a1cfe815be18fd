"""The CSV files ``accuracy``, ``calibrate`` and ``ingest`` read, and the checks every cell they use passes.

A file is read as UTF-8 text (a leading byte-order mark is allowed; a gzipped file is read as its
content). It is refused in one line when it does not exist, is not a regular file (a folder, a FIFO: never
opened), is not UTF-8, holds a NUL byte (binary), is not readable CSV, has no header or has no data rows.

A device-profiler report (``ingest``, ``improve``, the explorer's upload) is streamed (``open_source``,
``bytes_source``, ``csv_records``): its rows are read one at a time, never the whole text, so memory follows
what the reader keeps, not the file. Three limits bound it whatever it holds: ``MAX_DECOMPRESSED_BYTES``
(1 GiB of text once decompressed), ``MAX_LINE_CHARS`` (64 Mi characters in one line) and ``MAX_ROWS``
(500,000 records after the header, over 250 times the largest shipped capture); past one, the file is
refused in one line naming it and the limit. The measurement CSVs of ``accuracy`` and ``calibrate`` are read
whole (``read_text``: at most ``MAX_DECOMPRESSED_BYTES``) and share the row limit.

Rows are numbered as the file's lines, as an editor shows them: the header is line 1, a row starts on the
line where its first cell starts (a quoted cell may span lines), blank lines are not rows. A row with more
or fewer cells than the header is an error naming its line.

A number cell is refused (``CellError``, the reason) unless it is what its column means: a count or extent
(``positive_int``: decimal digits, at least 1, at most ``MAX_EXTENT``) or a duration (``positive_time``: a
finite decimal number of ns above 0, within ``MIN_TIME_NS..MAX_TIME_NS``; ``nan``, ``inf``, negatives and 0
are refused).

Problems are collected as ``RowIssue`` (file, line, column by header name, reason); ``group_issues`` says
them in a few lines: one per (column, reason), with the count and the first line numbers.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from loom_explorer.errors import LoomError

GZIP_MAGIC = b"\x1f\x8b"  # a gzipped file reads as its content

MAX_EXTENT = 1 << 31  # a tensor extent, grid size or count above this is not a measured op
MIN_TIME_NS, MAX_TIME_NS = 1e-3, 1e15  # a measured op time outside these is not one (1e15 ns: 11.6 days)
_DIGITS = re.compile(r"[0-9]+")


class CellError(LoomError, ValueError):
    """A cell that is not what its column means: ``reason`` is what it is (``"not a number"``), without
    the value; the message says both (``"'nan' is not a finite number"``)."""

    def __init__(self, value: str, reason: str) -> None:
        shown = value if len(value) <= 40 else value[:40] + "..."  # a long cell is cut in the message
        super().__init__(f"{shown!r} is {reason}")
        self.value, self.reason = value, reason


@dataclass(frozen=True, slots=True)
class RowIssue:
    """A row that cannot be used: ``file:line``, the column (header name) when one cell is at fault, and why.

    ``reason`` is the kind of problem without the cell's value (what ``group_issues`` groups on);
    ``detail`` says it with the value."""

    file: str
    line: int
    column: str | None
    reason: str
    detail: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}: " + (f"column {self.column}: " if self.column else "")
        return where + (self.detail or self.reason)


def group_issues(issues: list[RowIssue], first: int = 5) -> list[str]:
    """One line per (file, column, reason): ``"FILE: column C: REASON: N rows (lines a, b, c, ...)"``, in
    order of first appearance, with the first ``first`` line numbers."""
    groups: dict[tuple[str, str | None, str], list[int]] = {}
    for issue in issues:
        groups.setdefault((issue.file, issue.column, issue.reason), []).append(issue.line)
    out = []
    for (file, column, reason), lines in groups.items():
        shown = ", ".join(map(str, lines[:first])) + (", ..." if len(lines) > first else "")
        out.append(
            f"{file}: {f'column {column}: ' if column else ''}{reason}: {len(lines)} "
            f"row{'s' if len(lines) > 1 else ''} (line{'s' if len(lines) > 1 else ''} {shown})"
        )
    return out


def refusal(issues: list[RowIssue], flag: str = "--skip-bad-rows") -> str:
    """The one-line error for unusable rows: the first, how many more, and the flag that skips them."""
    more = len(issues) - 1
    return (
        f"{issues[0]}"
        + (f" (and {more} more unusable row{'s' if more > 1 else ''})" if more else "")
        + f"; fix the file or give {flag} to leave such rows out"
    )


def _regular_file(path: str | Path, error: type[ValueError]) -> Path:
    """``path`` when it names a regular file; else ``error`` naming it (a folder or device is never opened)."""
    p = Path(path)
    if not p.exists():
        raise error(f"{p}: no such file")
    if not p.is_file():
        raise error(f"{p}: not a regular file")
    return p


def read_text(path: str | Path, error: type[ValueError]) -> str:
    """The whole file as text, or ``error`` in one line naming the file (module docstring)."""
    p = _regular_file(path, error)
    try:
        if p.stat().st_size > MAX_DECOMPRESSED_BYTES:
            raise error(f"{p}: more than {MAX_DECOMPRESSED_BYTES >> 20:,} MiB: not a file this tool reads")
        data = p.read_bytes()
    except OSError as exc:
        raise error(f"{p}: cannot read ({exc.strerror})") from None
    return decode_text(str(p), data, error)


MAX_DECOMPRESSED_BYTES = 1 << 30  # a gzipped CSV larger than 1 GiB once decompressed is refused
MAX_LINE_CHARS = 1 << 26  # one line of more than 64 Mi characters is refused (profiler cells are <= 16 MiB)
MAX_ROWS = 500_000  # records after the header; the largest shipped capture has 1,872
_CHUNK_BYTES = 1 << 20


def decode_text(label: str, data: bytes, error: type[ValueError]) -> str:
    """``data`` (a file's bytes, gzipped or not) as text, or ``error`` in one line naming ``label``: the checks
    of ``read_text`` for bytes that came from elsewhere (an upload)."""
    try:
        if data[:2] == GZIP_MAGIC:  # a gzipped CSV (as the shipped captures are) reads as its content
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
                data = stream.read(MAX_DECOMPRESSED_BYTES + 1)
            if len(data) > MAX_DECOMPRESSED_BYTES:
                raise error(f"{label}: more than {MAX_DECOMPRESSED_BYTES >> 30} GiB once decompressed")
        text = data.decode("utf-8-sig")
    except (gzip.BadGzipFile, EOFError, zlib.error):
        raise error(f"{label}: not a CSV file (a damaged gzip stream)") from None
    except UnicodeDecodeError:
        raise error(f"{label}: not a CSV file (not UTF-8 text)") from None
    if "\x00" in text:
        raise error(f"{label}: not a CSV file (binary content)")
    if not text.strip():
        raise error(f"{label}: empty file (no header, no data rows)")
    return text


class _Counted(io.RawIOBase):
    """The bytes of ``inner`` (a file, or a gzip stream's content), refused past ``MAX_DECOMPRESSED_BYTES``."""

    def __init__(self, label: str, inner: BinaryIO, error: type[ValueError]) -> None:
        self.label, self.inner, self.error, self.count = label, inner, error, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        try:
            data = self.inner.read(len(buffer))
        except (gzip.BadGzipFile, EOFError, zlib.error):
            raise self.error(f"{self.label}: not a CSV file (a damaged gzip stream)") from None
        except OSError as exc:
            raise self.error(f"{self.label}: cannot read ({exc.strerror or exc})") from None
        self.count += len(data)
        if self.count > MAX_DECOMPRESSED_BYTES:
            raise self.error(
                f"{self.label}: more than {MAX_DECOMPRESSED_BYTES >> 20:,} MiB of text (once "
                "decompressed): not a report this tool reads"
            )
        buffer[: len(data)] = data
        return len(data)


class TextSource:
    """A file's text as lines, read as they are asked for (module docstring): ``lines()`` yields them with
    their ends (``\n``, ``\r\n`` or ``\r``, as ``csv`` wants); ``position()`` is how many bytes of the file
    itself (compressed, for a gzipped one) have been read, of ``size_bytes``. A context manager: the file
    is closed on the way out."""

    def __init__(self, label: str, binary: BinaryIO, size_bytes: int, error: type[ValueError]) -> None:
        self.label, self.size_bytes, self.error = label, size_bytes, error
        self._binary = binary
        try:
            gzipped = binary.read(2) == GZIP_MAGIC
            binary.seek(0)
        except OSError as exc:
            binary.close()
            raise error(f"{label}: cannot read ({exc.strerror or exc})") from None
        inner: BinaryIO = gzip.GzipFile(fileobj=binary) if gzipped else binary  # type: ignore[assignment]
        counted = io.BufferedReader(_Counted(label, inner, error), _CHUNK_BYTES)
        self._text = io.TextIOWrapper(counted, encoding="utf-8-sig", newline="")

    def position(self) -> int:
        try:
            return self._binary.tell()
        except (OSError, ValueError):
            return 0

    def lines(self) -> Iterator[str]:
        """Every line (module docstring's limits; not UTF-8 or a NUL byte: ``error``)."""
        while True:
            try:
                line = self._text.readline(MAX_LINE_CHARS + 1)
            except UnicodeDecodeError:
                raise self.error(f"{self.label}: not a CSV file (not UTF-8 text)") from None
            if not line:
                return
            if len(line) > MAX_LINE_CHARS:
                raise self.error(
                    f"{self.label}: a line longer than {MAX_LINE_CHARS:,} characters: not a report this tool reads"
                )
            if "\x00" in line:
                raise self.error(f"{self.label}: not a CSV file (binary content)")
            yield line

    def close(self) -> None:
        self._binary.close()

    def __enter__(self) -> TextSource:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def open_source(path: str | Path, error: type[ValueError]) -> TextSource:
    """The file at ``path`` as a :class:`TextSource`, or ``error`` in one line naming it (it does not exist,
    is not a regular file -- never opened then -- or cannot be opened)."""
    p = _regular_file(path, error)
    try:
        binary = p.open("rb")
        size = p.stat().st_size
    except OSError as exc:
        raise error(f"{p}: cannot read ({exc.strerror})") from None
    return TextSource(str(p), binary, size, error)


def bytes_source(label: str, data: bytes, error: type[ValueError]) -> TextSource:
    """Bytes that came from elsewhere (an upload) as a :class:`TextSource` labelled ``label``."""
    return TextSource(label, io.BytesIO(data), len(data), error)


def csv_records(
    path: str | Path, text: str | TextSource, error: type[ValueError], max_rows: int | None = None
) -> Iterator[tuple[int, list[str]]]:
    """``(line, cells)`` of every non-blank record of ``text`` (a whole text, or a streamed source), the
    header first (line numbers as in the module docstring); a CSV syntax error is ``error`` naming the file
    and line, and so is a record past ``max_rows`` (default ``MAX_ROWS``) after the header."""
    max_rows = MAX_ROWS if max_rows is None else max_rows
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 24))  # profiler ATTRIBUTES cells can be long
    lines = io.StringIO(text, newline="") if isinstance(text, str) else text.lines()
    reader = csv.reader(lines)
    last, records = 0, -1  # the header is not counted
    try:
        for cells in reader:
            line, last = last + 1, reader.line_num
            if cells and (cells[0].strip() or "".join(cells).strip()):  # the first test is almost always enough
                records += 1
                if records > max_rows:
                    raise error(
                        f"{path}:{line}: more than {max_rows:,} rows, the most a file may have (split the capture)"
                    )
                yield line, cells
    except csv.Error as exc:
        raise error(f"{path}:{reader.line_num}: not readable CSV ({exc})") from None


def width_issue(file: str, line: int, cells: list[str], header: list[str]) -> RowIssue | None:
    """A row of another length than the header (a short or long row), or None."""
    if len(cells) == len(header):
        return None
    kind = "short row" if len(cells) < len(header) else "long row"
    return RowIssue(
        file,
        line,
        None,
        f"{kind} (not as many cells as the header)",
        f"{kind}: {len(cells)} cells, the header has {len(header)}",
    )


def positive_int(text: str) -> int:
    """A count, extent or grid size: decimal digits, ``1 <= value <= MAX_EXTENT``."""
    t = text.strip()
    if not _DIGITS.fullmatch(t):
        raise CellError(text, "not a whole number")
    value = int(t)
    if value < 1:
        raise CellError(text, "below 1")
    if value > MAX_EXTENT:
        raise CellError(text, f"above {MAX_EXTENT}")
    return value


def positive_time(text: str) -> float:
    """A duration in ns: a finite decimal number above 0 (``nan``, ``inf``, negatives and 0 are refused),
    within ``MIN_TIME_NS..MAX_TIME_NS``."""
    try:
        value = float(text)
    except ValueError:
        raise CellError(text, "not a number") from None
    if not math.isfinite(value):
        raise CellError(text, "not a finite number")
    if value <= 0:
        raise CellError(text, "not above 0")
    if not MIN_TIME_NS <= value <= MAX_TIME_NS:
        raise CellError(text, f"outside {MIN_TIME_NS:g}..{MAX_TIME_NS:g} ns")
    return value


def boolean(text: str) -> bool:
    """``True`` / ``False`` (any case)."""
    value = {"true": True, "false": False}.get(text.strip().lower())
    if value is None:
        raise CellError(text, "not True or False")
    return value


def cell_issue(file: str, line: int, column: str, exc: CellError) -> RowIssue:
    return RowIssue(file, line, column, exc.reason, str(exc))
