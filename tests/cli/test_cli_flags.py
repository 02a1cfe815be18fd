"""Numeric flags, hardware files and output files at the command line: bad input exits 2 with the flag, file,
line or column named, before any work (in-process ``loom_explorer.cli.main``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from loom_explorer import cli
from loom_explorer.hardware.load import shipped_hardware_dir

PROBLEM = ["gemm", "--hw", "wormhole_n150", "--shape", "M=256,K=256,N=256"]
COMMANDS = {
    "solve": ["solve", *PROBLEM],
    "traffic": ["traffic", *PROBLEM],
    "export": ["export", *PROBLEM, "--format", "json", "-o", "never_written.json"],
    "deploy": ["deploy", *PROBLEM],
    "predict": ["predict", *PROBLEM, "--ttnn-default"],
    "verify": ["verify", "kernel.py"],
    "sweep": ["sweep", "shapes.csv", "--hw", "wormhole_n150", "--out", "never_written.sqlite"],
    "serve": ["serve"],
}


def _flag_error(capsys, argv: list[str]) -> str:
    assert cli.main(argv) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    "command, flag, value, expected",
    [
        ("solve", "--time-limit", "nan", "must be a finite number > 0"),
        ("solve", "--time-limit", "inf", "must be a finite number > 0"),
        ("solve", "--time-limit", "-1", "must be a finite number > 0"),
        ("solve", "--time-limit", "0", "must be a finite number > 0"),
        ("solve", "--time-limit", "1e300", "must be a finite number > 0"),
        ("solve", "--workers", "0", "must be a whole number from 1 to 1024"),
        ("solve", "--workers", "1.5", "must be a whole number from 1 to 1024"),
        ("solve", "--parallel", "-1", "must be a whole number from 0 to 1024"),
        ("solve", "--seed", "-1", "must be a whole number from 0 to 2147483647"),
        ("solve", "--seed", "2147483648", "must be a whole number from 0 to 2147483647"),
        ("solve", "--top", "-1", "must be a whole number >= 0"),
        ("solve", "--alternatives", "0", "must be a whole number >= 1"),
        ("solve", "--fastest", "-2", "must be a whole number >= 0"),
        ("solve", "--fastest", "9" * 25, "must be a whole number >= 0"),
        ("traffic", "--links", "0", "must be a whole number >= 1"),
        ("traffic", "--time-limit", "NaN", "must be a finite number > 0"),
        ("export", "--time-limit", "-inf", "must be a finite number > 0"),
        ("export", "--workers", "-3", "must be a whole number from 1 to 1024"),
        ("deploy", "--runs", "0", "must be a whole number >= 1"),
        ("deploy", "--seed", "nan", "must be a whole number from 0"),
        ("predict", "--grid", "0x5", "expected COLUMNSxROWS of whole numbers >= 1"),
        ("predict", "--grid", "11", "expected COLUMNSxROWS of whole numbers >= 1"),
        ("predict", "--parallel", "5000", "must be a whole number from 0 to 1024"),
        ("verify", "--timeout", "nan", "must be a finite number > 0"),
        ("verify", "--timeout", "0", "must be a finite number > 0"),
        ("sweep", "--workers", "0", "must be a whole number from 1 to"),
        ("sweep", "--workers", str(4 * (os.cpu_count() or 1) + 1), "must be a whole number from 1 to"),
        ("sweep", "--time-limit", "nan", "must be a finite number > 0"),
        ("serve", "--port", "-1", "must be a whole number from 0 to 65535"),
        ("serve", "--port", "65536", "must be a whole number from 0 to 65535"),
    ],
)
def test_a_bad_numeric_flag_is_named(capsys, tmp_path, monkeypatch, command, flag, value, expected):
    monkeypatch.chdir(tmp_path)
    err = _flag_error(capsys, [*COMMANDS[command], f"{flag}={value}"])
    assert f"argument {flag}: {value[:40]}" in err and expected in err, err
    assert list(tmp_path.iterdir()) == []  # refused before any work: nothing written


def test_every_numeric_flag_has_a_checking_type():
    """No numeric flag of any subcommand is a bare int or float (which take nan, inf and negatives)."""
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict))
    bare = [
        f"{name} {'/'.join(a.option_strings)}"
        for name, sub in subparsers.choices.items()
        for a in sub._actions
        if a.type in (int, float)
    ]
    assert bare == []


# ----------------------------------------------------------------------------------- hardware files


def _hw_with(tmp_path: Path, key: str, value: str) -> tuple[Path, int, int]:
    lines = (shipped_hardware_dir() / "wormhole_n150.yaml").read_text().splitlines()
    for i, line in enumerate(lines):
        m = re.match(rf"^(\s*{key}:\s+)(\S+)(.*)$", line)
        if m:
            lines[i] = m.group(1) + value + m.group(3)
            path = tmp_path / "chip.yaml"
            path.write_text("\n".join(lines) + "\n")
            return path, i + 1, len(m.group(1)) + 1
    raise AssertionError(key)


@pytest.mark.parametrize(
    "key, value", [("clock_ghz", "1e308"), ("clock_ghz", ".nan"), ("link_bytes_per_cycle", "-.inf"), ("channels", "-1")]
)
def test_a_bad_number_in_a_hardware_file_exits_2_at_its_line(capsys, tmp_path, key, value):
    path, line, column = _hw_with(tmp_path, key, value)
    out = tmp_path / "out.json"
    rc = cli.main(
        [
            "export",
            "gemm",
            "--hw",
            str(path),
            "--shape",
            "M=256,K=256,N=256",
            "--format",
            "json",
            "-o",
            str(out),
            "--time-limit",
            "5",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and f"{path.resolve()}:{line}:{column}: field " in err and key in err, err
    assert not out.exists()


def test_a_duplicate_key_or_a_binary_hardware_file_exits_2(capsys, tmp_path):
    text = (shipped_hardware_dir() / "wormhole_n150.yaml").read_text()
    dup = tmp_path / "dup.yaml"
    dup.write_text(text + "clock_ghz: 9.0\n")
    assert cli.main(["hw", "show", str(dup)]) == 2
    assert f"{dup.resolve()}:{len(text.splitlines()) + 1}:1: duplicate key 'clock_ghz'" in capsys.readouterr().err
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(bytes(range(256)) * 4)
    assert cli.main(["hw", "show", str(binary)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"loom-explorer: error: {binary.resolve()}: a binary file, not YAML text"


# ------------------------------------------------------------------------------------- output files


def _export(tmp_path: Path, output: str, *extra: str) -> list[str]:
    return [
        "export",
        "gemm",
        "--hw",
        "wormhole_n150",
        "--shape",
        "M=256,K=256,N=256",
        "--format",
        "json",
        "-o",
        output,
        "--time-limit",
        "5",
        "--candidate",
        "M@y,N@x|in0=dram,in1=dram",
        *extra,
    ]


def test_export_force_refuses_a_fifo_and_an_unwritable_target(capsys, tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    assert cli.main(_export(tmp_path, str(fifo), "--force")) == 2
    err = capsys.readouterr().err
    assert f"{fifo} is a FIFO" in err and "Traceback" not in err
    assert fifo.is_fifo()
    assert cli.main(_export(tmp_path, "/sys/loom_explorer_test.json")) == 2
    err = capsys.readouterr().err
    assert err.strip().startswith("loom-explorer: error: cannot write /sys/loom_explorer_test.json")
    assert len(err.strip().splitlines()) == 1


def test_an_unwritable_output_is_refused_before_the_solve(capsys, tmp_path):
    """The time limit would make a solve take 600 s: the refusal must come first."""
    os.mkfifo(tmp_path / "pipe.json")
    for argv in (
        _export(tmp_path, str(tmp_path / "pipe.json"), "--force"),
        ["traffic", *PROBLEM, "--npe", str(tmp_path / "no" / "npe.json")],
    ):
        argv = [a if a != "5" else "600" for a in argv]
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "is a FIFO" in err or "does not exist" in err, err
        assert "Traceback" not in err


def test_export_writes_with_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        out = tmp_path / "schedule.json"
        assert cli.main(_export(tmp_path, str(out))) == 0
    finally:
        os.umask(old)
    assert oct(out.stat().st_mode & 0o777) == oct(0o640)


@pytest.mark.parametrize(
    "text, token",
    [
        ('{"program_config": "MatmulMultiCoreReuseMultiCastProgramConfig", "in0_block_w": NaN}', "NaN"),
        ('{"program_config": "MatmulMultiCoreReuseMultiCastProgramConfig", "in0_block_w": -Infinity}', "-Infinity"),
        ('{"program_config": "MatmulMultiCoreReuseMultiCastProgramConfig", "in0_block_w": 1e400}', "1e400"),
    ],
)
def test_ttnn_config_with_a_non_finite_number(tmp_path, capsys, text, token):
    config = tmp_path / "config.json"
    config.write_text(text)
    err = _flag_error(capsys, ["predict", *PROBLEM, "--ttnn-config", str(config)])
    assert f"--ttnn-config {config}: {token} is not a finite number" in err, err
