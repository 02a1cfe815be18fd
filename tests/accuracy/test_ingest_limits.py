"""Reading a device-profiler report is bounded by its rows as well as its bytes: the rows are streamed, the first
unusable one ends the reading with one line naming the file, row and column (``--skip-bad-rows``: skipped,
counted and reported), and a file past ``MAX_ROWS`` rows is refused naming the limit.

The adversarial input is a gzip bomb of short rows: the header of a real report, then 1 GiB of ``1\\n`` rows
(500 million) in 1 MiB gzip members, about 1 MB on disk. Reading runs in a child process that reports its own
time and peak resident memory around the read, so neither the test process's imports nor other children
count. The peak is the kernel's ``VmHWM``, reset by the child itself once its imports are done (``5`` written to
``/proc/self/clear_refs``): ``getrusage``'s ``ru_maxrss`` would not do, as Linux carries the forking parent's
peak into the child across ``exec`` (a pytest worker of 500 MiB made every child look that large)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from waits import WAIT_S

from loom_explorer.accuracy import csv_input
from loom_explorer.accuracy.ingest import IngestError, read_ops_perf, read_ops_perf_bytes
from loom_explorer.cli import main

DATA = Path(__file__).parent / "data"
V2 = DATA / "ops_perf_results_v2.csv"
HEADER = V2.read_text().splitlines(keepends=True)[0]
MIB = 1 << 20

READ_IN_A_CHILD = """
import json, sys, time
from loom_explorer.accuracy import csv_input
from loom_explorer.accuracy.ingest import IngestError, read_ops_perf
def peak_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
path, skip, max_rows = sys.argv[1], sys.argv[2] == "skip", int(sys.argv[3])
csv_input.MAX_ROWS = max_rows or csv_input.MAX_ROWS
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")
before_kib = peak_kib()
start = time.perf_counter()
try:
    report = read_ops_perf(path, skip_bad_rows=skip)
    result = f"read: {len(report.bad)} bad rows"
except IngestError as exc:
    result = f"error: {exc}"
seconds = time.perf_counter() - start
after_kib = peak_kib()
print(json.dumps({"seconds": seconds, "grew_mib": (after_kib - before_kib) / 1024, "peak_mib": after_kib / 1024,
                  "result": result}))
"""


def gzip_bomb(path: Path, mib: int = 1024, row: bytes = b"1\n") -> Path:
    """The header, then ``mib`` MiB of one-cell rows (``1\\n``, or ``row``), as gzip members of 1 MiB each."""
    member = gzip.compress(row * (MIB // len(row)), 9)
    with path.open("wb") as f:
        f.write(gzip.compress(HEADER.encode()))
        for _ in range(mib):
            f.write(member)
    return path


def read_in_a_child(path: Path, skip: bool, max_rows: int = 0) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", READ_IN_A_CHILD, str(path), "skip" if skip else "stop", str(max_rows)],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=True,
    )
    return dict(json.loads(done.stdout))


def test_a_gzip_bomb_of_short_rows_fails_at_its_first_row_at_once(tmp_path: Path) -> None:
    bomb = gzip_bomb(tmp_path / "ops_perf_results_bomb.csv.gz")
    assert bomb.stat().st_size < 2 * MIB  # 1 GiB of text once decompressed
    seen = read_in_a_child(bomb, skip=False)
    assert seen["result"] == (
        f"error: {bomb}:2: short row: 1 cells, the header has {HEADER.count(',') + 1}; fix "
        "the file or give --skip-bad-rows to leave such rows out"
    )
    assert float(seen["seconds"]) < 1.0  # type: ignore[arg-type]
    assert float(seen["grew_mib"]) < 32 and float(seen["peak_mib"]) < 256  # type: ignore[arg-type]


def test_skipping_the_bomb_s_rows_stops_at_the_row_limit_with_bounded_memory(tmp_path: Path) -> None:
    bomb = gzip_bomb(tmp_path / "ops_perf_results_bomb.csv.gz")
    seen = read_in_a_child(bomb, skip=True, max_rows=20_000)
    assert seen["result"] == (
        f"error: {bomb}:20002: more than 20,000 rows, the most a file may have (split the capture)"
    )
    assert float(seen["grew_mib"]) < 32 and float(seen["peak_mib"]) < 256  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_real_row_limit_bounds_time_and_memory(tmp_path: Path) -> None:
    """At ``MAX_ROWS`` (500,000) skipped rows kept: measured 84 MiB more than the imports' peak, 11 s."""
    bomb = gzip_bomb(tmp_path / "ops_perf_results_bomb.csv.gz")
    seen = read_in_a_child(bomb, skip=True)
    assert seen["result"] == (
        f"error: {bomb}:{csv_input.MAX_ROWS + 2}: more than {csv_input.MAX_ROWS:,} rows, "
        "the most a file may have (split the capture)"
    )
    assert float(seen["grew_mib"]) < 256 and float(seen["peak_mib"]) < 768  # type: ignore[arg-type]
    assert float(seen["seconds"]) < 60  # type: ignore[arg-type]


