"""A real sweep on a Dask LocalCluster (2 worker processes), its SQLite rows, re-runs, store migration and the
report (``loom-explorer report``).

Every solve is real (tiny shapes, a short time limit that CP-SAT's proofs need far less than). The module
starts two clusters: the sweep every test reads (``swept``, run once), and one more to add an op.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from loom_explorer import cli
from loom_explorer.families.attention.ttnn_config import evaluate_sdpa_config, ttnn_default_sdpa_config
from loom_explorer.families.contraction.ttnn_config import evaluate_config, ttnn_default_config
from loom_explorer.hardware import load_hardware
from loom_explorer.hashing import hardware_sha256
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.store import (
    STORE_SCHEMA_VERSION,
    Measurement,
    ResultsStore,
    StoreError,
    SweepRecord,
    open_store,
)
from loom_explorer.sweep.ops import SweepOp, make_op
from loom_explorer.sweep.run import SweepSummary, run_sweep
from loom_explorer.sweep.task import SweepSettings, op_key

pytestmark = pytest.mark.slow

TIME_LIMIT = 8.0
SETTINGS = SweepSettings(time_limit_seconds=TIME_LIMIT)
HW = ("wormhole_n150", "blackhole_p150a")
GOOD = (
    make_op("gemm", "M=128,K=128,N=128", label="tiny: gemm 128"),
    make_op("gemm", "M=256,K=256,N=256", label="tiny: gemm 256"),
    make_op("flash_attention", "B=1,H=2,Sq=128,Skv=128,D=64", label="tiny: attention"),
)
# passes reading (make_op) but the model refuses it when it is built on the worker
BAD = make_op("flash_attention", "B=1,H=2,Sq=256,Skv=128,D=64", options={"causal"}, label="broken: causal attention")
OPS = [GOOD[0], BAD, GOOD[1], GOOD[2]]
NEW = make_op("gemm", "M=128,K=64,N=128", label="tiny: gemm added later")


@dataclass
class Swept:
    store: Path
    summary: SweepSummary
    records: list[SweepRecord]
    rows: list[tuple]  # the raw table, ids and timestamps included
    progress: str


def raw_rows(path: Path) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT * FROM sweep_results ORDER BY id").fetchall()


def records_of(path: Path) -> list[SweepRecord]:
    with open_store(path) as store:
        return store.sweep_results()


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Swept:
    """The sweep every test reads: 4 ops (one that fails on the worker) x 2 chips on 2 workers, run once."""
    store = tmp_path_factory.mktemp("sweep") / "results.sqlite"
    progress = io.StringIO()
    summary = run_sweep(OPS, list(HW), store, workers=2, settings=SETTINGS, progress=progress)
    return Swept(store, summary, records_of(store), raw_rows(store), progress.getvalue())


def find(records: list[SweepRecord], hw: str, op: SweepOp) -> SweepRecord:
    [r] = [r for r in records if r.op_key == op_key(load_hardware(hw), op)]
    return r


# ---------------------------------------------------------------- the sweep's rows
def test_one_row_per_op_and_chip(swept):
    assert swept.summary.solved == len(OPS) * len(HW)
    assert swept.summary.skipped == 0 and swept.summary.failed == len(HW) and not swept.summary.interrupted
    assert len(swept.records) == len(OPS) * len(HW)
    expected = {op_key(load_hardware(hw), op) for hw in HW for op in OPS}
    assert {r.op_key for r in swept.records} == expected
    for hw in HW:
        spec = load_hardware(hw)
        for op in OPS:
            r = find(swept.records, hw, op)
            assert r.hardware == hw and r.hardware_sha256 == hardware_sha256(spec)
            assert (r.kernel, r.shape, r.dtype, r.fidelity, r.options, r.label) == (
                op.kernel,
                op.shape,
                op.dtype.value,
                op.fidelity.value,
                tuple(sorted(op.options)),
                op.label,
            )
            assert r.tool_version and r.tool_version in r.op_key
            assert r.solve_seconds > 0
    assert f"{len(OPS) * len(HW)}/{len(OPS) * len(HW)}" in swept.progress


_direct: dict[tuple[str, str], tuple] = {}


def direct_solve(hw_name: str, op: SweepOp):
    """(hw, problem, session, ranked results) solved here, in the test process, with the sweep's time limit."""
    if (hw_name, op.key) not in _direct:
        hw = load_hardware(hw_name)
        problem = make_problem(load_program(op.kernel), op.shape, op.dtype, op.fidelity, options=op.options)
        session = Session(hw, problem)
        results = session.solve({}, SolveOptions(time_limit_seconds=TIME_LIMIT, workers_per_model=1))
        _direct[(hw_name, op.key)] = (hw, problem, session, results)
    return _direct[(hw_name, op.key)]


