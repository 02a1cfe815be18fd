"""Stopping running solves: a thread-safe stop token, and Ctrl-C handling for the command line.

Every CP-SAT search registers with a ``StopToken`` while it runs (``CompiledSchedule.solve``). ``stop()`` sets
the token and asks each registered search to stop with CP-SAT's own mechanism (``CpSolver.stop_search``):
the search returns within milliseconds, with the best schedule it found (status ``FEASIBLE``) or none
(``UNKNOWN``); a search that had finished its proof keeps it. Once the token is set no new search starts,
so the solver's loops (candidates, screens, ``top_k``, explanations) run to their end at once, and every
candidate whose search did not finish is reported ``interrupted``.

A signal never crosses a solver: CP-SAT's own SIGINT handler is turned off (``catch_sigint_signal``), and
``stop_on_sigint`` (used by the command line, main thread only) routes SIGINT through
``signal.set_wakeup_fd`` to a watcher thread, which calls ``stop()``: the C-level signal handler writes
the signal's number to a socket at once, even while the main thread is inside a search (where a Python
signal handler would only run after the search returns). The Python-level handler does nothing and never
raises. A second SIGINT ends the process at once with status 130 (``os._exit``: no clean-up, no abort
message).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the command line imports this module before any solve
    from ortools.sat.python import cp_model

EXIT_INTERRUPTED = 130  # the shell's convention for a process ended by SIGINT (128 + 2)
_RETRY_SECONDS = 0.02


class Interrupted(Exception):
    """Raised where work stops on a stop request without results to show (e.g. while models are built)."""


class StopToken:
    """A stop request shared by every search that registers with it; thread-safe, set once.

    ``stop_search`` is lost when it comes before the solver has started its search (CP-SAT creates the
    search in ``solve``), so ``stop()`` keeps asking the registered searches to stop, every 20 ms, from a
    helper thread until none is left."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._solvers: set[cp_model.CpSolver] = set()
        self._stopper: threading.Thread | None = None

    @property
    def stopped(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout_seconds: float) -> bool:
        """Wait until the token is set or ``timeout_seconds`` pass; whether it is set."""
        return self._event.wait(timeout_seconds)

    def stop(self) -> None:
        """Set the token and stop every registered search (idempotent; any thread, not a signal handler)."""
        self._event.set()
        with self._lock:
            if self._stopper is None or not self._stopper.is_alive():
                self._stopper = threading.Thread(target=self._stop_searches, name="loom-stop", daemon=True)
                self._stopper.start()

    def clear(self) -> None:
        """Allow searches again (a long-lived process that handled one stop request)."""
        self._event.clear()

    def _stop_searches(self) -> None:
        while True:
            with self._lock:
                solvers = list(self._solvers)
            if not solvers:
                return
            for solver in solvers:
                solver.stop_search()
            time.sleep(_RETRY_SECONDS)

    @contextlib.contextmanager
    def searching(self, solver: cp_model.CpSolver) -> Iterator[bool]:
        """Register ``solver`` for the duration of its search; yields False when the token is already set
        (then the caller does not search)."""
        with self._lock:
            self._solvers.add(solver)
        try:
            if self.stopped:
                yield False
                return
            yield True
        finally:
            with self._lock:
                self._solvers.discard(solver)


STOP = StopToken()  # the process-wide token: the command line sets it on Ctrl-C; Sessions use it by default


@contextlib.contextmanager
def stop_on_sigint(token: StopToken = STOP) -> Iterator[None]:
    """While active, the first SIGINT sets ``token`` (module docstring), a second one exits with status 130.
    Main thread only; the previous handler and wakeup file descriptor are restored on exit."""
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    count = 0

    def watch() -> None:
        nonlocal count
        while True:
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data or 0 in data:  # closed, or the sentinel written on exit
                return
            for signum in data:
                if signum != signal.SIGINT:
                    continue
                count += 1
                if count == 1:
                    token.stop()
                else:
                    os.write(2, b"\nloom-explorer: interrupted again: exiting now\n")
                    os._exit(EXIT_INTERRUPTED)

    previous_handler = signal.signal(signal.SIGINT, lambda signum, frame: None)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    watcher = threading.Thread(target=watch, name="loom-sigint", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGINT, previous_handler)
        with contextlib.suppress(OSError):
            writer.send(b"\0")
        watcher.join(1.0)
        writer.close()
        reader.close()
