"""The explorer's upload takes ``ingest``'s path (``read_ops_perf_bytes``): a gzip bomb of short rows is refused
at its first row at once, in one line; with rows skipped, the unusable ones are counted and said in the
summary. Driven at the state level (``ReportSource``, ``analyse``), not in a browser."""

from __future__ import annotations

import gzip
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loom_explorer.accuracy.ingest import IngestError
from loom_explorer.ui.profiler import ReportSource, analyse, summary_lines

V2 = Path(__file__).resolve().parents[1] / "accuracy" / "data" / "ops_perf_results_v2.csv"
LINES = V2.read_text().splitlines(keepends=True)


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A results store of this test's own (the explorer remembers its solves in ``$LOOM_EXPLORER_STORE``)."""
    path = tmp_path / "results.sqlite"
    monkeypatch.setenv("LOOM_EXPLORER_STORE", str(path))
    yield path


def test_an_uploaded_gzip_bomb_is_refused_at_its_first_row_at_once() -> None:
    member = gzip.compress(b"1\n" * (1 << 19), 9)  # 1 MiB of one-cell rows
    bomb = gzip.compress(LINES[0].encode()) + member * 256  # 256 MiB of text once decompressed
    start = time.perf_counter()
    with pytest.raises(IngestError) as err:
        ReportSource.upload("C:\\Users\\me\\bomb.csv.gz", bomb).read()
    assert time.perf_counter() - start < 1.0
    assert str(err.value).startswith("bomb.csv.gz:2: short row: 1 cells, the header has ")
    assert "--skip-bad-rows" in str(err.value) and "\n" not in str(err.value)


def test_an_upload_with_rows_skipped_counts_them_in_the_summary(store: Path) -> None:
    matmul = next(line for line in LINES if line.startswith("MatmulDeviceOperation"))
    data = (LINES[0] + matmul + "Matmul,tt_dnn_device\n" + "Untilize\n").encode()
    source = ReportSource.upload("ops_perf_results_upload.csv", data)
    with pytest.raises(IngestError, match="^ops_perf_results_upload.csv:3: short row: 2 cells"):
        analyse(source, "wormhole_n150")
    analysis = analyse(source, "wormhole_n150", skip_bad_rows=True)
    assert len(analysis.report.ops) == 1 and [i.line for i in analysis.report.bad] == [3, 4]
    lines = summary_lines(analysis)
    assert "skipped 2 unusable rows (--skip-bad-rows):" in lines
    assert any(
        line.startswith("ops_perf_results_upload.csv: short row (not as many cells as the header): 2 rows")
        for line in lines
    )
