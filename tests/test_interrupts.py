"""Ctrl-C ends every command promptly with nothing left running: real ``loom-explorer`` subprocesses (real
CP-SAT, real process pools, a real Dask cluster), each in its own session, signalled as a terminal signals
them (SIGINT to the whole process group), once or twice; or the main process killed outright.

Each test waits for a condition (a line on stderr, or the pool's workers busy computing) with a generous
time-out for start-up on a loaded machine, then measures from the signal to the exit alone. ``STOP_S``
leaves slack over the 2 s the commands aim at (``solve/interrupt.py``: ``EXIT_AFTER_S``), and is far below
the 15-65 s a pool that waited for its running tasks took. No process of the command's group may remain.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "loom_explorer" / "data" / "published"
STOP_S = 4.0  # from the (first) signal to the main process's exit
GONE_S = 5.0  # from the main process's exit (or death) until no process of its group is left
START_S = 240.0  # start-up, reading and predicting before the condition holds, on a loaded machine
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # state, ppid, pgrp, ..., utime (12th), stime (13th)


def group_members(pgid: int) -> dict[int, tuple[int, float]]:
    """The live processes of group ``pgid`` (zombies excluded): pid -> (parent pid, CPU seconds used)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and int(stat[2]) == pgid and stat[0] != "Z":
                out[int(entry.name)] = (int(stat[1]), (int(stat[11]) + int(stat[12])) / CLOCK_TICKS)
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class Command:
    """``argv`` in its own session (its pid is its process group), stdout and stderr collected as they come."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
        self.pgid = self.proc.pid
        self._out, self._err = bytearray(), bytearray()
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self._out), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self._err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: io.BufferedReader | None, into: bytearray) -> None:
        assert stream is not None
        while chunk := stream.read1(4096):
            into.extend(chunk)

    @property
    def err(self) -> str:
        return self._err.decode(errors="replace")

    @property
    def out(self) -> str:
        return self._out.decode(errors="replace")

    def wait_until(self, condition: Callable[[], bool], what: str, timeout_s: float = START_S) -> None:
        end = time.monotonic() + timeout_s
        while not condition():
            assert self.proc.poll() is None, f"the command ended before {what}: {self.err[-3000:]}"
            assert time.monotonic() < end, f"no {what} within {timeout_s} s: {self.err[-3000:]}"
            time.sleep(0.1)

    def workers_busy(self, cpu_s: float = 3.0) -> bool:
        """A process below the main one has used ``cpu_s`` CPU seconds: past its start-up, computing."""
        return any(pid != self.pgid and cpu >= cpu_s for pid, (_, cpu) in group_members(self.pgid).items())

    def simulating(self) -> bool:
        """A simulator run is under way: a process the simulator's fork server forked (both run its module;
        deploy/warm_sim.py)."""
        members = group_members(self.pgid)
        servers = {pid for pid in members if "loom_explorer.deploy.sim_server" in _cmdline(pid)}
        return any(members[pid][0] in servers for pid in servers)

    def interrupt(self, times: int = 1) -> tuple[int, float]:
        """SIGINT to the process group ``times`` times (0.2 s apart); (exit status, seconds from the first
        signal to the exit)."""
        assert self.proc.poll() is None, self.err[-3000:]
        sent = time.monotonic()
        for n in range(times):
            if n:
                time.sleep(0.2)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pgid, signal.SIGINT)
        return self.wait(sent)

    def kill(self) -> None:
        """SIGKILL to the main process alone, as the OOM killer or ``kill -9`` would; waits for its end."""
        self.proc.kill()
        self.proc.wait(30)

    def wait(self, since: float) -> tuple[int, float]:
        """(exit status, seconds from ``since`` to the exit); -999 when it has not ended within 60 s."""
        try:
            code = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            code = -999
        seconds = time.monotonic() - since
        for reader in self._readers:
            reader.join(10)
        return code, seconds

    def assert_nothing_left(self) -> None:
        end = time.monotonic() + GONE_S
        left = group_members(self.pgid)
        while left and time.monotonic() < end:
            time.sleep(0.1)
            left = group_members(self.pgid)
        assert not left, f"processes left behind: {left}"

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)


@contextlib.contextmanager
def command(argv: list[str], cwd: Path) -> Iterator[Command]:
    """``argv`` as a ``Command``; whatever is left of its group is killed on the way out."""
    run = Command(argv, cwd)
    try:
        yield run
    finally:
        run.close()


def _clean_stop(run: Command, code: int, seconds: float) -> None:
    err = run.err
    assert "Traceback" not in err and "terminate called" not in err and "leaked" not in err, err[-3000:]
    assert code == 130, (code, err[-3000:])
    assert seconds < STOP_S, (seconds, err[-3000:])
    run.assert_nothing_left()


LOOM = [sys.executable, "-m", "loom_explorer.cli"]
GEMM_ACCURACY = [
    "accuracy",
    "--data",
    str(PUBLISHED / "gemm_flops_calibration.csv"),
    "--configs",
    str(PUBLISHED / "gemm_manual_configs.csv"),
    "--cross-validate",
]
ATTENTION_ACCURACY = ["accuracy", "--kernel", "flash_attention", "--cross-validate"]


@pytest.mark.slow
def test_one_ctrl_c_ends_the_gemm_cross_validation_and_its_pool(tmp_path: Path) -> None:
    with command(LOOM + GEMM_ACCURACY, tmp_path) as run:
        run.wait_until(run.workers_busy, "pool workers computing folds")
        code, seconds = run.interrupt(1)
        _clean_stop(run, code, seconds)
        # it says how far it got; a fold takes tens of seconds, so the count is small but stated
        assert re.search(r"interrupted while cross-validating \(shapes\): \d+ of \d+ done", run.err), run.err[-2000:]
        assert run.out == ""  # no half table


@pytest.mark.slow
def test_two_ctrl_cs_end_the_attention_cross_validation_and_its_pool(tmp_path: Path) -> None:
    with command(LOOM + ATTENTION_ACCURACY, tmp_path) as run:
        run.wait_until(run.workers_busy, "pool workers computing folds")
        code, seconds = run.interrupt(2)
        _clean_stop(run, code, seconds)


@pytest.mark.slow
def test_pool_workers_die_with_a_killed_parent(tmp_path: Path) -> None:
    with command(LOOM + ATTENTION_ACCURACY, tmp_path) as run:
        run.wait_until(run.workers_busy, "pool workers computing folds")
        workers = [pid for pid in group_members(run.pgid) if pid != run.pgid]
        assert workers
        run.kill()
        run.assert_nothing_left()  # nobody ended them but the kernel (PR_SET_PDEATHSIG)


@pytest.mark.slow
@pytest.mark.parametrize("times", [1, 2])
def test_ctrl_c_ends_a_parallel_solve(tmp_path: Path, times: int) -> None:
    with command(
        [
            *LOOM,
            "solve",
            "gemm",
            "--hw",
            "wormhole_n150",
            "--shape",
            "M=16384,K=16384,N=16384",
            "--time-limit",
            "100",
            "--parallel",
            "2",
            "--no-cache",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
        tmp_path,
    ) as run:
        run.wait_until(lambda: "solving 20 candidates" in run.err, "the solving line")
        code, seconds = run.interrupt(times)
        _clean_stop(run, code, seconds)
        assert "interrupted" in run.err


@pytest.mark.slow
@pytest.mark.parametrize("times", [1, 2])
def test_ctrl_c_ends_serve(tmp_path: Path, times: int) -> None:
    pytest.importorskip("panel")
    with command([*LOOM, "serve", "--port", "0"], tmp_path) as run:
        run.wait_until(lambda: "serving the explorer on" in run.err, "the serving line")
        code, seconds = run.interrupt(times)
        _clean_stop(run, code, seconds)
        assert "loom-explorer: interrupted" in run.err


@pytest.mark.slow
def test_ctrl_c_ends_a_simulator_run_of_deploy(tmp_path: Path) -> None:
    """The simulator runs in a process forked by ``deploy``'s fork server; Ctrl-C ends all three, and nothing is
    recorded."""
    pytest.importorskip("ttl.sim")
    store = tmp_path / "store.sqlite"
    with command(
        [
            *LOOM,
            "deploy",
            "gemm",
            "--hw",
            "wormhole_n150",
            "--shape",
            "M=2048,K=2048,N=2048",  # its simulator run takes seconds
            "--runner",
            "simulator",
            "--store",
            str(store),
            "--no-cache",
        ],
        tmp_path,
    ) as run:
        run.wait_until(run.simulating, "a simulator run")
        code, seconds = run.interrupt(1)
        _clean_stop(run, code, seconds)
        assert "loom-explorer: interrupted" in run.err
    if store.exists():  # the solve may have been remembered; no measurement was recorded
        from loom_explorer.store import open_store

        with open_store(store) as s:
            assert not s.measurements()


@pytest.mark.slow
def test_the_simulator_dies_with_a_killed_deploy(tmp_path: Path) -> None:
    pytest.importorskip("ttl.sim")
    with command(
        [
            *LOOM,
            "deploy",
            "gemm",
            "--hw",
            "wormhole_n150",
            "--shape",
            "M=2048,K=2048,N=2048",  # its simulator run takes seconds
            "--runner",
            "simulator",
            "--store",
            str(tmp_path / "store.sqlite"),
            "--no-cache",
        ],
        tmp_path,
    ) as run:
        run.wait_until(run.simulating, "a simulator run")
        run.kill()
        run.assert_nothing_left()  # nobody ended them but the server's closed input and PR_SET_PDEATHSIG


@pytest.mark.slow
def test_ctrl_c_during_improve_says_how_many_ops_were_solved(tmp_path: Path) -> None:
    output = tmp_path / "configs.py"
    capture = PUBLISHED / "captures" / "bh_p100_dlv3.csv.gz"  # 41 ops (24 matmuls, 17 convs), a minute or two
    with command(
        [*LOOM, "improve", str(capture), "--no-cache", "--store", str(tmp_path / "store.sqlite"), "-o", str(output)],
        tmp_path,
    ) as run:
        seen = re.compile(r"solving ops: ([1-9]\d*)/(\d+)")  # the progress line (into a pipe: every 10 s)
        run.wait_until(lambda: seen.search(run.err) is not None, "a progress line with an op solved")
        solved_before = int(seen.findall(run.err)[-1][0])
        code, seconds = run.interrupt(1)
        _clean_stop(run, code, seconds)
        said = re.search(r"interrupted while solving ops: (\d+) of (\d+) solved; nothing printed or written", run.err)
        assert said, run.err[-2000:]
        assert int(said.group(1)) >= solved_before and int(said.group(2)) == 41
        assert not output.exists() and run.out == ""


@pytest.mark.slow
def test_sweep_progress_into_a_pipe_has_no_carriage_return(tmp_path: Path) -> None:
    shapes = tmp_path / "shapes.csv"
    shapes.write_text(
        'kernel,shape,dtype,fidelity,label\ngemm,"M=128,K=128,N=128",bf16,hifi2,tiny\n'
        'gemm,"M=256,K=256,N=256",bf16,hifi2,small\n'
    )
    with command(
        [
            *LOOM,
            "sweep",
            str(shapes),
            "--hw",
            "wormhole_n150",
            "--out",
            str(tmp_path / "r.sqlite"),
            "--workers",
            "1",
            "--no-cache",
        ],
        tmp_path,
    ) as run:
        code, _ = run.wait(time.monotonic())
        assert code == 0, run.err[-3000:]
        assert "\r" not in run.err and "\r" not in run.out
        assert "sweep: 2/2 recorded" in run.err, run.err


def test_exit_after_s_ends_a_command_that_does_not_stop_and_its_children(tmp_path: Path) -> None:
    """A command that neither stops nor unwinds on Ctrl-C (here: waiting for an event nobody sets, with a
    subprocess below it) still ends ``EXIT_AFTER_S`` after the signal, status 130, its subprocess ended."""
    script = tmp_path / "stuck.py"
    script.write_text(
        "import subprocess, sys, threading\n"
        "from loom_explorer.solve.interrupt import EXIT_AFTER_S, STOP, stop_on_sigint\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "with stop_on_sigint(STOP, exit_after_s=EXIT_AFTER_S):\n"
        "    print('ready', file=sys.stderr, flush=True)\n"
        "    threading.Event().wait()\n"
    )
    with command([sys.executable, str(script)], tmp_path) as run:
        run.wait_until(lambda: "ready" in run.err, "the ready line", 60)
        sent = time.monotonic()
        os.kill(run.pgid, signal.SIGINT)  # the main process only: the child does not see it
        code, seconds = run.wait(sent)
        assert code == 130, run.err
        assert 1.0 < seconds < STOP_S, seconds
        assert "still stopping" in run.err
        run.assert_nothing_left()


# ------------------------------------------------------------------------------------ the parts, in process
def _sleep_s(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def _sigint_handler() -> object:
    return signal.getsignal(signal.SIGINT)


def test_a_pool_left_by_an_exception_ends_its_running_workers_at_once() -> None:
    from loom_explorer.solve.children import worker_pool

    with pytest.raises(RuntimeError), worker_pool(1) as pool:
        assert pool.submit(_sigint_handler).result(timeout=120) == signal.SIG_IGN  # the parent decides
        running = pool.submit(_sleep_s, 600)
        pids = list(pool._processes)
        end = time.monotonic() + 30
        while not running.running() and time.monotonic() < end:
            time.sleep(0.05)
        left = time.monotonic()
        raise RuntimeError("the caller gives up")
    assert time.monotonic() - left < STOP_S  # ProcessPoolExecutor's own exit waits for the 600 s task
    assert running.cancelled() or running.done()
    assert all(_stat(pid) is None or _stat(pid)[0] == "Z" for pid in pids)  # type: ignore[index]


def test_progress_says_how_far_an_interrupted_run_got() -> None:
    from loom_explorer.accuracy.progress import Progress
    from loom_explorer.solve.interrupt import Interrupted, StopToken

    token = StopToken()
    with (
        pytest.raises(Interrupted, match=r"^interrupted while solving ops: 3 of 24 done$"),
        Progress(io.StringIO(), stop=token) as progress,
    ):
        progress.phase("solving ops", 24)
        for done in range(24):
            if done == 3:
                token.stop()
            progress.update(done)
    # a command that unwinds on Ctrl-C (no token): the KeyboardInterrupt leaves the bar as the same message
    with (
        pytest.raises(Interrupted, match=r"^interrupted while cross-validating \(shapes\): 2 of 11 done$"),
        Progress(io.StringIO()) as progress,
    ):
        progress.phase("cross-validating (shapes)", 11)
        progress.update(2)
        raise KeyboardInterrupt


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_sweep_progress_redraws_on_a_terminal_and_writes_plain_lines_elsewhere(tmp_path: Path) -> None:
    from loom_explorer.sweep.ops import read_shapes
    from loom_explorer.sweep.run import _progress
    from loom_explorer.sweep.task import failed_record

    shapes = tmp_path / "shapes.csv"
    shapes.write_text('kernel,shape,dtype,fidelity,label\ngemm,"M=128,K=128,N=128",bf16,hifi2,tiny\n')
    record = failed_record("wormhole_n150", read_shapes(shapes)[0], "only a label here")
    total = 50
    log, terminal = io.StringIO(), _Terminal()
    for out in (log, terminal):
        show = _progress(out)
        for done in range(1, total + 1):
            show(done, total, record)
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    # the first record and the last, nothing between them within 10 s
    assert lines == [
        f"sweep: 1/{total} recorded, {lines[0].split(', ')[1]}, last failed: tiny on wormhole_n150",
        f"sweep: {total}/{total} recorded, {lines[1].split(', ')[1]}, last failed: tiny on wormhole_n150",
    ]
    drawn = terminal.getvalue()
    assert drawn.count("\r") == total and drawn.endswith("\n") and drawn.count("\n") == 1


def test_a_subprocess_started_with_the_preexec_dies_with_its_killed_parent(tmp_path: Path) -> None:
    """What the simulator, compiler and card-runner launches use: the parent SIGKILLed, its child goes too."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import subprocess, sys, time\n"
        "from loom_explorer.solve.children import die_with_parent_preexec\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],\n"
        "                         preexec_fn=die_with_parent_preexec())\n"
        "print('child', child.pid, file=sys.stderr, flush=True)\n"
        "child.wait()\n"
    )
    with command([sys.executable, str(script)], tmp_path) as run:
        run.wait_until(lambda: "child " in run.err, "the child's pid", 60)
        child = int(run.err.split("child ")[1].split()[0])
        assert child in group_members(run.pgid)
        run.kill()
        run.assert_nothing_left()


def test_a_sigint_just_before_the_block_ends_still_counts() -> None:
    """The signal's byte and the watcher's exit sentinel can arrive in one read: the signal still sets the
    token (serve's loop ends at once on Ctrl-C, and used to exit 0 now and then)."""
    from loom_explorer.solve.interrupt import StopToken, stop_on_sigint

    # Python's own handler to start from, whatever the runner left (a background job starts with SIGINT ignored)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        for _ in range(20):
            token = StopToken()
            with stop_on_sigint(token):
                os.kill(os.getpid(), signal.SIGINT)
            assert token.stopped
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored (no exit_after_s)
    finally:
        if before is not None:  # None: a handler not installed from Python, left as the test found it
            signal.signal(signal.SIGINT, before)
