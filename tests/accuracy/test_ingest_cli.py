"""``loom-explorer ingest``: the command around ``accuracy/ingest.py`` (fixtures in tests/accuracy/data)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from loom_explorer import cli
from loom_explorer.store import ResultsStore

DATA = Path(__file__).parent / "data"
V2 = DATA / "ops_perf_results_v2.csv"  # has DEVICE ARCH (wormhole_b0)
V1 = DATA / "ops_perf_results_v1_reordered.csv"  # does not


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_ingest_records_every_op_with_its_prediction(tmp_path):
    store = tmp_path / "results.sqlite"
    code, out, err = run("ingest", str(V2), "--store", str(store))
    assert code == 0, err
    assert "9 ops ingested, 6 rows skipped; predicted on wormhole_n150, 8x8 grid (told from the capture" in out
    assert "skipped row 3 (TilizeWithValPaddingDeviceOperation): TilizeWithValPaddingDeviceOperation from TILE" in out
    assert f"recorded 9 measurements in {store}" in err
    rows = ResultsStore(store).measurements()
    assert len(rows) == 9 and {m.source for m in rows} == {"report"}
    predicted = [m for m in rows if m.predicted_ns is not None]
    assert predicted and all(m.predicted_ns > 0 and m.measured_ns > 0 for m in predicted)  # type: ignore[operator]
    # the printed error is the stored one
    first = predicted[0]
    assert first.predicted_ns is not None and first.measured_ns is not None
    assert f"{100 * (first.predicted_ns - first.measured_ns) / first.measured_ns:+6.1f}%" in out


def test_json_and_dry_run_leave_the_store_alone(tmp_path):
    store = tmp_path / "results.sqlite"
    code, out, _ = run("ingest", str(V2), "--store", str(store), "--dry-run", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["counts"] == {"ingested": 9, "skipped": 6}
    assert [p["row"] for p in doc["predictions"]] == [op["row"] for op in doc["ingested"]]
    illegal = next(p for p in doc["predictions"] if p["row"] == 14)
    assert illegal["predicted_ns"] is None and "dst_capacity" in illegal["note"]
    assert not store.exists()


def test_a_report_without_device_arch_needs_hw(tmp_path):
    code, _, err = run("ingest", str(V1), "--store", str(tmp_path / "s.sqlite"))
    assert code == 2 and "give --hw" in err and "DEVICE ARCH" in err
    code, out, err = run("ingest", str(V1), "--hw", "wormhole_n150", "--dry-run")
    assert code == 0, err
    assert "ops ingested" in out


def test_bad_files_name_the_file(tmp_path):
    code, _, err = run("ingest", str(tmp_path / "missing.csv"))
    assert code == 2 and "missing.csv: no such file" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    code, _, err = run("ingest", str(bad), "--dry-run")
    assert code == 2 and "bad.csv" in err and "OP CODE" in err and "Traceback" not in err
