"""Fuzzing the CSV readers of ``accuracy``/``calibrate`` (measurements and manual configs) and ``ingest``
(device-profiler reports): a clean error of the reader's own class (``DataError``, ``IngestError``) in one
line, or a result whose every number is usable; never another exception.

Inputs: random text and random bytes (alone or below a valid header), and valid files (``data/gemm_measured_small.csv``,
``data/gemm_manual_configs_small.csv``, ``data/ops_perf_results_v2.csv``) with a few mutations each: a cell
replaced by an odd value (NaN, infinities, -1, 0, empty, text, huge, other scripts' digits, a NUL byte), a
row truncated or extended, a blank or duplicated line, the data rows dropped (header only). The CLI tests run
``accuracy`` / ``ingest`` end to end on mutated files (exit 0 or 2, no traceback). Each test runs a bounded
number of examples without a deadline.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom_explorer.accuracy import ingest
from loom_explorer.accuracy.ingest import IngestError
from loom_explorer.accuracy.published_table import DataError
from loom_explorer.cli import main
from loom_explorer.families.contraction import published as gemm_data

DATA = Path(__file__).parent / "data"
MEASURED, CONFIGS = DATA / "gemm_measured_small.csv", DATA / "gemm_manual_configs_small.csv"
PROFILE = DATA / "ops_perf_results_v2.csv"
READERS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
CLI = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

ODD = [
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "-1",
    "0",
    "-0",
    "",
    " ",
    "abc",
    "1.5",
    "1e400",
    "1e-400",
    "9" * 40,
    "1" + "0" * 400,
    "2147483649",
    "١٢",
    "1_024",
    "+7",
    " 12 ",
    "0x10",
    "True",
    "\x00",
    '"',
    "-",
    "32[0]",
    "0[32]",
    "64[32]",
    "-1[1]",
]


def _table(path: Path) -> list[list[str]]:
    with path.open(newline="") as f:
        return list(csv.reader(f))


def _text(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


@st.composite
def mutated(draw: st.DrawFn, source: Path, columns: list[str] | None = None) -> str:
    """``source`` with one to three mutations (module docstring); ``columns``: the ones a cell mutation
    picks from (default any)."""
    rows = [list(r) for r in _table(source)]
    header = rows[0]
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(
                ["cell", "cell", "cell", "truncate", "extend", "blank", "duplicate", "header_only", "header_cell"]
            )
        )
        data_rows = len(rows) - 1
        row = draw(st.integers(1, max(1, data_rows))) if data_rows else 0
        if kind == "cell" and data_rows:
            col = header.index(draw(st.sampled_from(columns))) if columns else draw(st.integers(0, len(header) - 1))
            value = draw(st.one_of(st.sampled_from(ODD), st.text(max_size=6)))
            if col < len(rows[row]):
                rows[row][col] = value
        elif kind == "truncate" and data_rows:
            rows[row] = rows[row][: draw(st.integers(0, len(rows[row])))]
        elif kind == "extend" and data_rows:
            rows[row] = [*rows[row], *draw(st.lists(st.sampled_from(ODD), min_size=1, max_size=3))]
        elif kind == "blank" and data_rows:
            rows.insert(row, [])
        elif kind == "duplicate" and data_rows:
            rows.insert(row, list(rows[row]))
        elif kind == "header_only":
            rows = rows[:1]
        elif kind == "header_cell":
            rows[0] = [*header]
            rows[0][draw(st.integers(0, len(header) - 1))] = draw(st.sampled_from(ODD))
    return _text(rows)


def _records(path: Path) -> list[list[str]]:
    """The non-blank CSV records of a file the reader accepted (it is UTF-8 text then)."""
    with path.open(newline="", encoding="utf-8-sig") as f:
        return [r for r in csv.reader(f) if "".join(r).strip()]


def _check_accepted(path: Path, skip: bool) -> None:
    """A file read without error has a header and data rows, and, unless bad rows are skipped, every row
    as many cells as the header (a short or long row is never dropped or read without a word)."""
    records = _records(path)
    assert len(records) >= 2
    if not skip:
        assert all(len(r) == len(records[0]) for r in records[1:])


def _check_measured_result(cases: list, unusable: list) -> None:
    for case in cases:
        time_ns = float(case.source["time_ns"])
        assert math.isfinite(time_ns) and time_ns > 0
        assert all(1 <= v <= 1 << 31 for _, v in case.problem.shape)
    for issue in unusable:
        assert issue.line >= 2 and issue.file
    from loom_explorer.accuracy.csv_input import group_issues

    assert len(group_issues(unusable)) <= len(unusable)


def _load(path: Path, configs: Path | None, skip: bool) -> None:
    try:
        cases, unusable = gemm_data.load_cases(path, configs, **({"skip_bad_rows": True} if skip else {}))
    except DataError as exc:
        assert "\n" not in str(exc) and (str(path) in str(exc) or str(configs) in str(exc)), exc
        return
    _check_accepted(path, skip)
    _check_measured_result(cases, unusable)


# ---------------------------------------------------------------------------------------------- measurements


def _under_header(source: Path) -> st.SearchStrategy[str]:
    """Random text, alone or below the header of ``source``."""
    header = source.read_text().splitlines(keepends=True)[0]
    return st.one_of(st.text(max_size=400), st.text(max_size=400).map(lambda body: header + body))


def _bytes_under_header(source: Path) -> st.SearchStrategy[bytes]:
    """Random bytes, alone or below the header of ``source``."""
    header = source.read_bytes().splitlines(keepends=True)[0]
    return st.one_of(st.binary(max_size=400), st.binary(max_size=400).map(lambda body: header + body))


@READERS
@given(text=_under_header(MEASURED), skip=st.booleans())
def test_measurement_reader_on_random_text(tmp_path, text, skip) -> None:
    path = tmp_path / "data.csv"
    path.write_bytes(text.encode("utf-8", errors="replace"))
    _load(path, None, skip)


@READERS
@given(blob=_bytes_under_header(MEASURED), skip=st.booleans())
def test_measurement_reader_on_random_bytes(tmp_path, blob, skip) -> None:
    path = tmp_path / "data.csv"
    path.write_bytes(blob)
    _load(path, None, skip)


@READERS
@given(text=mutated(MEASURED), skip=st.booleans())
def test_measurement_reader_on_mutated_files(tmp_path, text, skip) -> None:
    path = tmp_path / "data.csv"
    path.write_bytes(text.encode("utf-8", errors="replace"))
    _load(path, CONFIGS, skip)


@READERS
@given(text=st.one_of(mutated(CONFIGS), st.text(max_size=300)), skip=st.booleans())
def test_configs_reader_on_mutated_files(tmp_path, text, skip) -> None:
    path = tmp_path / "configs.csv"
    path.write_bytes(text.encode("utf-8", errors="replace"))
    try:
        found, issues = gemm_data.read_configs(path)
    except DataError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
    else:
        assert all(c.config.per_core_M >= 1 and c.line >= 2 for c in found.values())
        assert all(i.line >= 2 for i in issues)
    _load(MEASURED, path, skip)


# ---------------------------------------------------------------------------------------------- profiler reports


def _ingest(path: Path, skip: bool) -> None:
    try:
        report = ingest.read_ops_perf(path, skip_bad_rows=bool(skip))
    except IngestError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
        return
    _check_accepted(path, skip)
    for op in report.ops:
        assert math.isfinite(op.device_kernel_ns) and op.device_kernel_ns > 0
        assert all(v >= 1 for v in op.shape.values())
    assert all(s.reason for s in report.skipped)


@READERS
@given(text=_under_header(PROFILE), skip=st.booleans())
def test_profiler_reader_on_random_text(tmp_path, text, skip) -> None:
    path = tmp_path / "ops_perf_results.csv"
    path.write_bytes(text.encode("utf-8", errors="replace"))
    _ingest(path, skip)


@READERS
@given(blob=_bytes_under_header(PROFILE), skip=st.booleans())
def test_profiler_reader_on_random_bytes(tmp_path, blob, skip) -> None:
    path = tmp_path / "ops_perf_results.csv"
    path.write_bytes(blob)
    _ingest(path, skip)


PROFILE_NUMBERS = [
    "DEVICE KERNEL DURATION [ns]",
    "CORE COUNT",
    "DEVICE ID",
    "INPUT_0_Y_PAD[LOGICAL]",
    "INPUT_0_X_PAD[LOGICAL]",
    "INPUT_1_X_PAD[LOGICAL]",
    "INPUT_0_Z_PAD[LOGICAL]",
    "OUTPUT_0_Y_PAD[LOGICAL]",
    "ATTRIBUTES",
    "MATH FIDELITY",
    "OP CODE",
]


@READERS
@given(text=st.one_of(mutated(PROFILE, PROFILE_NUMBERS), mutated(PROFILE)), skip=st.booleans())
def test_profiler_reader_on_mutated_reports(tmp_path, text, skip) -> None:
    path = tmp_path / "ops_perf_results.csv"
    path.write_bytes(text.encode("utf-8", errors="replace"))
    _ingest(path, skip)


# ---------------------------------------------------------------------------------------------- the commands

MEASURED_NUMBERS = ["time_ns", "M", "K", "N", "grid_x", "grid_y", "use_trace", "dtype", "math_fidelity"]


@CLI
@given(text=mutated(MEASURED, MEASURED_NUMBERS), skip=st.booleans())
def test_accuracy_command_on_mutated_files(tmp_path, capsys: pytest.CaptureFixture[str], text, skip) -> None:
    path = tmp_path / "data.csv"
    path.write_bytes(text.encode("utf-8", errors="replace"))
    code = main(["accuracy", "--data", str(path), "--configs", str(CONFIGS), *(["--skip-bad-rows"] if skip else [])])
    out, err = capsys.readouterr()
    assert code in (0, 2) and "Traceback" not in err
    if code == 2:
        assert err.startswith("loom-explorer: error: ") and len(err.strip().splitlines()) == 1
    else:
        assert "nan" not in out.lower() and "None%" not in out


@CLI
@given(text=mutated(PROFILE, PROFILE_NUMBERS), skip=st.booleans())
def test_ingest_command_on_mutated_reports(tmp_path, capsys: pytest.CaptureFixture[str], text, skip) -> None:
    path = tmp_path / "ops_perf_results.csv"
    path.write_bytes(text.encode("utf-8", errors="replace"))
    code = main(["ingest", str(path), "--dry-run", "--hw", "wormhole_n150", *(["--skip-bad-rows"] if skip else [])])
    _, err = capsys.readouterr()
    assert code in (0, 2) and "Traceback" not in err
    if code == 2:
        assert err.startswith("loom-explorer: error: ") and len(err.strip().splitlines()) == 1
