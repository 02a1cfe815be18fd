"""A progress bar on stderr for the long loops of ``accuracy``, ``calibrate`` and ``ingest``.

Nothing is shown for a run that ends within ``delay_s`` (2 s) of its start. Past that, when the stream is
a terminal, one line is rewritten in place (``\\r``, at most 10 times a second) and ended with a newline
when the run ends; otherwise (a pipe, a log file) a plain line is written every ``every_s`` (10 s). Several
phases (reading, predicting, recording) share one start time, so the delay is that of the whole command.

Interrupts: given a stop token (``stop``, a command whose Ctrl-C sets it), ``update`` raises ``Interrupted``
once it is set; a ``KeyboardInterrupt`` leaving the bar's block (a command Ctrl-C unwinds) becomes an
``Interrupted``. Either way the message says how far the run got: ``interrupted while cross-validating
(shapes): 3 of 11 done``.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

from loom_explorer.solve.interrupt import Interrupted, StopToken


class Progress:
    """The bar (module docstring); as a context manager, ``close`` runs on the way out, error or not."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        delay_s: float = 2.0,
        every_s: float = 10.0,
        stop: StopToken | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.stop = stop
        self.delay_s, self.every_s = delay_s, every_s
        self.started = time.monotonic()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._label, self._total, self._next = "", 0, self.started + delay_s
        self._done = 0
        self._shown = False  # a line is on screen that a newline must end

    def phase(self, label: str, total: int) -> None:
        """Start counting ``total`` items of ``label`` (e.g. ``"predicting"``)."""
        self._end_line()
        self._label, self._total, self._done = label, total, 0

    def update(self, done: int) -> None:
        """``done`` items of the current phase are finished (cheap: a clock read unless a line is due);
        ``Interrupted`` once the stop token is set."""
        self._done = done
        if self.stop is not None and self.stop.stopped:
            self._end_line()
            raise Interrupted(self.interrupted())
        now = time.monotonic()
        if now < self._next:
            return
        pct = 100.0 * done / self._total if self._total else 100.0
        elapsed = now - self.started
        if self.tty:
            width = 30
            filled = int(width * pct / 100)
            self.stream.write(
                f"\r{self._label}: [{'#' * filled}{'.' * (width - filled)}] {done:,}/{self._total:,} "
                f"({pct:.0f}%, {elapsed:.0f} s)"
            )
            self._shown = True
            self._next = now + 0.1
        else:
            self.stream.write(f"{self._label}: {done:,}/{self._total:,} ({pct:.0f}%, {elapsed:.0f} s)\n")
            self._next = now + self.every_s
        self.stream.flush()

    def close(self) -> None:
        self._end_line()

    def interrupted(self) -> str:
        """What an interrupt now ends: ``interrupted while LABEL: DONE of TOTAL done``."""
        if not self._label:
            return "interrupted"
        return f"interrupted while {self._label}: {self._done:,} of {self._total:,} done"

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
        if kind is KeyboardInterrupt:
            raise Interrupted(self.interrupted()) from None

    def _end_line(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False