@pytest.mark.parametrize("hw_name", HW)
@pytest.mark.parametrize("op", GOOD, ids=lambda op: op.label)
def test_ok_row_matches_a_direct_solve(swept, hw_name, op):
    r = find(swept.records, hw_name, op)
    hw, problem, session, results = direct_solve(hw_name, op)
    solved = [x for x in results if x.solution is not None]
    assert len(solved) >= 2
    assert all(x.status in ("optimal", "infeasible", "conflict") for x in results), "raise the time limit"

    assert r.status == "ok" and r.error == ""  # every candidate proven within the time limit
    assert r.best is not None and r.runner_up is not None
    # CP-SAT proves these optima: the sweep's latencies equal the direct solve's
    assert r.best.latency_cycles == solved[0].solution.latency_cycles
    assert r.runner_up.latency_cycles == solved[1].solution.latency_cycles
    assert r.runner_up.candidate != r.best.candidate
    assert r.best.latency_cycles <= r.runner_up.latency_cycles
    tied = {x.candidate_name for x in solved if x.solution.latency_cycles == r.best.latency_cycles}
    assert r.best.candidate in tied
    # the recorded parameters are the best candidate's and realise the recorded latency
    [pinned] = session.solve(
        dict(r.best.params),
        SolveOptions(time_limit_seconds=TIME_LIMIT, workers_per_model=1),
        candidates=[r.best.candidate],
    )
    assert pinned.solution is not None and pinned.solution.latency_cycles == r.best.latency_cycles

    for choice in (r.best, r.runner_up):
        ideal = session.schedule(choice.candidate).ideal_cycles
        assert choice.latency_ns == pytest.approx(hw.cycles_to_us(choice.latency_cycles) * 1e3)
        assert 0 < choice.utilisation <= 1
        assert choice.utilisation == pytest.approx(ideal / choice.latency_cycles)
    assert r.ideal_ns == pytest.approx(hw.cycles_to_us(session.schedule(r.best.candidate).ideal_cycles) * 1e3)

    # ttnn's default config, priced by the referee on the same hw/problem
    if op.kernel == "gemm":
        evaluated = evaluate_config(hw, problem, ttnn_default_config(hw, problem))
    else:
        evaluated = evaluate_sdpa_config(hw, problem, ttnn_default_sdpa_config(hw))
    assert evaluated.result.solution is not None
    default_ns = hw.cycles_to_us(evaluated.result.solution.latency_cycles) * 1e3
    assert r.ttnn_default_ns == pytest.approx(default_ns)
    assert r.ttnn_default_note == evaluated.result.candidate_name
    assert r.speedup == pytest.approx(default_ns / r.best.latency_ns)
    # ttnn's default is one schedule of the space whose optimum CP-SAT proved
    assert r.speedup >= 1 - 1e-9  # type: ignore[operator]


def test_a_row_that_fails_on_the_worker_is_recorded_and_the_rest_solved(swept):
    for hw in HW:
        r = find(swept.records, hw, BAD)
        assert r.status == "failed"
        assert "Sq == Skv" in r.error and "ProblemError" in r.error
        assert r.best is None and r.runner_up is None and r.speedup is None
        assert r.ttnn_default_ns is None and r.ideal_ns is None
        assert r.hardware_sha256 == hardware_sha256(load_hardware(hw))
        for op in GOOD:
            assert find(swept.records, hw, op).status == "ok"


