"""A sweep of a whole (tiny) layer: ops of one shape under several labels are solved once and recorded per
label, and the report's group totals count every op of the layer, ours and ttnn's default.

Every solve is real (tiny shapes); the Dask cluster is an in-process one (threads, no worker processes), which
starts in a fraction of a second, so this runs in the quick tier. ``test_sweep_run.py`` runs the same code on
a cluster of worker processes.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from loom_explorer import cli
from loom_explorer.accuracy.family_error import error_for_op
from loom_explorer.hardware import load_hardware
from loom_explorer.store import SweepRecord, open_store
from loom_explorer.sweep import run as sweep_run
from loom_explorer.sweep.ops import SweepOp, make_op
from loom_explorer.sweep.run import Solve, SweepSummary, pending, run_sweep
from loom_explorer.sweep.task import SweepSettings, as_op, op_key

HW = "wormhole_n150"
SETTINGS = SweepSettings(time_limit_seconds=10.0)
NORM, ADD, GEMM = "H=64,W=64", "H=64,W=64", "M=64,K=64,N=128"
LAYER = (
    make_op("rmsnorm", NORM, label="tiny layer: attn_norm"),
    make_op("gemm", GEMM, label="tiny layer: w1"),
    make_op("binary", ADD, label="tiny layer: residual_attn"),
    make_op("rmsnorm", NORM, label="tiny layer: ffn_norm"),
    make_op("gemm", GEMM, label="tiny layer: w3"),
    make_op("swiglu", "H=64,W=128", label="tiny layer: swiglu"),
    make_op("binary", ADD, label="tiny layer: residual_ffn"),
    make_op("rmsnorm", NORM, label="tiny layer: final_norm"),
)
TIMES = {"rmsnorm": 3, "gemm": 2, "binary": 2, "swiglu": 1}  # how often each shape runs in LAYER


@contextlib.contextmanager
def in_process_client(scheduler: str | None, workers: int | None, stop: object = None) -> Iterator[object]:
    """A real Dask client on an in-process cluster (one thread): ``run_sweep``'s own code, without processes."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        yield client


@dataclass
class Swept:
    store: Path
    summary: SweepSummary
    records: list[SweepRecord]
    progress: str


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Iterator[Swept]:
    store = tmp_path_factory.mktemp("layer") / "results.sqlite"
    progress = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sweep_run, "dask_client", in_process_client)
        summary = run_sweep(list(LAYER), [HW], store, settings=SETTINGS, progress=progress)
    with open_store(store) as s:
        records = s.sweep_results()
    yield Swept(store, summary, records, progress.getvalue())


def by_label(records: list[SweepRecord]) -> dict[str, SweepRecord]:
    return {r.label: r for r in records}


# ---------------------------------------------------------------- pending and as_op (no solving)
def test_pending_solves_each_key_once_for_all_its_labels() -> None:
    todo, skipped = pending([*LAYER, LAYER[0]], [HW], set())  # a repeated (key, label) is one op
    assert skipped == 0
    assert [len(t.ops) for t in todo] == [3, 2, 2, 1]  # norms, gemms, adds, swiglu: first-seen order
    assert todo[0] == Solve(HW, (LAYER[0], LAYER[3], LAYER[7]))
    # a label already recorded is skipped; its key is solved again for the others only
    done = {op_key(load_hardware(HW), LAYER[0])}
    todo, skipped = pending(list(LAYER), [HW], done)
    assert skipped == 1 and todo[0] == Solve(HW, (LAYER[3], LAYER[7]))


def test_as_op_relabels_a_record_and_refuses_another_op(swept) -> None:
    record = by_label(swept.records)["tiny layer: attn_norm"]
    other = make_op("rmsnorm", NORM, label="elsewhere: norm")
    moved = as_op(record, other)
    assert moved.label == "elsewhere: norm" and moved.op_key == op_key(load_hardware(HW), other)
    assert (moved.best, moved.ttnn_default_ns) == (record.best, record.ttnn_default_ns)
    with pytest.raises(ValueError, match="not the op"):
        as_op(record, make_op("rmsnorm", "H=64,W=128", label="tiny layer: attn_norm"))


# ---------------------------------------------------------------- the sweep
def test_every_label_is_recorded_from_one_solve_per_key(swept) -> None:
    assert (swept.summary.solved, swept.summary.skipped, swept.summary.failed) == (len(LAYER), 0, 0)
    assert "solving 4 ops for 8 rows" in swept.progress and "8/8" in swept.progress
    records = by_label(swept.records)
    assert set(records) == {op.label for op in LAYER} and len(swept.records) == len(LAYER)
    hw = load_hardware(HW)
    for op in LAYER:
        r = records[op.label]
        assert r.op_key == op_key(hw, op) and r.status == "ok" and r.error == ""
        assert r.best is not None and r.ttnn_default_ns is not None and r.speedup is not None
        assert r.speedup >= 1 - 1e-9  # ttnn's default is one schedule of the space whose optimum was proven
    for same in (("attn_norm", "ffn_norm", "final_norm"), ("residual_attn", "residual_ffn"), ("w1", "w3")):
        first, *rest = (records[f"tiny layer: {name}"] for name in same)
        for r in rest:  # one solve: the same schedule and ttnn default under each label
            assert (r.best, r.runner_up, r.ttnn_default_ns, r.ttnn_default_note, r.solve_seconds) == (
                first.best,
                first.runner_up,
                first.ttnn_default_ns,
                first.ttnn_default_note,
                first.solve_seconds,
            )
    assert records["tiny layer: attn_norm"].ttnn_default_note == "H@xy|x=dram,gamma=dram,eps=dram"
    assert records["tiny layer: residual_attn"].ttnn_default_note == "H*W@xy|a=dram,b=dram"
    assert records["tiny layer: swiglu"].ttnn_default_note == "H*W@xy|a=dram,b=dram"