def test_a_file_past_the_byte_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(csv_input, "MAX_DECOMPRESSED_BYTES", 4 * MIB)
    bomb = gzip_bomb(tmp_path / "ops_perf_results_bomb.csv.gz", mib=8, row=b"x" * 1023 + b"\n")
    with pytest.raises(IngestError, match=r": more than 4 MiB of text \(once decompressed\)") as err:
        read_ops_perf(bomb, skip_bad_rows=True)
    assert str(bomb) in str(err.value) and "\n" not in str(err.value)


def test_a_line_past_the_line_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(csv_input, "MAX_LINE_CHARS", 1000)
    path = tmp_path / "ops_perf_results_long.csv"
    path.write_text(HEADER.replace(",", "," + "x" * 1000, 1) + "1\n")
    with pytest.raises(IngestError, match=f"{path}: a line longer than"):
        read_ops_perf(path)


def _with_bad_rows(path: Path) -> Path:
    """The v2 fixture with a short row after line 3 and a zero duration in line 9 (a matmul's, line 10 then)."""
    lines = V2.read_text().splitlines(keepends=True)
    duration = HEADER.split(",").index("DEVICE KERNEL DURATION [ns]")
    cells = lines[8].split(",")
    assert cells[0].startswith("Matmul") and float(cells[duration]) > 0
    cells[duration] = "0"
    lines[8] = ",".join(cells)
    lines.insert(3, "Matmul,tt_dnn_device\n")
    path.write_text("".join(lines))
    return path


def test_skip_bad_rows_counts_and_reports_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _with_bad_rows(tmp_path / "ops_perf_results_bad.csv")
    clean = read_ops_perf(V2)
    with pytest.raises(
        IngestError,
        match=rf"^{bad}:4: short row: 2 cells, the header has \d+; fix the file or give "
        "--skip-bad-rows",
    ):
        read_ops_perf(bad)
    report = read_ops_perf(bad, skip_bad_rows=True)
    assert [(i.line, i.column) for i in report.bad] == [(4, None), (10, "DEVICE KERNEL DURATION [ns]")]
    assert len(report.ops) == len(clean.ops) - 1 and len(report.skipped) == len(clean.skipped) + 2
    # the command line: refused at the first, or both counted and grouped by reason
    assert main(["ingest", str(bad), "--dry-run", "--hw", "wormhole_n150"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bad}:4: short row" in err
    assert main(["ingest", str(bad), "--dry-run", "--hw", "wormhole_n150", "--skip-bad-rows"]) == 0
    out, err = capsys.readouterr()
    assert "skipped 2 unusable rows (--skip-bad-rows):" in err and "not above 0: 1 row (line 10)" in err
    assert f"{len(report.ops)} ops ingested" in out


def test_improve_reads_with_skip_bad_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only unusable and unmodelled rows: refused at the first without the flag; with it, counted, then refused
    for having no op the model reads (no solve is needed to show the flag works)."""
    lines = V2.read_text().splitlines(keepends=True)
    path = tmp_path / "ops_perf_results_no_ops.csv"
    path.write_text(lines[0] + lines[1] + "Matmul,tt_dnn_device\n" + "Matmul\n")
    assert main(["improve", str(path), "--hw", "wormhole_n150"]) == 2
    assert f"{path}:3: short row: 2 cells" in capsys.readouterr().err
    assert main(["improve", str(path), "--hw", "wormhole_n150", "--skip-bad-rows"]) == 2
    err = capsys.readouterr().err
    assert "skipped 2 unusable rows (--skip-bad-rows):" in err
    assert "short row (not as many cells as the header): 2 rows" in err and "no op the model reads (3 rows" in err


def test_an_upload_takes_the_same_path(tmp_path: Path) -> None:
    bomb = gzip_bomb(tmp_path / "bomb.csv.gz", mib=64).read_bytes()
    with pytest.raises(IngestError, match=r"^upload\.csv\.gz:2: short row"):
        read_ops_perf_bytes("upload.csv.gz", bomb)


def test_the_measurement_readers_share_the_row_and_byte_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    from loom_explorer.accuracy.published_table import DataError, read_table

    measured = DATA / "gemm_measured_small.csv"
    monkeypatch.setattr(csv_input, "MAX_ROWS", 3)
    with pytest.raises(DataError, match=rf"^{measured}:5: more than 3 rows, the most a file may have"):
        read_table(measured, ())
    monkeypatch.setattr(csv_input, "MAX_ROWS", 500_000)
    monkeypatch.setattr(csv_input, "MAX_DECOMPRESSED_BYTES", measured.stat().st_size - 1)
    with pytest.raises(DataError, match=rf"^{measured}: more than 0 MiB: not a file this tool reads"):
        read_table(measured, ())