# ---------------------------------------------------------------- re-runs
def test_rerun_solves_nothing_and_leaves_the_store_unchanged(swept, no_cluster):
    """What was solved is skipped; the failed op is not in the skip keys (a re-run with it retries it)."""
    with open_store(swept.store) as store:
        keys = store.sweep_keys()
    assert {find(swept.records, hw, BAD).op_key for hw in HW}.isdisjoint(keys)
    assert {find(swept.records, hw, op).op_key for hw in HW for op in GOOD} == keys
    before = swept.store.read_bytes()
    summary = run_sweep(list(GOOD), list(HW), swept.store, workers=2, settings=SETTINGS, progress=None)
    assert (summary.solved, summary.skipped, summary.failed, summary.interrupted) == (0, len(GOOD) * len(HW), 0, False)
    assert raw_rows(swept.store) == swept.rows
    assert swept.store.read_bytes() == before


def test_adding_one_op_solves_only_that_op(swept, tmp_path):
    store = tmp_path / "copy.sqlite"
    shutil.copyfile(swept.store, store)
    summary = run_sweep([*GOOD, NEW], list(HW), store, workers=2, settings=SETTINGS, progress=None)
    assert (summary.solved, summary.skipped, summary.failed) == (len(HW), len(GOOD) * len(HW), 0)
    rows = raw_rows(store)
    assert rows[: len(swept.rows)] == swept.rows  # the old rows untouched (ids, timestamps, values)
    records = records_of(store)
    assert len(records) == (len(OPS) + 1) * len(HW)
    for hw in HW:
        r = find(records, hw, NEW)
        assert r.status == "ok" and r.best is not None and 0 < r.best.utilisation <= 1


# ---------------------------------------------------------------- schema versions
def _measurement() -> Measurement:
    return Measurement(
        source="card",
        hardware="wormhole_n150",
        hardware_sha256="ab" * 32,
        kernel="gemm",
        shape={"M": 128, "K": 128, "N": 128},
        candidate="M@y,N@x|in0=dram,in1=dram",
        schedule_json="{}",
        predicted_cycles=6000,
        predicted_ns=6000.0,
        breakdown={"compute": 6000},
        measured_ns=6500.0,
        measured_what="device kernel duration",
    )


def _store_of_version(path: Path, version: str, with_measurement: bool = False) -> Path:
    store = ResultsStore(path)
    if with_measurement:
        store.record(_measurement())
    store.close()
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
        db.execute("DROP TABLE sweep_results")
    return path


