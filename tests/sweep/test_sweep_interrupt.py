"""Ctrl-C to a running ``loom-explorer sweep`` (real Dask LocalCluster of 2 worker processes, real CP-SAT).

Ctrl-C in a terminal signals the whole process group, the workers included; the sweep must stop promptly, close
its cluster so that no process of the group is left, print no abort message (``terminate called ...``), exit
130, and leave the rows it recorded before the signal valid.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from waits import WAIT_S

from loom_explorer.store import open_store

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# two tiny ops that finish at once, then two that keep both workers solving for well over a minute
SHAPES = """kernel,shape,dtype,fidelity,label
gemm,"M=128,K=128,N=128",bf16,hifi2,tiny 128
gemm,"M=256,K=256,N=256",bf16,hifi2,tiny 256
gemm,"M=16384,K=16384,N=16384",bf16,hifi2,big 1
gemm,"M=16384,K=16384,N=8192",bf16,hifi2,big 2
"""
STOP_SECONDS = 4.0  # from the signal to the main process's exit (its workers are ended at once: well under 1 s)


def _recorded(store: Path) -> int:
    """Sweep rows committed to ``store`` so far (read-only: the sweep is writing it)."""
    if not store.exists():
        return 0
    with contextlib.closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=1)) as db:
        try:
            return int(db.execute("SELECT COUNT(*) FROM sweep_results").fetchone()[0])
        except sqlite3.OperationalError:  # the table is not made yet, or the writer holds the lock
            return 0


def _live_members(pgid: int) -> list[str]:
    """The processes of group ``pgid`` that have not exited (zombies waiting for init to reap them excluded)."""
    live = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()  # state, ppid, pgrp, ...
            if int(fields[2]) == pgid and fields[0] != "Z":
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")[:120]
                live.append(f"{entry.name} {command!r}")
    return live


def test_ctrl_c_to_the_process_group_stops_the_sweep_and_its_workers(tmp_path):
    shapes = tmp_path / "shapes.csv"
    shapes.write_text(SHAPES)
    store = tmp_path / "results.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "loom_explorer.cli",
            "sweep",
            str(shapes),
            "--hw",
            "wormhole_n150",
            "--out",
            str(store),
            "--workers",
            "2",
            "--time-limit",
            "100",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    pgid = proc.pid
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(iter(lambda: proc.stderr.read(1), "")), daemon=True)
    reader.start()
    try:
        end = time.monotonic() + WAIT_S  # the cluster's start and the tiny ops take minutes on a loaded machine
        while _recorded(store) < 2:  # both tiny ops recorded, the big ones solving
            assert proc.poll() is None and time.monotonic() < end, "".join(err)[-3000:]
            time.sleep(0.1)
        time.sleep(1.0)
        assert proc.poll() is None
        sent = time.monotonic()
        os.killpg(pgid, signal.SIGINT)
        code = proc.wait(timeout=WAIT_S)
        seconds = time.monotonic() - sent
        out = proc.stdout.read()
        reader.join(10)
        text = "".join(err)
        assert "terminate called" not in text and "Traceback" not in text, text[-3000:]
        assert code == 130, text[-3000:]
        assert seconds < STOP_SECONDS, (seconds, text[-2000:])
        assert "(interrupted)" in out and "interrupted: 2 of 4 recorded" in text
        left = _live_members(pgid)
        end = time.monotonic() + 60
        while left and time.monotonic() < end:
            time.sleep(0.2)
            left = _live_members(pgid)
        assert not left, f"processes left behind: {left}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    # what was recorded before the signal is whole and valid; nothing after it was recorded
    with contextlib.closing(sqlite3.connect(store)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with open_store(store) as s:
        records = s.sweep_results()
    assert sorted(r.label for r in records) == ["tiny 128", "tiny 256"]
    assert all(r.status == "ok" and r.best is not None and r.best.latency_ns > 0 for r in records)
