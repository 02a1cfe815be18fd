"""A results store written by an older version of the tool opens and reads back: the version 3 file (sweep
results with a ``causal`` 0/1 column) is migrated to version 4, whose ``options`` column holds a sorted JSON
list of program option names, every row, id and key kept; a version 4 file (no ``precision`` column) to
version 5, its rows' ``precision`` ``""`` (not recorded)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

from loom_explorer.store import STORE_SCHEMA_VERSION, open_store

# the tables of a version 3 store, as that version created them
VERSION_3_SQL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE measurements (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('card', 'simulator', 'report')), hardware TEXT NOT NULL,
    hardware_sha256 TEXT NOT NULL, kernel TEXT NOT NULL, shape TEXT NOT NULL, candidate TEXT NOT NULL,
    schedule_json TEXT NOT NULL, predicted_cycles INTEGER, predicted_ns REAL, breakdown TEXT NOT NULL,
    measured_ns REAL, measured_what TEXT NOT NULL, pcc REAL, traffic_equal INTEGER, tool_version TEXT NOT NULL,
    ortools_version TEXT NOT NULL, note TEXT NOT NULL
);
CREATE INDEX by_hw_kernel ON measurements (hardware, kernel);
CREATE TABLE sweep_results (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, op_key TEXT NOT NULL UNIQUE,
    hardware TEXT NOT NULL, hardware_sha256 TEXT NOT NULL, tool_version TEXT NOT NULL, label TEXT NOT NULL,
    kernel TEXT NOT NULL, shape TEXT NOT NULL, dtype TEXT NOT NULL, fidelity TEXT NOT NULL,
    causal INTEGER NOT NULL, status TEXT NOT NULL CHECK (status IN ('ok', 'no_schedule', 'failed')),
    error TEXT NOT NULL, best TEXT, runner_up TEXT, ideal_ns REAL, ttnn_default_ns REAL,
    ttnn_default_note TEXT NOT NULL, solve_seconds REAL NOT NULL
);
CREATE TABLE solved (
    key TEXT PRIMARY KEY, created TEXT NOT NULL, hardware TEXT NOT NULL, hardware_sha256 TEXT NOT NULL,
    kernel TEXT NOT NULL, problem TEXT NOT NULL, tool_version TEXT NOT NULL, results TEXT NOT NULL
);
INSERT INTO meta VALUES ('schema_version', '3');
"""

ATTENTION = "B=1,H=32,Hkv=8,Sq=2048,Skv=2048,D=128"
BEST = json.dumps(
    {
        "candidate": "B*H*Sq@xy|q=dram,k=dram,v=dram|balanced",
        "params": {"q_chunk_size": 256},
        "latency_cycles": 1000,
        "latency_ns": 1000.0,
        "utilisation": 0.5,
    }
)


def _old_store(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.executescript(VERSION_3_SQL)
        for row_id, (label, kernel, shape, causal) in enumerate(
            (
                ("prefill: attention", "flash_attention", ATTENTION, 1),
                ("decode: attention", "flash_attention", "B=1,H=32,Hkv=8,Sq=1,Skv=4096,D=128", 0),
                ("qkv", "gemm", "M=32,N=6144,K=4096", 0),
            ),
            start=7,
        ):
            key = f"{'ab' * 32}|0.1.0|{kernel}|{shape}|bfloat16|hifi2|{'causal' if causal else ''}|{label}"
            db.execute(
                "INSERT INTO sweep_results VALUES (?, '2026-01-01T00:00:00+00:00', ?, 'wormhole_n150', ?, "
                "'0.1.0', ?, ?, ?, 'bfloat16', 'hifi2', ?, 'ok', '', ?, NULL, 2000.0, 3000.0, 'note', 1.5)",
                (row_id, key, "ab" * 32, label, kernel, shape, causal, BEST),
            )
        db.execute(
            "INSERT INTO solved VALUES ('k', '2026-01-01', 'wormhole_n150', ?, 'gemm', 'M=32', '0.1.0', '[]')",
            ("ab" * 32,),
        )


def _columns(path: Path) -> tuple[str, list[str]]:
    with sqlite3.connect(path) as db:
        version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        return version, [row[1] for row in db.execute("PRAGMA table_info(sweep_results)")]


def test_a_version_3_store_opens_with_its_causal_rows_as_options(tmp_path: Path) -> None:
    path = tmp_path / "v3.sqlite"
    _old_store(path)
    with open_store(path) as store:
        rows = store.sweep_results()
        keys = store.sweep_keys()
        solved = store.solved("k")
    assert [r.options for r in rows] == [("causal",), (), ()]
    assert [r.label for r in rows] == ["prefill: attention", "decode: attention", "qkv"]
    assert rows[0].best is not None and rows[0].best.candidate.endswith("|balanced")
    assert rows[0].ttnn_default_ns == 3000.0 and rows[2].kernel == "gemm"
    assert len(keys) == 3 and any(k.endswith("|causal|prefill: attention") for k in keys)  # keys kept as written
    assert solved is not None and solved.kernel == "gemm"
    version, columns = _columns(path)
    assert version == str(STORE_SCHEMA_VERSION) == "5"
    assert "causal" not in columns and "options" in columns
    with sqlite3.connect(path) as db:
        stored = [row[0] for row in db.execute("SELECT options FROM sweep_results ORDER BY id")]
        ids = [row[0] for row in db.execute("SELECT id FROM sweep_results ORDER BY id")]
    assert stored == ['["causal"]', "[]", "[]"] and ids == [7, 8, 9]


def test_a_migrated_store_takes_new_rows_and_opens_again(tmp_path: Path) -> None:
    path = tmp_path / "v3.sqlite"
    _old_store(path)
    with open_store(path) as store:
        old = store.sweep_results()[0]
        new = replace(old, op_key="another", label="new", options=("causal",))
        (row_id,) = store.record_sweeps([new])
    assert row_id == 10  # ids go on after the kept rows
    with open_store(path) as store:  # a current file opens unchanged
        rows = store.sweep_results()
    assert [r.options for r in rows] == [("causal",), (), (), ("causal",)]
    assert _columns(path)[0] == "5"


def test_a_new_store_has_the_options_column(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    with open_store(path):
        pass
    version, columns = _columns(path)
    assert version == "5" and "options" in columns and "causal" not in columns and "precision" in columns


def test_a_version_4_store_reads_its_mesh_rows_without_a_precision(tmp_path: Path) -> None:
    path = tmp_path / "v4.sqlite"
    _old_store(path)
    with sqlite3.connect(path) as db:  # the version 4 form: options, no precision
        db.execute("ALTER TABLE sweep_results DROP COLUMN causal")
        db.execute("ALTER TABLE sweep_results ADD COLUMN options TEXT NOT NULL DEFAULT '[]'")
        db.execute("UPDATE sweep_results SET hardware = 't3000'")
        db.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    assert "precision" not in _columns(path)[1]
    with open_store(path) as store:
        old = store.sweep_results()
        assert [r.precision for r in old] == ["", "", ""] and old[2].hardware == "t3000"
        store.record_sweeps([replace(old[2], op_key="new", precision="performance")])
    with open_store(path) as store:
        assert [r.precision for r in store.sweep_results()] == ["", "", "", "performance"]
    assert _columns(path) == ("5", [*_columns(path)[1][:-1], "precision"])