def test_rerun_skips_every_label_and_a_new_label_is_solved_alone(swept, tmp_path) -> None:
    extra = make_op("binary", ADD, label="tiny layer: residual_extra")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sweep_run, "dask_client", in_process_client)
        again = run_sweep(list(LAYER), [HW], swept.store, settings=SETTINGS, progress=None)
        assert (again.solved, again.skipped) == (0, len(LAYER))
        store = tmp_path / "copy.sqlite"
        store.write_bytes(swept.store.read_bytes())
        more = run_sweep([*LAYER, extra], [HW], store, settings=SETTINGS, progress=None)
    assert (more.solved, more.skipped, more.failed) == (1, len(LAYER), 0)
    with open_store(store) as s:
        records = by_label(s.sweep_results())
    assert len(records) == len(LAYER) + 1 and records[extra.label].best is not None


# ---------------------------------------------------------------- the report
def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def test_report_totals_count_every_op_of_the_layer(swept, capsys) -> None:
    assert cli.main(["report", str(swept.store)]) == 0
    text = capsys.readouterr().out
    assert "once per label" in text and "decoder layer" in text
    rows = [_cells(line) for line in text.splitlines() if line.startswith("| ")]
    [summary] = [r for r in rows if r[0] == f"{HW}: tiny layer"]
    one = {op.kernel: by_label(swept.records)[op.label] for op in LAYER}  # one record per shape
    ours = sum(TIMES[k] * r.best.latency_ns for k, r in one.items() if r.best is not None)
    default = sum(TIMES[k] * (r.ttnn_default_ns or 0.0) for k, r in one.items())
    assert summary[1:4] == ["8", "0", "8"]  # ops, failed, priced: every label
    assert summary[4] == f"{ours / 1e3:,.1f}" and summary[5] == f"{default / 1e3:,.1f}"
    ops = {r[0]: r for r in rows if r[0].startswith("tiny layer:")}
    assert set(ops) == {op.label for op in LAYER}
    for op in LAYER:  # each op's row: ours, ttnn's default and the speedup
        r = by_label(swept.records)[op.label]
        assert r.best is not None and r.ttnn_default_ns is not None and r.speedup is not None
        row = ops[op.label]
        assert row[3] == f"{r.best.latency_ns / 1e3:,.1f}" and row[8] == f"{r.ttnn_default_ns / 1e3:,.1f}"
        assert row[9] == f"{r.speedup:.2f}x" and row[12] == "ok"
    # beside each speedup, the op's measured error (``error_for_op``) and the speedup's floor at it
    floors = []
    for op in LAYER:
        r = by_label(swept.records)[op.label]
        shape = {k: int(v) for k, v in (p.split("=") for p in r.shape.split(","))}
        error = error_for_op(r.kernel, shape, HW)
        row = ops[op.label]
        if error is None:
            assert row[10:12] == ["not measured", "-"], op.label
            continue
        assert r.speedup is not None
        low, high = (
            r.speedup * (1 - e / 100) / (1 + e / 100) for e in (error.median_abs_err_pct, error.worst_abs_err_pct)
        )
        high = max(high, 0.0)
        assert row[10] == f"{error.median_abs_err_pct:.1f}% / {error.worst_abs_err_pct:.1f}%", op.label
        assert row[11] == f"{low:.2f}x / {high:.2f}x", op.label
        floors.append((low, high))
    gemm = by_label(swept.records)["tiny layer: w1"]
    error = error_for_op(gemm.kernel, {k: int(v) for k, v in (p.split("=") for p in gemm.shape.split(","))}, HW)
    assert error is not None and HW.startswith(error.hardware)  # the larger of matmul's and contraction's
    assert summary[8] == f"{sum(lo > 1 for lo, _ in floors)} / {sum(hi > 1 for _, hi in floors)} of 8"
    errors = {r[1]: r for r in rows if r[0] == HW and len(r) == 4}
    assert errors["matmul"][2] == f"{error.median_abs_err_pct:.1f}% / {error.worst_abs_err_pct:.1f}%"
    assert {"rmsnorm", "binary", "swiglu"} <= set(errors)


def test_an_op_ttnn_cannot_run_by_default_is_recorded_without_a_default() -> None:
    """A norm row too wide for L1 under ttnn's default: ours is solved, the default is a conflict note."""
    from loom_explorer.sweep.task import solve_op

    op: SweepOp = make_op("rmsnorm", "H=32,W=8192", label="wide: norm")
    r = solve_op(HW, op, SETTINGS)
    assert r.status == "ok" and r.best is not None
    assert r.ttnn_default_ns is None and r.speedup is None
    assert r.ttnn_default_note.startswith("ttnn default H@xy|x=dram,gamma=dram,eps=dram: ")
    assert "l1_capacity" in r.ttnn_default_note