def _schema(path: Path) -> tuple[str, list[str]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return version, tables


def test_a_version_1_store_is_migrated_and_accepts_sweep_rows(swept, tmp_path, no_cluster, capsys):
    path = _store_of_version(tmp_path / "v1.sqlite", "1", with_measurement=True)
    assert "sweep_results" not in _schema(path)[1]
    with open_store(path) as store:
        assert _schema(path) == (str(STORE_SCHEMA_VERSION), _schema(swept.store)[1])
        assert store.sweep_keys() == set() and store.sweep_results() == []
        [m] = store.measurements()  # what version 1 held is kept
        assert m.measured_ns == 6500.0 and m.shape == {"M": 128, "K": 128, "N": 128}
        for r in swept.records:
            store.record_sweep(r)
    assert records_of(path) == swept.records
    # the migrated store is a sweep's store: a re-run skips everything recorded in it
    summary = run_sweep(list(GOOD), list(HW), path, settings=SETTINGS, progress=None)
    assert (summary.solved, summary.skipped) == (0, len(GOOD) * len(HW))
    assert cli.main(["report", str(path)]) == 0
    assert "tiny: gemm 128" in capsys.readouterr().out


def test_a_newer_store_is_refused(tmp_path, capsys, no_cluster):
    path = _store_of_version(tmp_path / "v99.sqlite", "99")
    with pytest.raises(StoreError, match="schema_version 99") as exc:
        ResultsStore(path)
    assert str(path) in str(exc.value)
    with pytest.raises(StoreError, match="schema_version 99"):
        run_sweep(OPS, list(HW), path, settings=SETTINGS, progress=None)
    assert cli.main(["report", str(path)]) == 2
    assert "schema_version 99" in capsys.readouterr().err
    assert _schema(path)[0] == "99"


def test_a_newer_store_is_refused_untouched(tmp_path):
    """Refusing a store of a newer schema must not write into it (no tables of this version created)."""
    path = _store_of_version(tmp_path / "v99.sqlite", "99")
    before = _schema(path)
    with pytest.raises(StoreError):
        ResultsStore(path)
    assert _schema(path) == before


# ---------------------------------------------------------------- the report
def _section(markdown: str, heading: str) -> list[str]:
    lines = markdown.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [line for line in lines[start:end] if line.startswith("|")]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


@pytest.fixture(scope="module")
def reports(swept, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    html, md = out / "sweep.html", out / "sweep.md"
    code = cli.main(["report", str(swept.store), "--html", str(html), "--markdown", str(md)])
    return code, html, md


def test_report_writes_markdown_with_summary_and_op_tables(swept, reports):
    code, _, md = reports
    assert code == 0
    text = md.read_text()
    summary = [_cells(line) for line in _section(text, "## Summary")[2:]]
    by_name = {c[0]: c for c in summary}
    assert set(by_name) == {f"{hw}: {g}" for hw in HW for g in ("tiny", "broken")}
    for hw in HW:
        ok = [find(swept.records, hw, op) for op in GOOD]
        tiny = by_name[f"{hw}: tiny"]
        assert tiny[1:4] == ["3", "0", "3"]  # ops, failed, priced
        assert tiny[4] == f"{sum(r.best.latency_ns for r in ok) / 1e3:,.1f}"  # type: ignore[misc]
        assert tiny[5] == f"{sum(r.ttnn_default_ns for r in ok) / 1e3:,.1f}"  # type: ignore[misc]
        geomean = math.exp(sum(math.log(r.speedup) for r in ok) / len(ok))  # type: ignore[misc, arg-type]
        assert tiny[6] == f"{geomean:.2f}x"
        assert tiny[7] == f"{max(r.speedup for r in ok):.2f}x"  # type: ignore[type-var]
        assert by_name[f"{hw}: broken"][1:9] == ["1", "1", "0", "0.0", "-", "-", "-", "0 / 0 of 0"]

        rows = {c[0]: c for c in map(_cells, _section(text, f"## {hw}")[2:])}
        assert set(rows) == {op.label for op in OPS}
        for r in ok:
            row = rows[r.label]
            assert row[3] == f"{r.best.latency_ns / 1e3:,.1f}"
            assert r.best.candidate.replace("|", "\\|") == row[5]
            assert row[8] == f"{r.ttnn_default_ns / 1e3:,.1f}" and row[9] == f"{r.speedup:.2f}x"  # type: ignore[operator]
            assert row[12] == "ok"
        failed = rows[BAD.label]
        assert "Sq == Skv" in failed[5] and failed[12] == "failed" and failed[3] == "-"


def test_report_writes_html_with_labels_and_a_bokeh_plot(swept, reports):
    code, html, _ = reports
    assert code == 0
    text = html.read_text()
    assert text.startswith("<!DOCTYPE html>")
    for op in OPS:
        assert op.label in text
    assert "Sq == Skv" in text
    assert "Bokeh" in text and "data-root-id" in text  # the inlined library and the plot's root div
    for hw in HW:
        assert f"{hw}: predicted latency" in text
    assert "The model's measured error" in text and "speedup floor (median / worst error)" in text


def test_report_does_not_overwrite_without_force(swept, tmp_path, capsys):
    md = tmp_path / "exists.md"
    md.write_text("keep me\n")
    assert cli.main(["report", str(swept.store), "--markdown", str(md)]) == 2
    assert str(md) in capsys.readouterr().err
    assert md.read_text() == "keep me\n"
    html = tmp_path / "exists.html"
    html.write_text("keep me\n")
    assert cli.main(["report", str(swept.store), "--html", str(html)]) == 2
    assert str(html) in capsys.readouterr().err
    assert html.read_text() == "keep me\n"
    assert cli.main(["report", str(swept.store), "--markdown", str(md), "--title", "Again", "--force"]) == 0
    assert md.read_text().startswith("# Again\n")


def test_report_to_stdout(swept, capsys):
    assert cli.main(["report", str(swept.store)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# Sweep report: {swept.store.name}") and "## Summary" in out


def test_report_without_sweep_rows(tmp_path, capsys):
    empty = tmp_path / "empty.sqlite"
    ResultsStore(empty).close()
    assert cli.main(["report", str(empty), "--markdown", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert str(empty) in err and "no sweep results" in err
    assert not (tmp_path / "r.md").exists()
    missing = tmp_path / "absent.sqlite"
    assert cli.main(["report", str(missing)]) == 2
    assert "no such results store" in capsys.readouterr().err
    assert not missing.exists()
