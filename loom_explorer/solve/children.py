"""Child processes that never outlive the command: pool workers that ignore Ctrl-C and die with their parent,
and ending every descendant of the process when it must stop at once.

Ctrl-C in a terminal signals the whole foreground process group, workers included. A worker of
``worker_pool`` ignores SIGINT (its initializer, ``_start_worker``), so the parent alone decides what an
interrupt means: leaving the pool by an exception (``KeyboardInterrupt``, ``Interrupted``, an error) cancels
every task not started, terminates the workers (SIGTERM, SIGKILL ``TERMINATE_GRACE_S`` later) and fails the
futures of the tasks they were running (``BrokenProcessPool``), instead of
``ProcessPoolExecutor``'s own exit, which waits for every submitted task to finish (minutes of folds). Leaving
it normally waits for the workers as usual.

A parent killed outright (SIGKILL, the OOM killer) runs no clean-up. On Linux each worker therefore asks the
kernel for SIGKILL when its parent goes (``prctl(PR_SET_PDEATHSIG)``, ``die_with_parent``); the kernel sends it
when the *thread* that started the worker ends, so a pool is used from the thread that made it (a ``with``
block). A worker whose parent died before it asked (its parent id is no longer the one it was given) exits at
once. A subprocess (the simulator, the TT-Lang compiler, the card runner) asks the same from ``subprocess``'s
``preexec_fn``: ``die_with_parent_preexec``, which only calls a ``prctl`` resolved before the fork (no
library is loaded between fork and exec).

``end_descendants`` is the last resort of an interrupted command (``interrupt.py``): SIGTERM to every process
below this one (found in ``/proc``, children before grandchildren), SIGKILL to those still there after the
grace period. Python's resource tracker is spared: it ends by itself when this process ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the command line imports this module at start-up (interrupt.py)
    from concurrent.futures import Future, ProcessPoolExecutor

PR_SET_PDEATHSIG = 1  # linux/prctl.h
TERMINATE_GRACE_S = 1.0  # from SIGTERM to SIGKILL for a worker that has not ended


_PRCTL: list[Callable[..., int]] = []  # _libc_prctl's


def _libc_prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, resolved once; None off Linux or without libc."""
    if not _PRCTL and sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            _PRCTL.append(ctypes.CDLL(None, use_errno=True).prctl)
    return _PRCTL[0] if _PRCTL else None


def die_with_parent(parent_pid: int | None = None) -> None:
    """On Linux, have the kernel SIGKILL this process when its parent ends (module docstring); exit at once
    when the parent is already gone (the parent id is not ``parent_pid``). Elsewhere nothing."""
    prctl = _libc_prctl()
    if prctl is None:
        return
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


def die_with_parent_preexec() -> Callable[[], None] | None:
    """A ``preexec_fn`` for ``subprocess`` that asks the kernel to SIGKILL the child when this process (the
    thread that runs ``subprocess``, which waits for the child) ends; None off Linux or without libc (prctl
    resolved here, in the parent: a preexec function should not load libraries)."""
    prctl = _libc_prctl()
    if prctl is None:
        return None
    return lambda: None if prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) else None


def _start_worker(parent_pid: int) -> None:
    """A pool worker's initializer: Ctrl-C is the parent's to handle; die with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent_pid)


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A ``ProcessPoolExecutor`` of ``workers`` spawned processes that ignore SIGINT and die with this one;
    left by an exception, its tasks are cancelled and its workers terminated (module docstring)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(os.getpid(),),
    )
    try:
        yield pool
    except BaseException:
        processes = list(pool._processes.values())  # the executor exposes no other handle
        futures = [item.future for item in list(pool._pending_work_items.values())]  # nor of its tasks
        manager = getattr(pool, "_executor_manager_thread", None)  # its thread: typeshed mistypes the attribute
        pool.shutdown(wait=False, cancel_futures=True)
        end_processes([p.pid for p in processes if p.pid is not None])
        for p in processes:
            p.join(TERMINATE_GRACE_S)
        if isinstance(manager, threading.Thread):  # it ends once the workers have; then nothing else touches
            manager.join(TERMINATE_GRACE_S)  # the futures
        _fail_unfinished(futures)
        raise
    pool.shutdown(wait=True)


def _fail_unfinished(futures: list[Future[object]]) -> None:
    """Fail the futures of tasks that were running on the ended workers. The executor's own thread does so
    only when it sees a worker die before it sees the shutdown; else they would stay running for ever."""
    from concurrent.futures import InvalidStateError
    from concurrent.futures.process import BrokenProcessPool

    for future in futures:
        if not future.done():
            with contextlib.suppress(InvalidStateError):  # the executor's thread failed it meanwhile
                future.set_exception(BrokenProcessPool("the pool was left by an exception; its workers were ended"))


def end_processes(pids: list[int], grace_s: float = TERMINATE_GRACE_S) -> None:
    """SIGTERM to each of ``pids``, SIGKILL to those still running ``grace_s`` later (zombies count as ended)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + grace_s
    left = [pid for pid in pids if _running(pid)]
    while left and time.monotonic() < end:
        time.sleep(0.02)
        left = [pid for pid in left if _running(pid)]
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def descendants(pid: int | None = None) -> list[int]:
    """Every running process below ``pid`` (default this one), children first; Linux ``/proc`` (elsewhere
    the children ``multiprocessing`` started)."""
    root = os.getpid() if pid is None else pid
    proc = Path("/proc")
    if not proc.is_dir():
        import multiprocessing

        return [p.pid for p in multiprocessing.active_children() if p.pid is not None]
    parent_of: dict[int, int] = {}
    for entry in proc.iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[0] != "Z":
                parent_of[int(entry.name)] = int(stat[1])
    found, level = [], [root]
    while level:
        level = [child for child, parent in parent_of.items() if parent in level]
        found += level
    return found


def end_descendants(grace_s: float = 0.5) -> None:
    """``end_processes`` for every descendant of this process but Python's resource tracker (module
    docstring); imports nothing (it may run in a signal handler)."""
    tracking = sys.modules.get("multiprocessing.resource_tracker")  # not imported: no tracker was started
    tracker = getattr(getattr(tracking, "_resource_tracker", None), "_pid", None)  # no public handle
    end_processes([pid for pid in descendants() if pid != tracker], grace_s)


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state, ppid, pgrp, ...), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _running(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"
