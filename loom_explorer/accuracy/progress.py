"""A progress bar on stderr for the long loops of ``accuracy``, ``calibrate`` and ``ingest``.

Nothing is shown for a run that ends within ``delay_s`` (2 s) of its start. Past that, when the stream is
a terminal, one line is rewritten in place (``\\r``, at most 10 times a second) and ended with a newline
when the run ends; otherwise (a pipe, a log file) a plain line is written every ``every_s`` (10 s). Several
phases (reading, predicting, recording) share one start time, so the delay is that of the whole command.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO


class Progress:
    """The bar (module docstring); as a context manager, ``close`` runs on the way out, error or not."""

    def __init__(self, stream: TextIO | None = None, *, delay_s: float = 2.0, every_s: float = 10.0) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.delay_s, self.every_s = delay_s, every_s
        self.started = time.monotonic()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._label, self._total, self._next = "", 0, self.started + delay_s
        self._shown = False  # a line is on screen that a newline must end

    def phase(self, label: str, total: int) -> None:
        """Start counting ``total`` items of ``label`` (e.g. ``"predicting"``)."""
        self._end_line()
        self._label, self._total = label, total

    def update(self, done: int) -> None:
        """``done`` items of the current phase are finished (cheap: a clock read unless a line is due)."""
        now = time.monotonic()
        if now < self._next:
            return
        pct = 100.0 * done / self._total if self._total else 100.0
        elapsed = now - self.started
        if self.tty:
            width = 30
            filled = int(width * pct / 100)
            self.stream.write(f"\r{self._label}: [{'#' * filled}{'.' * (width - filled)}] {done:,}/{self._total:,} "
                              f"({pct:.0f}%, {elapsed:.0f} s)")
            self._shown = True
            self._next = now + 0.1
        else:
            self.stream.write(f"{self._label}: {done:,}/{self._total:,} ({pct:.0f}%, {elapsed:.0f} s)\n")
            self._next = now + self.every_s
        self.stream.flush()

    def close(self) -> None:
        self._end_line()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def _end_line(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False
