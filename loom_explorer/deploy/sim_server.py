"""``python -m loom_explorer.deploy.sim_server``: the simulator's fork server (``warm_sim`` starts and talks to it).

It imports what every simulator run needs (``PRELOAD``: torch and tt-lang-sim, about 1.5-2 s) once, then reads
one request a line on standard input (a ``RunRequest`` as a JSON object), forks a copy of itself for it and
answers ``{"pid": N}`` on standard output. The copy (the run) is what ``python -m
loom_explorer.deploy.sim_launch ARGS`` run in ``cwd`` would be: its standard output and error go to the two
files, standard input is empty, SIGINT raises ``KeyboardInterrupt``, an uncaught exception prints its
traceback and exits 1, ``sys.exit(code)`` exits ``code``; its exit status is written to the ``status`` file as
it ends (the server's runs are reaped by the kernel, so no one can wait for them). A run asks the kernel to
SIGKILL it when the server ends.

The server ignores SIGINT (the parent handles Ctrl-C and kills the runs it stops waiting for) and exits when
its standard input ends: the parent closed it, or ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import traceback
from dataclasses import asdict, dataclass
from typing import NoReturn

from loom_explorer.solve.children import die_with_parent

PRELOAD = ("torch", "numpy", "ttl.sim.ttlang_sim", "loom_explorer.deploy.sim_launch")


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One run: the launcher's arguments, its working folder, and the files its output and status go to."""

    args: tuple[str, ...]
    cwd: str
    stdout: str
    stderr: str
    status: str

    def to_line(self) -> str:
        return json.dumps(asdict(self)) + "\n"

    @classmethod
    def from_line(cls, line: str) -> RunRequest:
        fields = json.loads(line)
        return cls(**{**fields, "args": tuple(fields["args"])})


def _exit_status(exc: SystemExit) -> int:
    """What ``python`` exits with for ``sys.exit(code)``: the integer, 0 for None, else 1 (the code printed)."""
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    print(exc.code, file=sys.stderr)
    return 1


def _redirect(fd: int, path: str, flags: int) -> None:
    target = os.open(path, flags, 0o600)
    os.dup2(target, fd)
    os.close(target)


def _run(request: RunRequest, server_pid: int) -> NoReturn:
    """The forked run (module docstring); never returns."""
    status = 1
    try:
        die_with_parent(server_pid)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.chdir(request.cwd)
        _redirect(0, os.devnull, os.O_RDONLY)
        _redirect(1, request.stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        _redirect(2, request.stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        from loom_explorer.deploy import sim_launch

        sys.argv = ["loom_explorer.deploy.sim_launch", *request.args]
        try:
            sim_launch.main()
            status = 0
        except SystemExit as exc:
            status = _exit_status(exc)
        except BaseException:  # reported as python reports an uncaught exception
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # nothing can be reported any more
                stream.flush()
        try:
            with open(request.status, "w") as out:
                out.write(str(status))
        finally:
            os._exit(status)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the runs
    for name in PRELOAD:
        with contextlib.suppress(ImportError):  # the run imports it again and reports the failure
            __import__(name)
    server_pid = os.getpid()
    for line in iter(sys.stdin.readline, ""):
        request = RunRequest.from_line(line)
        pid = os.fork()
        if pid == 0:
            _run(request, server_pid)
        print(json.dumps({"pid": pid}), flush=True)


if __name__ == "__main__":
    main()
