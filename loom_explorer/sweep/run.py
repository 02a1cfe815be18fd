"""Run a sweep on Dask: every (op, chip) not yet in the store is solved on a worker and recorded as its
result arrives.

Workers: a ``LocalCluster`` of processes, one single-threaded worker per core (``workers``, default every
core), or any running scheduler (``scheduler="tcp://host:8786"``). Each task is ``task.solve_op``, which
never raises; a task lost with its worker is recorded as ``failed`` with the error Dask reports. Results
stream back with ``as_completed`` and each is written in its own transaction, so an interrupted sweep
(Ctrl-C) leaves every finished row recorded and nothing half-written; running it again solves only what
is missing (the skip key: hardware file hash, tool version, op).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from loom_explorer.deploy.store import ResultsStore, SweepRecord
from loom_explorer.hardware import load_hardware
from loom_explorer.sweep.ops import SweepOp
from loom_explorer.sweep.task import SweepSettings, failed_record, op_key, solve_op


class SweepError(RuntimeError):
    """A sweep that cannot start (no Dask, an unreachable scheduler); the message says what to do."""


@dataclass(frozen=True, slots=True)
class SweepSummary:
    solved: int
    skipped: int
    failed: int
    seconds: float
    interrupted: bool = False


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int | None) -> Iterator[object]:
    """A ``distributed.Client`` on ``scheduler``, or on a new LocalCluster of ``workers`` processes."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise SweepError(f"sweeps need Dask: pip install 'loom-explorer[sweep]' ({exc})") from None
    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise SweepError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        try:
            yield client
        finally:
            client.close()
        return
    n = workers or os.cpu_count() or 1
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        yield client


def pending(ops: list[SweepOp], hardware: list[str], done: set[str]) -> tuple[list[tuple[str, SweepOp]], int]:
    """(the (hardware, op) pairs not yet solved in the store, how many are); ops of the same key are one."""
    todo, skipped = [], 0
    unique = list({op.key: op for op in reversed(ops)}.values())[::-1]  # one op per key: the first label wins
    for hw_name in hardware:
        hw = load_hardware(hw_name)
        for op in unique:
            if op_key(hw, op) in done:
                skipped += 1
            else:
                todo.append((hw_name, op))
    return todo, skipped


def _progress(out: TextIO) -> Callable[[int, int, SweepRecord], None]:
    start = time.perf_counter()

    def show(done: int, total: int, r: SweepRecord) -> None:
        width = 30
        bar = "#" * (width * done // max(total, 1))
        what = f"{r.status}: {r.label or r.shape} on {r.hardware}"
        print(f"\r[{bar:<{width}}] {done}/{total} {time.perf_counter() - start:6.1f} s  {what[:70]:<70}",
              end="" if done < total else "\n", file=out, flush=True)

    return show


def run_sweep(ops: list[SweepOp], hardware: list[str], store_path: str | Path, *, scheduler: str | None = None,
              workers: int | None = None, settings: SweepSettings = SweepSettings(),
              progress: TextIO | None = sys.stderr) -> SweepSummary:
    """Solve every (op, hardware) pair not yet recorded in ``store_path`` (module docstring)."""
    start = time.perf_counter()
    store = ResultsStore(store_path)
    try:
        todo, skipped = pending(ops, hardware, store.sweep_keys())
        if not todo:
            return SweepSummary(0, skipped, 0, time.perf_counter() - start)
        show = _progress(progress) if progress else None
        solved = failed = 0
        with dask_client(scheduler, workers) as client:
            from distributed import as_completed

            futures = {client.submit(solve_op, hw_name, op, settings, pure=False): (hw_name, op)  # type: ignore[attr-defined]
                       for hw_name, op in todo}
            try:
                for future in as_completed(futures):
                    try:
                        record = future.result()
                    except Exception as exc:  # noqa: BLE001 - the worker died; recorded
                        hw_name, op = futures[future]
                        record = failed_record(hw_name, op, f"the task was lost: {type(exc).__name__}: {exc}")
                    store.record_sweep(record)
                    solved += 1
                    failed += record.status == "failed"
                    if show:
                        show(solved, len(todo), record)
            except KeyboardInterrupt:
                client.cancel(list(futures))  # type: ignore[attr-defined]
                if progress:
                    print(f"\ninterrupted: {solved} of {len(todo)} recorded in {store.path}; run again to go on",
                          file=progress)
                return SweepSummary(solved, skipped, failed, time.perf_counter() - start, interrupted=True)
        return SweepSummary(solved, skipped, failed, time.perf_counter() - start)
    finally:
        store.close()
