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
signal handler would only run after the search returns). The Python-level handler never raises in a
command whose searches the token stops (``raise_first=False``); in any other command it raises
``KeyboardInterrupt`` in the main thread once, the first time, so that the command unwinds (its pools end their
workers: ``children.worker_pool``). A second SIGINT ends the process at once with status 130 (``os._exit``:
no clean-up, no abort message), after ending every process below it (``children.end_descendants``).

On the command line (``exit_after_s``) the first SIGINT also starts a clock: a process still running that
long after it, whatever it is doing or waiting for (a subprocess, a thread, a cluster closing), ends the same
way, so one Ctrl-C ends any command within about ``EXIT_AFTER_S`` seconds with no process of it left; the
processes below it are ended when it leaves the block, and later SIGINTs are ignored (it is on its way out).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the command line imports this module before any solve
    from ortools.sat.python import cp_model

from loom_explorer.solve.children import end_descendants

EXIT_INTERRUPTED = 130  # the shell's convention for a process ended by SIGINT (128 + 2)
_RETRY_SECONDS = 0.02
EXIT_AFTER_S = 1.5  # a command line process ends this long after Ctrl-C at the latest (stop_on_sigint)
_END_CHILDREN_S = 0.3  # from SIGTERM to SIGKILL for the processes below one that exits at once


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


_EXITING: list[str] = []  # set by the first exit_now
_INTERRUPTED: list[bool] = []  # set when a command line block (exit_after_s) saw a SIGINT


def exit_now(message: str) -> None:
    """End the process at once with status 130 after ``message`` on stderr and every process below it ended
    (any thread, or a signal handler: no lock of this process is taken; buffered output is lost)."""
    if _EXITING:  # another thread (or the handler) is already on its way out
        return
    _EXITING.append(message)
    os.write(2, f"\nloom-explorer: {message}\n".encode())
    try:
        end_descendants(_END_CHILDREN_S)
    finally:
        os._exit(EXIT_INTERRUPTED)


@contextlib.contextmanager
def stop_on_sigint(
    token: StopToken = STOP, *, raise_first: bool = False, exit_after_s: float | None = None
) -> Iterator[None]:
    """While active, the first SIGINT sets ``token`` (module docstring) and, with ``raise_first``, raises
    ``KeyboardInterrupt`` in the main thread; a second one exits with status 130. ``exit_after_s`` (a command
    line process only): the process ends that many seconds after the first SIGINT whatever it is doing, and
    SIGINT is ignored after the block (the process is ending). Main thread only; without a SIGINT (or without
    ``exit_after_s``) the previous handler and wakeup file descriptor are restored on exit."""
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    count = 0  # SIGINTs the watcher saw
    handled = 0  # SIGINTs the Python-level handler saw (it may run late, or alone if the wakeup fd is replaced)

    def give_up() -> None:
        exit_now(f"interrupted: still stopping {exit_after_s:g} s after Ctrl-C, so exiting now")

    def watch() -> None:
        nonlocal count
        while True:
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data:  # closed
                return
            for signum in data:
                if signum == 0:  # the sentinel written on exit, after every signal before it
                    return
                if signum != signal.SIGINT:
                    continue
                count += 1
                if count == 1:
                    token.stop()
                    if exit_after_s is not None:  # a daemon: a process that ends by itself is not held
                        timer = threading.Timer(exit_after_s, give_up)
                        timer.daemon = True
                        timer.start()
                else:
                    exit_now("interrupted again: exiting now")

    def on_sigint(signum: int, frame: object) -> None:
        nonlocal handled
        handled += 1
        if handled > 1:
            exit_now("interrupted again: exiting now")
        elif raise_first:  # the first SIGINT unwinds the command
            raise KeyboardInterrupt

    previous_handler = signal.signal(signal.SIGINT, on_sigint)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    watcher = threading.Thread(target=watch, name="loom-sigint", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # while the block ends (a SIGINT now is not lost: see below)
        signal.set_wakeup_fd(previous_fd)
        with contextlib.suppress(OSError):
            writer.send(b"\0")
        watcher.join(1.0)  # every SIGINT written before the sentinel is counted (the token set) by now
        writer.close()
        reader.close()
        interrupted = count > 0 or handled > 0
        if interrupted and exit_after_s is not None:
            # the process is ending, within exit_after_s of the first SIGINT (the timer): later ones stay ignored
            # (Python resets a handler function to the default on its way out, and the process would end by
            # the signal instead of with status 130)
            _INTERRUPTED.append(True)
            end_descendants(_END_CHILDREN_S)
        else:
            signal.signal(signal.SIGINT, previous_handler)


def exit_if_interrupted(code: int) -> int:
    """``code``; or, when a SIGINT reached this command line process (``stop_on_sigint`` with ``exit_after_s``
    saw one), end the process now with status ``code``: its exit functions (``atexit``) run and stdout and stderr
    are flushed, the rest of Python's finalization is skipped (it only frees memory, and takes seconds after a
    server or a cluster, while no thread can run the exit timer)."""
    if not _INTERRUPTED:
        return code
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
