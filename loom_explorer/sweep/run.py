"""Run a sweep on Dask: every (op, chip) not yet in the store is solved on a worker and recorded as its
result arrives. Ops of one key (kernel, shape, data format, fidelity, options) under several labels, such as
a layer's two norms, are solved once and recorded once per label (``pending``), so a report counts each.

Workers: a ``LocalCluster`` of processes, one single-threaded worker per core (``workers``, default every
core), or any running scheduler (``scheduler="tcp://host:8786"``). Each task is ``run_task``:
``task.solve_op``, or on a mesh ``mesh_task.solve_mesh_layer`` (a whole decoder layer, ``mesh_pending``);
neither raises; a task lost with its worker is recorded as ``failed`` with the error Dask reports. Results
stream back with ``as_completed`` and each is written in its own transaction, so an interrupted sweep
leaves every finished row recorded and nothing half-written; running it again solves only what is missing
(the skip key: hardware file hash, tool version, op).

Interrupts: a stop request (``stop``, set by Ctrl-C on the command line, ``solve/interrupt.py``) or a
``KeyboardInterrupt`` ends the sweep promptly (0.3 s from Ctrl-C to the exit, docs/sweep.md): nothing more
is recorded, the futures are cancelled, what was recorded is said, and a local cluster's worker processes
are ended at once (SIGTERM; their results are not wanted, and a graceful close takes seconds) before it is
closed, so no worker process is left. A stop request while the local cluster is still starting returns at
once (nothing was solved); the starting workers end with this process (Dask's workers watch their parent,
and the command line ends every process below it). The local workers never see
SIGINT themselves (Ctrl-C to the terminal signals the whole process group): they are started from a thread
that blocks SIGINT, and a process inherits its creator's signal mask, so the parent alone decides. Tasks on
a remote scheduler's workers are cancelled but not stopped (they belong to that cluster).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing.resource_tracker
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from loom_explorer.errors import LoomError
from loom_explorer.hardware import load_hardware
from loom_explorer.solve.children import end_processes
from loom_explorer.solve.interrupt import STOP, StopToken
from loom_explorer.store import ResultsStore, SweepRecord
from loom_explorer.sweep.mesh_task import MeshLayer, failed_layer, layer_ops, mesh_op_key, solve_mesh_layer
from loom_explorer.sweep.ops import SweepOp
from loom_explorer.sweep.task import SweepSettings, as_op, failed_record, op_key, solve_op

if TYPE_CHECKING:  # an optional dependency (the sweep extra), imported where it is used
    from distributed import Client, LocalCluster


class SweepError(LoomError, RuntimeError):
    """A sweep that cannot start (no Dask, an unreachable scheduler); the message says what to do."""


@dataclass(frozen=True, slots=True)
class SweepSummary:
    solved: int
    skipped: int
    failed: int
    seconds: float
    interrupted: bool = False


class _Stopped(Exception):
    """Leaves a sweep's cluster block on a stop request, so that a local cluster is ended at once."""


def _stop_searches() -> None:
    """Run on every local worker when the sweep stops: stop its searches (solve/interrupt.py)."""
    STOP.stop()


@dataclass
class _Started:
    """What the starting thread made, or the exception that stopped it."""

    cluster: LocalCluster | None = None
    client: Client | None = None
    error: BaseException | None = None


def _start_local_cluster(n: int, stop: StopToken) -> tuple[LocalCluster, Client]:
    """(LocalCluster of ``n`` single-threaded worker processes, a Client on it), started from a thread with
    SIGINT blocked (module docstring). A ``KeyboardInterrupt`` waits for the start, so that what was started
    is closed; a stop request raises ``_Stopped`` at once (module docstring)."""
    from distributed import Client, LocalCluster

    started = _Started()

    def start() -> None:
        try:
            cluster = LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=logging.ERROR
            )
            started.cluster = cluster
            started.client = Client(cluster)
        except BaseException as exc:  # re-raised in the caller's thread
            started.error = exc

    # start the resource tracker now: multiprocessing unblocks SIGINT in the thread that starts it
    multiprocessing.resource_tracker.ensure_running()
    blocked = hasattr(signal, "pthread_sigmask")
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if blocked else None
    try:
        starter = threading.Thread(target=start, name="loom-sweep-cluster", daemon=True)
        starter.start()
    finally:
        if previous is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    while starter.is_alive():
        if stop.stopped:
            raise _Stopped
        try:
            starter.join(0.1)
        except KeyboardInterrupt:  # library use without a stop token handler: close what was started
            starter.join()
            _close(started.client, started.cluster)
            raise
    if started.error is not None:
        _close(started.client, started.cluster)
        raise started.error
    assert started.cluster is not None and started.client is not None, "the start thread ends in one or the other"
    return started.cluster, started.client


