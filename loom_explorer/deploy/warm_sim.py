"""Run the simulator launcher (``loom_explorer.deploy.sim_launch``) in a process forked from a warm one.

Starting tt-lang-sim costs about 1.5-2 s of imports (torch, the simulator) before a kernel's first line runs; a
small kernel then simulates in well under a second. So this process keeps one fork server
(``python -m loom_explorer.deploy.sim_server``, started at the first run): it has imported those modules once
and forks a fresh copy of itself for each run. Each run is still a process of its own, as ``python -m
loom_explorer.deploy.sim_launch ARGS`` was: its own working folder, its own standard output and error (files,
read back when it ends), its exit status, a time limit after which it is killed, and nothing it changes (the
simulator's module state included) reaches the next run. Its environment is the server's: this process's
when the server started.

Lifetimes and Ctrl-C: the server exits when this process ends (its standard input closes) and ignores SIGINT;
each run asks the kernel to SIGKILL it when the server ends, so killing this process kills the run too. A run
takes SIGINT as a ``python -m`` child did (a Ctrl-C in the terminal reaches it and ends it), and it is killed
when the wait for it ends early: this process interrupted (``KeyboardInterrupt``) or the stop token set
(``solve.interrupt``, checked every ``POLL_S``), so a Ctrl-C that came while the server was still importing
ends the run too. A server that ended (killed with this process's other children, say) is started again at
the next run.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from loom_explorer.deploy.sim_server import RunRequest
from loom_explorer.solve.interrupt import STOP, StopToken

POLL_S = 0.1  # how often a wait for a run looks at the stop token and the clock
KILLED = -int(signal.SIGKILL)  # the status of a run that wrote none: it was killed

_lock = threading.Lock()  # one request and its answer at a time
_server: subprocess.Popen[str] | None = None


class RunTimedOut(Exception):
    """The run did not end within its time limit (it has been killed)."""


class ServerError(RuntimeError):
    """The fork server ended or answered something else than a run's process id."""


@dataclass(frozen=True, slots=True)
class Finished:
    returncode: int  # the launcher's exit status; KILLED when it was killed
    stdout: str
    stderr: str


def _fork(request: RunRequest, stop: StopToken) -> int | None:
    """Have the server fork a run for ``request`` (``sim_server``'s docstring); the run's process id, or None
    when the stop token was set before the server answered (it may still be importing: seconds)."""
    global _server
    with _lock:
        if _server is None or _server.poll() is not None:
            _server = subprocess.Popen(
                [sys.executable, "-m", "loom_explorer.deploy.sim_server"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        server = _server
        assert server.stdin is not None and server.stdout is not None
        pid = None
        try:
            server.stdin.write(request.to_line())
            server.stdin.flush()
            while not select.select([server.stdout], [], [], POLL_S)[0]:
                if stop.stopped:
                    return None
            pid = int(json.loads(server.stdout.readline())["pid"])
            return pid
        except Exception as exc:
            raise ServerError(f"the simulator's fork server failed: {exc!r}") from exc
        finally:
            if pid is None:  # stopped or interrupted before the answer (the next run would misread it), or a
                server.kill()  # server that failed: the next run starts a new one
                server.wait()
                _server = None


def _wait(pid: int, deadline: float, stop: StopToken) -> bool:
    """Wait for run ``pid`` to end; False when the deadline passed or the token was set first. On Linux 5.3 and
    later the wait wakes as the run ends (a pidfd); elsewhere it looks every ``POLL_S`` (the server's runs are
    reaped at once, so a run that ended is gone)."""
    try:
        handle = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
    except ProcessLookupError:  # it has already ended
        return True
    except OSError:  # a Linux older than 5.3: no pidfds
        handle = None
    try:
        while True:
            if handle is not None:
                if select.select([handle], [], [], POLL_S)[0]:
                    return True
            else:
                time.sleep(POLL_S)
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return True
            if stop.stopped or time.monotonic() >= deadline:
                return False
    finally:
        if handle is not None:
            os.close(handle)


def _kill(pid: int) -> None:
    """SIGKILL run ``pid`` and wait until it is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    _wait(pid, float("inf"), StopToken())


def run_launcher(args: list[str], cwd: Path, timeout_seconds: float, stop: StopToken | None = None) -> Finished:
    """Run ``python -m loom_explorer.deploy.sim_launch ARGS`` in ``cwd`` (module docstring); its output goes to
    ``cwd/launcher.stdout`` and ``cwd/launcher.stderr``, its status to ``cwd/launcher.status``. Raises
    ``RunTimedOut`` after ``timeout_seconds``; a run the stop token (default: the process-wide one) ended has
    status ``KILLED``."""
    files = {name: cwd / f"launcher.{name}" for name in ("stdout", "stderr", "status")}
    request = RunRequest(tuple(args), str(cwd), *(str(files[name]) for name in ("stdout", "stderr", "status")))
    token = stop or STOP
    pid = _fork(request, token)
    if pid is None:  # stopped before the run began
        return Finished(KILLED, "", "")
    ended = False
    try:
        ended = _wait(pid, time.monotonic() + timeout_seconds, token)
    finally:
        if not ended:  # out of time, stopped, or this process is being interrupted
            _kill(pid)
    if not ended and not token.stopped:
        raise RunTimedOut(f"the simulator run did not end within {timeout_seconds:g} s")

    def read(path: Path) -> str:
        return path.read_text(errors="replace") if path.is_file() else ""

    status = read(files["status"]).strip()
    return Finished(int(status) if status else KILLED, read(files["stdout"]), read(files["stderr"]))
