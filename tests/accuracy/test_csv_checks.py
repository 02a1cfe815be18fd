"""Bad measurement and profiler CSVs through ``accuracy``, ``calibrate`` and ``ingest``: every number cell is
checked before any work, and a bad one is refused (exit 2) naming ``file:line`` and the column; rows that are
left out (``--skip-bad-rows``) or cannot be scored are listed with the reason.

Fixtures: ``data/gemm_measured_small.csv`` and ``data/gemm_manual_configs_small.csv`` (rows of the published
matmul measurements, in the published tables' format), ``data/ops_perf_results_v2.csv`` (a profiler report).
Line numbers are the file's: the header is line 1, the first data row line 2.
"""

from __future__ import annotations

import csv
import io
import re
import time
from pathlib import Path

import pytest

from loom_explorer.cli import main

DATA = Path(__file__).parent / "data"
MEASURED, CONFIGS = DATA / "gemm_measured_small.csv", DATA / "gemm_manual_configs_small.csv"
PROFILE = DATA / "ops_perf_results_v2.csv"
DURATION = "DEVICE KERNEL DURATION [ns]"


def _table(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def _write(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([header, *rows])
    return path


def _with_cell(tmp_path: Path, source: Path, line: int, column: str, value: str, name: str = "data.csv") -> Path:
    """``source`` with the cell of ``column`` on file line ``line`` replaced by ``value``."""
    header, rows = _table(source)
    rows[line - 2][header.index(column)] = value
    return _write(tmp_path / name, header, rows)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("loom-explorer: error: "), err
    assert "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------------------------------------- accuracy


@pytest.mark.parametrize(
    "column,value,says",
    [
        ("time_ns", "nan", "'nan' is not a finite number"),
        ("time_ns", "inf", "'inf' is not a finite number"),
        ("time_ns", "-375", "'-375' is not above 0"),
        ("time_ns", "0", "'0' is not above 0"),
        ("time_ns", "1e400", "is not a finite number"),
        ("time_ns", "abc", "'abc' is not a number"),
        ("time_ns", "", "'' is not a number"),
        ("M", "0", "'0' is below 1"),
        ("K", "-1024", "'-1024' is not a whole number"),
        ("N", "1024.5", "is not a whole number"),
        ("N", "99999999999", "is above 2147483648"),
        ("grid_x", "99", "99 is more than wormhole_n150's 8"),
        ("grid_y", "0", "'0' is below 1"),
        ("use_trace", "yes", "'yes' is not True or False"),
        ("dtype", "BF99", "'BF99' is not a data format"),
        ("math_fidelity", "HiFi9", "'HiFi9' is not a math fidelity"),
        ("card", "n300", "'n300' is not a card"),
    ],
)
def test_accuracy_refuses_a_bad_cell_naming_file_line_and_column(tmp_path, capsys, column, value, says) -> None:
    bad = _with_cell(tmp_path, MEASURED, 4, column, value)
    code, out, err = _run(capsys, "accuracy", "--data", str(bad), "--configs", str(CONFIGS))
    assert code == 2 and out == ""
    line = _one_line_error(err)
    assert f"{bad}:4: column {column}: " in line and says in line and "--skip-bad-rows" in line


def test_accuracy_refuses_short_and_long_rows(tmp_path, capsys) -> None:
    header, rows = _table(MEASURED)
    rows[1] = rows[1][:5]  # line 3
    rows[4] = [*rows[4], "extra"]  # line 6
    bad = _write(tmp_path / "rows.csv", header, rows)
    code, _, err = _run(capsys, "accuracy", "--data", str(bad))
    assert code == 2
    line = _one_line_error(err)
    assert f"{bad}:3: short row: 5 cells, the header has {len(header)}" in line and "1 more unusable row" in line
    code, _, err = _run(capsys, "accuracy", "--data", str(bad), "--skip-bad-rows")
    assert code == 0
    assert re.search(r"short row .*: 1 row \(line 3\)", err) and re.search(r"long row .*: 1 row \(line 6\)", err)


@pytest.mark.parametrize(
    "content,says",
    [
        (None, "no data rows (only the header)"),  # the header alone
        (b"", "empty file"),
        (b"\n\n  \n", "empty file"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not a CSV file (not UTF-8 text)"),
        (b"card,M\n\xe9t\xe9,1\n", "not a CSV file (not UTF-8 text)"),
        (b"card,M,K\x00\n", "not a CSV file (binary content)"),
    ],
)
def test_accuracy_refuses_files_without_data_in_one_line(tmp_path, capsys, content, says) -> None:
    path = tmp_path / "data.csv"
    path.write_bytes(MEASURED.read_bytes().splitlines(keepends=True)[0] if content is None else content)
    for extra in ([], ["--json"]):
        code, out, err = _run(capsys, "accuracy", "--data", str(path), *extra)
        assert code == 2 and out == "" and "None%" not in out
        assert f"{path}: {says}" in _one_line_error(err)


def test_accuracy_refuses_a_bad_cell_of_the_configs_file(tmp_path, capsys) -> None:
    bad = _with_cell(tmp_path, CONFIGS, 3, "per_core_M", "nan", "configs.csv")
    code, _, err = _run(capsys, "accuracy", "--data", str(MEASURED), "--configs", str(bad))
    assert code == 2
    assert f"{bad}:3: column per_core_M: 'nan' is not a whole number" in _one_line_error(err)
    bad = _with_cell(tmp_path, CONFIGS, 2, "out_sharded", "maybe", "configs.csv")
    code, _, err = _run(capsys, "accuracy", "--data", str(MEASURED), "--configs", str(bad))
    assert code == 2 and f"{bad}:2: column out_sharded: 'maybe' is not True or False" in _one_line_error(err)


def test_accuracy_says_which_rows_it_could_not_score(tmp_path, capsys) -> None:
    """With --skip-bad-rows the bad rows are left out and listed; a manual row without its config and a row
    whose config the model finds illegal are listed too; no error figure is NaN or below -100%."""
    header, rows = _table(MEASURED)
    rows[0][header.index("time_ns")] = "nan"  # line 2
    rows[2][header.index("time_ns")] = "-5"  # line 4
    data = _write(tmp_path / "data.csv", header, rows)
    cheader, configs = _table(CONFIGS)
    by_shape = {tuple(c[cheader.index(d)] for d in "MKN"): c for c in configs}
    del by_shape[("512", "1024", "1024")]  # the manual row on line 12 has no config now
    by_shape[("512", "512", "512")][cheader.index("out_subblock_h")] = "8"  # 8x2 sub-block: illegal (line 11)
    config_file = _write(tmp_path / "configs.csv", cheader, list(by_shape.values()))
    code, out, err = _run(capsys, "accuracy", "--data", str(data), "--configs", str(config_file), "--skip-bad-rows")
    assert code == 0, err
    assert "could not score 4 rows:" in err
    assert re.search(rf"{re.escape(str(data))}: column time_ns: not a finite number: 1 row \(line 2\)", err)
    assert re.search(r"column time_ns: not above 0: 1 row \(line 4\)", err)
    assert re.search(r"manual row without a config in .*configs\.csv: 1 row \(line 12\)", err)
    assert re.search(r"the model finds its config illegal: 1 row \(line 11\)", err)
    errors = [float(e) for e in re.findall(r"(-?[\d.]+)%$", out, re.MULTILINE)]
    assert errors and all(e > -100 for e in errors)
    assert "nan" not in out.lower() and "None" not in out


def test_the_rows_without_trace_are_not_enough(tmp_path, capsys) -> None:
    header, rows = _table(MEASURED)
    data = _write(tmp_path / "data.csv", header, [r for r in rows if r[header.index("use_trace")] == "False"])
    code, _, err = _run(capsys, "accuracy", "--data", str(data))
    assert code == 2 and "no usable rows with use_trace=True" in _one_line_error(err)


# ---------------------------------------------------------------------------------------------- calibrate


def test_calibrate_refuses_to_fit_on_an_unusable_row(tmp_path, capsys) -> None:
    out = tmp_path / "fitted.yaml"
    bad = _with_cell(tmp_path, MEASURED, 3, "time_ns", "nan")
    started = time.monotonic()
    code, stdout, err = _run(
        capsys, "calibrate", "--hw", "wormhole_n150", "--data", str(bad), "--configs", str(CONFIGS), "-o", str(out)
    )
    assert code == 2 and stdout == "" and not out.exists()
    line = _one_line_error(err)
    assert f"{bad}:3: column time_ns: 'nan' is not a finite number" in line and "--skip-bad-rows" in line
    assert time.monotonic() - started < 30  # refused before the fit
    # a manual row without its config is unusable for the fit too
    code, _, err = _run(capsys, "calibrate", "--hw", "wormhole_n150", "--data", str(MEASURED), "-o", str(out))
    assert code == 2 and not out.exists()
    line = _one_line_error(err)
    assert f"{MEASURED}:11: manual row without a config" in line and "2 more unusable rows" in line


@pytest.mark.slow
def test_calibrate_skips_bad_rows_when_told_and_says_when_nothing_moved(tmp_path, capsys) -> None:
    """Times equal to the model's own predictions: the shipped constants fit best, so no constant moves and
    the command says so; the bad row is left out with --skip-bad-rows and reported."""
    code, out, _ = _run(capsys, "accuracy", "--data", str(MEASURED), "--configs", str(CONFIGS), "--json")
    import json

    predicted = {
        (r["card"], r["config_kind"], r["M"], r["K"], r["N"]): r["predicted_ns"] for r in json.loads(out)["rows"]
    }
    header, rows = _table(MEASURED)
    for r in rows:
        key = (r[0], r[1], r[header.index("M")], r[header.index("K")], r[header.index("N")])
        if r[header.index("use_trace")] == "True":
            r[header.index("time_ns")] = repr(predicted[key])
    rows[3][header.index("time_ns")] = "nan"  # line 5
    data = _write(tmp_path / "data.csv", header, rows)
    fitted = tmp_path / "fitted.yaml"
    # the shipped file without its calibration notes, so that the fit starts at the values that made the times
    from loom_explorer.accuracy.calibrate import CALIBRATED_NOTE
    from loom_explorer.hardware.load import resolve_hardware_path

    unnoted = tmp_path / "n150.yaml"
    unnoted.write_text(CALIBRATED_NOTE.sub("", Path(resolve_hardware_path("wormhole_n150")).read_text()))
    code, out, err = _run(
        capsys,
        "calibrate",
        "--hw",
        str(unnoted),
        "--data",
        str(data),
        "--configs",
        str(CONFIGS),
        "-o",
        str(fitted),
        "--skip-bad-rows",
    )
    assert code == 0, err
    assert "skipped 1 unusable rows (--skip-bad-rows):" in err
    assert re.search(rf"{re.escape(str(data))}: column time_ns: not a finite number: 1 row \(line 5\)", err)
    assert "no constant moved" in out and fitted.exists()
    assert "calibrated (was" not in fitted.read_text()


# ---------------------------------------------------------------------------------------------- ingest


@pytest.mark.parametrize(
    "column,value,says",
    [
        (DURATION, "nan", "'nan' is not a finite number"),
        (DURATION, "-31245", "'-31245' is not above 0"),
        (DURATION, "0", "'0' is not above 0"),
        ("INPUT_0_Y_PAD[LOGICAL]", "0[0]", "'0' is below 1"),
        ("INPUT_1_X_PAD[LOGICAL]", "-1024[1024]", "not a tensor extent"),
        ("INPUT_0_X_PAD[LOGICAL]", "32[64]", "a logical extent above its padded one"),
        ("CORE COUNT", "0", "'0' is below 1"),
        ("DEVICE ID", "inf", "'inf' is not a whole number"),
    ],
)
def test_ingest_refuses_a_bad_number_naming_file_line_and_column(tmp_path, capsys, column, value, says) -> None:
    bad = _with_cell(tmp_path, PROFILE, 4, column, value, "ops_perf_results_bad.csv")  # line 4: a matmul
    store = tmp_path / "store.sqlite"
    code, out, err = _run(capsys, "ingest", str(bad), "--store", str(store))
    assert code == 2 and out == "" and not store.exists()  # nothing recorded
    line = _one_line_error(err)
    assert f"{bad}:4: column {column}: " in line and says in line


def test_ingest_refuses_short_rows_and_empty_reports(tmp_path, capsys) -> None:
    header, rows = _table(PROFILE)
    rows[3] = rows[3][:10]  # line 5
    bad = _write(tmp_path / "ops_perf_results_short.csv", header, rows)
    code, _, err = _run(capsys, "ingest", str(bad), "--dry-run")
    assert code == 2 and f"{bad}:5: short row: 10 cells, the header has {len(header)}" in _one_line_error(err)
    only_header = _write(tmp_path / "ops_perf_results_empty.csv", header, [])
    code, out, err = _run(capsys, "ingest", str(only_header), "--dry-run")
    assert code == 2 and out == "" and f"{only_header}: no data rows" in _one_line_error(err)


def test_ingest_skips_bad_rows_when_told(tmp_path, capsys) -> None:
    bad = _with_cell(tmp_path, PROFILE, 4, DURATION, "nan", "ops_perf_results_bad.csv")
    code, out, err = _run(capsys, "ingest", str(bad), "--dry-run", "--skip-bad-rows")
    assert code == 0, err
    assert "8 ops ingested, 7 rows skipped" in out
    assert f"skipped row 4 (MatmulDeviceOperation): column {DURATION}: 'nan' is not a finite number" in out
    assert "skipped 1 unusable rows (--skip-bad-rows):" in err and "1 row (line 4)" in err


# ---------------------------------------------------------------------------------------------- large inputs


def test_accuracy_and_ingest_take_many_repeated_rows_quickly(tmp_path, capsys) -> None:
    """3,000-row files repeating a dozen ops: each distinct op is costed once and the store written in one
    transaction (a model evaluation and a commit per row took over a minute)."""
    header, rows = _table(MEASURED)
    data = _write(tmp_path / "many.csv", header, rows * 215)
    pheader, prows = _table(PROFILE)
    profile = _write(tmp_path / "ops_perf_results_many.csv", pheader, prows * 200)
    started = time.monotonic()
    code, _, err = _run(
        capsys,
        "accuracy",
        "--data",
        str(data),
        "--configs",
        str(CONFIGS),
        "--record",
        "--store",
        str(tmp_path / "a.sqlite"),
    )
    assert code == 0, err
    assert "recorded 2580 measurements" in err
    code, _, err = _run(capsys, "ingest", str(profile), "--store", str(tmp_path / "i.sqlite"))
    assert code == 0, err
    assert "recorded 1800 measurements" in err
    assert time.monotonic() - started < 25


def test_progress_is_silent_at_first_then_sparse_lines_or_one_line_in_place() -> None:
    from loom_explorer.accuracy.progress import Progress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    quiet = io.StringIO()
    bar = Progress(quiet)  # default: nothing in the first 2 s
    bar.phase("predicting", 10)
    for i in range(10):
        bar.update(i)
    bar.close()
    assert quiet.getvalue() == ""
    log = io.StringIO()
    bar = Progress(log, delay_s=0, every_s=3600)
    bar.phase("predicting", 1000)
    for i in range(1000):
        bar.update(i)
    bar.close()
    assert log.getvalue() == "predicting: 0/1,000 (0%, 0 s)\n"  # one line, the next due an hour later
    tty = Tty()
    bar = Progress(tty, delay_s=0)
    bar.phase("reading", 4)
    bar.update(2)
    bar.close()
    assert tty.getvalue().startswith("\rreading: [") and "2/4 (50%" in tty.getvalue()
    assert tty.getvalue().endswith("\n")