def _close(client: Client | None, cluster: LocalCluster | None, at_once: bool = False) -> None:
    """Stop the local workers' searches, then close the client and the cluster (its worker processes);
    ``at_once`` (an interrupted sweep): end the worker processes first instead (module docstring)."""
    if cluster is not None and at_once:
        # the scheduler, nannies and client of this process log every connection the ending cuts (with a
        # traceback, at INFO): expected here, so not shown
        logging.getLogger("distributed").setLevel(logging.CRITICAL)
        end_processes(
            [pid for pid in (getattr(nanny, "pid", None) for nanny in cluster.workers.values()) if pid], grace_s=0.3
        )
    elif client is not None:
        with contextlib.suppress(Exception):
            client.run(_stop_searches)
    if client is not None:
        with contextlib.suppress(Exception):
            client.close()
    if cluster is not None:
        with contextlib.suppress(Exception):
            cluster.close()


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int | None, stop: StopToken = STOP) -> Iterator[Client]:
    """A ``distributed.Client`` on ``scheduler``, or on a new LocalCluster of ``workers`` processes; closed
    on exit, a local cluster with its workers' searches stopped first, or left by an exception with its
    worker processes ended at once (module docstring)."""
    try:
        from distributed import Client
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
    cluster, client = _start_local_cluster(workers or os.cpu_count() or 1, stop)
    try:
        yield client
    except BaseException:
        _close(client, cluster, at_once=True)
        raise
    _close(client, cluster)


@dataclass(frozen=True, slots=True)
class Solve:
    """One task of a sweep: ``ops`` (one key, distinct labels) on the chip ``hardware``, solved once as
    ``ops[0]`` and recorded once per op; or, with ``layer``, that decoder layer on the mesh ``hardware``
    (``mesh_task.py``), recorded once per op of it (``ops``)."""

    hardware: str
    ops: tuple[SweepOp, ...]
    layer: MeshLayer | None = None


def run_task(task: Solve, settings: SweepSettings) -> list[SweepRecord]:
    """A task's records (on a worker); never raises."""
    if task.layer is not None:
        return solve_mesh_layer(task.hardware, task.layer, settings)
    record = solve_op(task.hardware, task.ops[0], settings)
    return [as_op(record, op) for op in task.ops]


def lost_task(task: Solve, error: str) -> list[SweepRecord]:
    """The records of a task whose worker was lost."""
    if task.layer is not None:
        return failed_layer(task.hardware, task.layer, error)
    return [as_op(failed_record(task.hardware, task.ops[0], error), op) for op in task.ops]


def pending(ops: list[SweepOp], hardware: list[str], done: set[str]) -> tuple[list[Solve], int]:
    """(the solves to run, how many (chip, op) pairs are already recorded). Ops of one key and label are one
    op; ops of one key are one solve per chip, recorded under each of their labels not yet in ``done``."""
    by_key: dict[str, dict[str, SweepOp]] = {}
    for op in ops:
        by_key.setdefault(op.key, {}).setdefault(op.label, op)
    todo, skipped = [], 0
    for hw_name in hardware:
        hw = load_hardware(hw_name)
        for labelled in by_key.values():
            missing = tuple(op for op in labelled.values() if op_key(hw, op) not in done)
            skipped += len(labelled) - len(missing)
            if missing:
                todo.append(Solve(hw_name, missing))
    return todo, skipped


def mesh_pending(layers: list[MeshLayer], meshes: list[str], done: set[str]) -> tuple[list[Solve], int]:
    """(the mesh tasks to run, how many (mesh, op) pairs are already recorded): a layer with any op not yet
    recorded on a mesh is planned again, and every op of it recorded."""
    from loom_explorer.hardware.mesh_load import load_mesh

    todo, skipped = [], 0
    for name in meshes:
        mesh = load_mesh(name)
        for layer in layers:
            ops = layer_ops(layer)
            if all(mesh_op_key(mesh, op) in done for op in ops):
                skipped += len(ops)
            else:
                todo.append(Solve(name, ops, layer))
    return todo, skipped


PLAIN_EVERY_S = 10.0  # a progress line into a pipe or a file at most this often (and the last one)


