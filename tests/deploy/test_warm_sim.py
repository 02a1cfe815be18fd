"""The simulator's runs are forked from a warm fork server (``deploy/warm_sim.py``): each run is still a process
of its own, with its folder, its output, its exit status, its time limit, and nothing it changes reaches the
next run. The "kernel" files here are plain Python files: tt-lang-sim runs a file's ``main()`` as
``python FILE`` would."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from waits import wait_until

from loom_explorer.deploy.warm_sim import RunTimedOut, run_launcher
from loom_explorer.solve.interrupt import StopToken

pytest.importorskip("ttl.sim")


def _file(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(body)
    return path


def _values(stdout: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)


REPORT = """import os, sys


def main():
    sim = sys.modules["ttl.sim.ttlang_sim"]  # preloaded by the fork server
    print(f"pid={os.getpid()}")
    print(f"server={os.getppid()}")
    print(f"cwd={os.getcwd()}")
    print(f"argv={' '.join(sys.argv[1:])}")
    print(f"seen={getattr(sim, 'LOOM_TEST_MARK', 'no')}")
    sim.LOOM_TEST_MARK = "yes"  # a change to a preloaded module: the next run must not see it
    print("to stderr", file=sys.stderr)
    sys.exit(3)


if __name__ == "__main__":
    main()
"""


def test_a_run_is_its_own_process_with_its_folder_output_and_status(tmp_path: Path) -> None:
    kernel = _file(tmp_path, "report.py", REPORT)
    runs = []
    for n in range(2):
        work = tmp_path / f"work{n}"
        work.mkdir()
        runs.append((work, run_launcher([str(kernel), "--flag", str(n)], work, 120.0)))
    seen = [(_values(finished.stdout), finished) for _, finished in runs]
    for (work, _), (values, finished) in zip(runs, seen, strict=True):
        assert finished.returncode == 3
        assert finished.stderr.strip() == "to stderr"
        assert Path(values["cwd"]).resolve() == work.resolve()
        assert values["seen"] == "no", "a run saw what the one before it changed in a preloaded module"
    assert [v["argv"] for v, _ in seen] == ["--flag 0", "--flag 1"]
    assert seen[0][0]["pid"] != seen[1][0]["pid"]
    assert seen[0][0]["server"] == seen[1][0]["server"], "the second run was not forked from the same server"


SLEEP = """import os, time
from pathlib import Path


def main():
    Path("pid").write_text(str(os.getpid()))
    time.sleep(600)


if __name__ == "__main__":
    main()
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polled"])
def test_a_run_over_its_time_limit_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pidfd: bool) -> None:
    if not pidfd:  # as where there is no pidfd (not Linux): the wait looks every POLL_S
        monkeypatch.delattr("os.pidfd_open")
    kernel = _file(tmp_path, "sleep.py", SLEEP)
    start = time.monotonic()
    with pytest.raises(RunTimedOut, match="did not end within 1 s"):
        run_launcher([str(kernel)], tmp_path, 1.0)
    assert time.monotonic() - start < 60
    # however far it got (a loaded machine may not have reached the file's main), no process works in its folder
    assert not _working_in(tmp_path)


def _working_in(folder: Path) -> list[int]:
    """The processes whose working folder is ``folder`` (Linux ``/proc``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")) == folder.resolve() and not _gone(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_run_ends_when_the_stop_token_is_set(tmp_path: Path) -> None:
    kernel = _file(tmp_path, "sleep.py", SLEEP)
    token = StopToken()

    def stop_once_started() -> None:
        wait_until(lambda: (tmp_path / "pid").is_file(), "the run's start")
        token.stop()

    stopper = threading.Thread(target=stop_once_started, daemon=True)
    stopper.start()
    finished = run_launcher([str(kernel)], tmp_path, 600.0, stop=token)
    stopper.join()
    assert finished.returncode == -9
    assert _gone(int((tmp_path / "pid").read_text()))


def test_a_stop_while_the_server_is_still_importing_ends_the_wait_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C during the fork server's imports (seconds) must not leave the command waiting for them: the
    command line ends a process 1.5 s after Ctrl-C at the latest, without its message."""
    from loom_explorer.deploy import warm_sim

    monkeypatch.setattr(warm_sim, "_server", None)  # a server of this test's own, started by the run below
    kernel = _file(tmp_path, "sleep.py", SLEEP)
    token = StopToken()
    token.stop()
    start = time.monotonic()
    finished = run_launcher([str(kernel)], tmp_path, 600.0, stop=token)
    assert finished.returncode == warm_sim.KILLED
    assert time.monotonic() - start < 1.0
    assert warm_sim._server is None, "the server that had not answered was not ended"
    assert not (tmp_path / "pid").exists()


def test_a_server_that_answers_nonsense_is_a_simulation_error_and_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    from loom_explorer.deploy import warm_sim
    from loom_explorer.deploy.simulator import SimulationError, simulate

    liar = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.readline(); print('no pid here', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    monkeypatch.setattr(warm_sim, "_server", liar)
    kernel = _file(tmp_path, "report.py", REPORT)
    with pytest.raises(SimulationError, match="could not start report.py: the simulator's fork server failed"):
        simulate(kernel, (1, 1))
    assert liar.poll() is not None and warm_sim._server is None  # ended; the next run starts a real one
    finished = run_launcher([str(kernel)], tmp_path, 120.0)
    assert finished.returncode == 3 and "pid=" in finished.stdout
