"""A results store that cannot be written: a one-line error naming the file (exit 2) where the write is the
point (``ingest``, ``sweep --out``, ``accuracy --record``), a warning where the store only remembers solves
(``solve``, ``traffic``, ``export``: the command still answers).

The tests run as root, which ignores file permissions, so the failures are ones root meets too:

* an immutable file (``chattr +i``, ext4's attribute that binds root as well): SQLite opens it read-only and a
  write is ``attempt to write a readonly database``; skipped where the filesystem or the container refuses
  ``chattr``;
* a file-size limit (``RLIMIT_FSIZE``, in a subprocess) at the store's current size: the kernel refuses to
  grow it (``EFBIG``), what a full disk looks like to SQLite (``disk I/O error``);
* a store path whose folder is a regular file: it cannot be made.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from waits import WAIT_S

from loom_explorer.cli import main
from loom_explorer.store import (
    Measurement,
    ResultsStore,
    SolvedRecord,
    StoreError,
    SweepRecord,
    open_store,
)

CAPTURE = Path(__file__).resolve().parents[1] / "accuracy" / "data" / "ops_perf_results_v2.csv"
SMALL_DATA = Path(__file__).resolve().parents[1] / "accuracy" / "data" / "gemm_measured_small.csv"
SMALL_CONFIGS = Path(__file__).resolve().parents[1] / "accuracy" / "data" / "gemm_manual_configs_small.csv"


@contextmanager
def immutable(path: Path) -> Iterator[Path]:
    """``path`` (a store with its tables) made immutable for the block; the test is skipped where ``chattr``
    cannot do it."""
    ResultsStore(path).close()
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here (another filesystem, or no CAP_LINUX_IMMUTABLE)")
    try:
        yield path
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)


def _measurement() -> Measurement:
    return Measurement(
        source="card",
        hardware="wormhole_n150",
        hardware_sha256="ab" * 32,
        kernel="gemm",
        shape={"M": 512, "K": 512, "N": 512},
        candidate="c",
        schedule_json="{}",
        predicted_cycles=1,
        predicted_ns=1.0,
        breakdown={"compute": 1},
        measured_ns=2.0,
        measured_what="x",
    )


def _one_line_naming(err: str, store: Path, says: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith("loom-explorer: error:")]
    assert len(lines) == 1, err
    assert f"results store {store}" in lines[0] and says in lines[0], err
    assert "Traceback" not in err and "internal error" not in err, err


def test_every_write_to_a_read_only_store_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    with immutable(path), open_store(path) as store:
        sweep = SweepRecord(
            op_key="k",
            hardware="h",
            hardware_sha256="s",
            tool_version="v",
            label="",
            kernel="gemm",
            shape="M=1",
            dtype="bf16",
            fidelity="hifi2",
            options=(),
            status="failed",
            error="e",
            best=None,
            runner_up=None,
            ideal_ns=None,
            ttnn_default_ns=None,
            ttnn_default_note="",
            solve_seconds=0.0,
        )
        for write in (
            lambda: store.record_many([_measurement()]),
            lambda: store.record_sweeps([sweep]),
            lambda: store.record_solved(SolvedRecord("k", "h", "s", "gemm", "p", "[]")),
        ):
            with pytest.raises(
                StoreError,
                match=rf"results store {path}: cannot write \(attempt to write a "
                r"readonly database\)",
            ):
                write()
        assert store.measurements() == [] and store.sweep_results() == []  # reading still works


def test_ingest_and_accuracy_record_on_a_read_only_store_exit_2(tmp_path: Path, capsys) -> None:
    store = tmp_path / "r.sqlite"
    with immutable(store):
        assert main(["ingest", str(CAPTURE), "--hw", "wormhole_n150", "--store", str(store)]) == 2
        _one_line_naming(capsys.readouterr().err, store, "attempt to write a readonly database")
        assert (
            main(
                [
                    "accuracy",
                    "--data",
                    str(SMALL_DATA),
                    "--configs",
                    str(SMALL_CONFIGS),
                    "--record",
                    "--store",
                    str(store),
                ]
            )
            == 2
        )
        _one_line_naming(capsys.readouterr().err, store, "attempt to write a readonly database")


def test_a_store_whose_folder_is_a_file_is_an_error_where_the_write_is_the_point(tmp_path: Path, capsys) -> None:
    (tmp_path / "plain").write_text("a file, not a folder\n")
    store = tmp_path / "plain" / "r.sqlite"
    assert main(["ingest", str(CAPTURE), "--hw", "wormhole_n150", "--store", str(store)]) == 2
    _one_line_naming(capsys.readouterr().err, store, f"cannot make its folder {tmp_path / 'plain'}")
    shapes = tmp_path / "shapes.csv"
    shapes.write_text('kernel,shape,dtype,fidelity\ngemm,"M=128,K=128,N=128",bf16,hifi2\n')
    assert main(["sweep", str(shapes), "--hw", "wormhole_n150", "--out", str(store), "--workers", "1"]) == 2
    _one_line_naming(capsys.readouterr().err, store, "cannot make its folder")


def test_a_store_that_only_remembers_solves_is_a_warning(tiny_hw_path: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "plain").write_text("a file, not a folder\n")
    args = [
        "solve",
        "gemm",
        "--hw",
        str(tiny_hw_path),
        "--shape",
        "M=128,K=256,N=128",
        "--candidate",
        "M@y,N@x|in0=mcast_x,in1=mcast_y",
        "--json",
    ]
    assert main(args) == 0
    answer = _without_solve_times(capsys.readouterr().out)
    for store in (tmp_path / "plain" / "r.sqlite", tmp_path / "ro.sqlite"):
        with immutable(store) if store.parent == tmp_path else _nothing():
            assert main([*args, "--store", str(store), "--no-cache"]) == 0
            out, err = capsys.readouterr()
            assert _without_solve_times(out) == answer  # the command still answers
            assert f"loom-explorer: results store not used: results store {store}: " in err
            assert "loom-explorer: error:" not in err
    # traffic and export remember their solves the same way: they still answer, with the warning
    problem = [
        "gemm",
        "--hw",
        str(tiny_hw_path),
        "--shape",
        "M=128,K=256,N=128",
        "--candidate",
        "M@y,N@x|in0=mcast_x,in1=mcast_y",
        "--store",
        str(tmp_path / "plain" / "r.sqlite"),
    ]
    for command in (["traffic", *problem], ["export", *problem, "--format", "json", "-o", str(tmp_path / "s.json")]):
        assert main(command) == 0
        err = capsys.readouterr().err
        assert "loom-explorer: results store not used: " in err and "loom-explorer: error:" not in err
    assert (tmp_path / "s.json").is_file()


def _without_solve_times(out: str) -> list[tuple[str, str, int]]:
    """(candidate, status, latency) of each result of ``solve --json`` (the solve times differ run to run)."""
    return [(r["name"], r["status"], r["latency_cycles"]) for r in json.loads(out)["candidates"]]


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _limit_file_size(limit_bytes: int) -> None:
    """In the child: files may not grow past ``limit_bytes`` (a write beyond is EFBIG, not a signal)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))


def test_ingest_on_a_store_that_cannot_grow_exits_2(tmp_path: Path) -> None:
    """The file-size limit at the store's size: SQLite cannot grow the file, as on a full disk."""
    store = tmp_path / "full.sqlite"
    ResultsStore(store).close()
    limit = store.stat().st_size
    env = {**os.environ, "LOOM_EXPLORER_STORE": str(tmp_path / "unused.sqlite")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "loom_explorer.cli",
            "ingest",
            str(CAPTURE),
            "--hw",
            "wormhole_n150",
            "--store",
            str(store),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=WAIT_S,
        preexec_fn=lambda: _limit_file_size(limit),
    )
    assert done.returncode == 2, done.stderr
    _one_line_naming(done.stderr, store, "cannot write (disk I/O error)")
    assert store.stat().st_size == limit
    with open_store(store) as s:
        assert s.measurements() == []  # one transaction: nothing half-recorded