def _progress(out: TextIO) -> Callable[[int, int, SweepRecord], None]:
    """The sweep's progress on ``out``: on a terminal one bar rewritten in place (``\\r``) as each record
    arrives; into a pipe or a file a plain line at most every ``PLAIN_EVERY_S`` and for the last record."""
    start = time.perf_counter()
    tty = bool(getattr(out, "isatty", lambda: False)())
    due = [0.0]  # when the next plain line may be written

    def show(done: int, total: int, r: SweepRecord) -> None:
        elapsed = time.perf_counter() - start
        what = f"{r.status}: {r.label or r.shape} on {r.hardware}"
        if not tty:
            if elapsed >= due[0] or done >= total:
                print(f"sweep: {done}/{total} recorded, {elapsed:.1f} s, last {what}", file=out, flush=True)
                due[0] = elapsed + PLAIN_EVERY_S
            return
        width = 30
        bar = "#" * (width * done // max(total, 1))
        print(
            f"\r[{bar:<{width}}] {done}/{total} {elapsed:6.1f} s  {what[:70]:<70}",
            end="" if done < total else "\n",
            file=out,
            flush=True,
        )

    return show


def run_sweep(
    ops: list[SweepOp],
    hardware: list[str],
    store_path: str | Path,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    settings: SweepSettings | None = None,
    progress: TextIO | None = sys.stderr,
    stop: StopToken = STOP,
    meshes: list[str] | None = None,
    layers: list[MeshLayer] | None = None,
) -> SweepSummary:
    """Solve every (op, hardware) pair not yet recorded in ``store_path`` (module docstring), and plan every
    (layer, mesh) pair of ``layers`` and ``meshes`` not yet recorded (``mesh_task.py``). ``stop``: the
    stop request that ends the sweep early (default: the process-wide token, set by Ctrl-C); ``settings``:
    ``SweepSettings()`` when not given."""
    settings = settings or SweepSettings()
    start = time.perf_counter()
    store = ResultsStore(store_path)
    try:
        done_keys = store.sweep_keys()
        todo, skipped = pending(ops, hardware, done_keys)
        mesh_todo, mesh_skipped = mesh_pending(layers or [], meshes or [], done_keys)
        todo, skipped = mesh_todo + todo, skipped + mesh_skipped  # the long mesh tasks first
        if not todo:
            return SweepSummary(0, skipped, 0, time.perf_counter() - start)
        show = _progress(progress) if progress else None
        total = sum(len(task.ops) for task in todo)  # records to write: one per (chip, op)
        solved = failed = 0
        interrupted = said = False

        def say_interrupted() -> None:  # before the cluster closes: what is recorded is final by then
            nonlocal said
            said = True
            if progress:
                lead = "\n" if getattr(progress, "isatty", lambda: False)() else ""
                print(
                    f"{lead}interrupted: {solved} of {total} recorded in {store.path}; run again to go on",
                    file=progress,
                    flush=True,
                )

        try:
            with dask_client(scheduler, workers, stop) as client:
                from distributed import as_completed

                if progress and not stop.stopped:
                    where = scheduler or f"{workers or os.cpu_count() or 1} local workers"
                    print(
                        f"sweep: solving {len(todo)} ops for {total} rows on {where} (Ctrl-C stops; finished "
                        "ops stay recorded)",
                        file=progress,
                        flush=True,
                    )
                futures = {client.submit(run_task, task, settings, pure=False): task for task in todo}
                done = as_completed(futures)
                try:
                    while not stop.stopped and not done.is_empty():
                        batch = done.next_batch(block=False)
                        if not batch:
                            stop.wait(0.1)
                        for future in batch:
                            if stop.stopped:  # nothing is recorded after a stop request
                                break
                            task = futures[future]
                            try:
                                records = future.result()
                            except Exception as exc:  # the worker died; recorded
                                records = lost_task(task, f"the task was lost: {type(exc).__name__}: {exc}")
                            store.record_sweeps(records)  # each label, at once
                            solved += len(records)
                            failed += sum(r.status == "failed" for r in records)
                            if show:
                                show(solved, total, records[-1])
                except KeyboardInterrupt:
                    interrupted = True
                if interrupted or stop.stopped:
                    with contextlib.suppress(Exception):
                        client.cancel(list(futures))
                    say_interrupted()
                    raise _Stopped  # the local cluster's workers are ended at once
        except _Stopped:
            if not said:  # the stop request came while the local cluster was starting
                say_interrupted()
            return SweepSummary(solved, skipped, failed, time.perf_counter() - start, interrupted=True)
        return SweepSummary(solved, skipped, failed, time.perf_counter() - start)
    finally:
        store.close()
