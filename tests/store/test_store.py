"""The SQLite results store: round trip, schema version, bad files, and the commands that record into it."""

from __future__ import annotations

import json
import sqlite3

import pytest

from loom_explorer.cli import main
from loom_explorer.data import published_path
from loom_explorer.store import (
    Measurement,
    ResultsStore,
    StoreError,
    default_store_path,
    open_store,
)


def _measurement(**over: object) -> Measurement:
    base = {
        "source": "card",
        "hardware": "wormhole_n150",
        "hardware_sha256": "ab" * 32,
        "kernel": "gemm",
        "shape": {"M": 512, "K": 512, "N": 512},
        "candidate": "M@y,N@x|in0=mcast_x,in1=mcast_y",
        "schedule_json": "{}",
        "predicted_cycles": 20000,
        "predicted_ns": 20000.0,
        "breakdown": {"compute": 15000, "launch": 5000},
        "measured_ns": 21000.5,
        "measured_what": "device kernel duration",
    }
    return Measurement(**{**base, **over})  # type: ignore[arg-type]


def test_round_trip_and_filters(tmp_path) -> None:
    path = tmp_path / "r.sqlite"
    with open_store(path) as store:
        a = store.record(_measurement())
        b = store.record(
            _measurement(source="simulator", kernel="flash_attention", measured_ns=None, pcc=0.9999, traffic_equal=True)
        )
        assert b == a + 1
    with open_store(path) as store:  # reopened: persisted
        everything = store.measurements()
        assert [m.kernel for m in everything] == ["gemm", "flash_attention"]
        assert everything[0] == _measurement(
            created=everything[0].created,
            tool_version=everything[0].tool_version,
            ortools_version=everything[0].ortools_version,
        )
        sim = store.measurements(kernel="flash_attention")[0]
        assert sim.measured_ns is None and sim.traffic_equal is True and sim.pcc == 0.9999
        assert store.measurements(hardware="blackhole_p150a") == []


def test_a_store_of_another_schema_version_is_refused(tmp_path) -> None:
    path = tmp_path / "old.sqlite"
    ResultsStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="schema_version 0"):
        ResultsStore(path)


def test_a_file_that_is_not_a_store_is_refused(tmp_path) -> None:
    path = tmp_path / "text.sqlite"
    path.write_text("not a database " * 100)
    with pytest.raises(StoreError, match=str(path)):
        ResultsStore(path)


def test_an_invalid_source_is_refused(tmp_path) -> None:
    with open_store(tmp_path / "r.sqlite") as store, pytest.raises(sqlite3.IntegrityError):
        store.record(_measurement(source="guess"))


def test_default_location(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("LOOM_EXPLORER_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_store_path() == tmp_path / "loom-explorer" / "results.sqlite"
    monkeypatch.setenv("LOOM_EXPLORER_STORE", str(tmp_path / "mine.sqlite"))
    assert default_store_path() == tmp_path / "mine.sqlite"


@pytest.mark.slow
def test_accuracy_and_verify_record_into_the_store(tmp_path, capsys) -> None:
    store = tmp_path / "r.sqlite"
    assert (
        main(
            [
                "accuracy",
                "--data",
                str(published_path("gemm_flops_calibration.csv")),
                "--configs",
                str(published_path("gemm_manual_configs.csv")),
                "--json",
                "--record",
                "--store",
                str(store),
            ]
        )
        == 0
    )
    capsys.readouterr()
    kernel = tmp_path / "g.py"
    assert (
        main(
            [
                "export",
                "gemm",
                "--hw",
                "wormhole_n150",
                "--shape",
                "M=256,K=256,N=256",
                "--format",
                "ttlang",
                "-o",
                str(kernel),
            ]
        )
        == 0
    )
    # the simulator run is what is recorded; the compile, which the record does not carry, is checked in
    # tests/deploy/test_verify_compile.py
    assert main(["verify", str(kernel), "--no-compile", "--record", "--store", str(store)]) == 0
    capsys.readouterr()
    assert main(["results", "--store", str(store), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sum(r["source"] == "report" for r in rows) == 199
    (sim,) = [r for r in rows if r["source"] == "simulator"]
    assert sim["traffic_equal"] is True and sim["pcc"] >= 0.999 and sim["measured_ns"] is None
    assert sim["predicted_cycles"] > 0
