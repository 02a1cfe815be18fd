"""The default ``export --format ttlang`` (no ``--candidate``: the best schedule the TT-Lang writer writes) of
every shipped kernel it writes, on ragged shapes, compiles with the real TT-Lang compiler and verifies in
tt-lang-sim: its constants are its schedule's, its result matches torch, and it moves exactly the model's
tiles (each core at its own work: causal tasks of different lengths, uneven runs of key chunks).

The shapes are the ones that broke: W = 2080 (65 tiles, split over cores only evenly), grouped causal
attention with Sq = Skv = 224 (7 tiles: whole key chunks, the last query chunk within the keys), and a long
ragged cache decoded with its key/value chunks split over cores (the partials' pipes). ``batched_gemm`` and
``linear_gelu`` are not written by TT-Lang export (batch dimensions), and are refused with the reason."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from loom_helpers import NEEDS_SIM

from loom_explorer.deploy.compiler import CompileReport, compile_files
from loom_explorer.deploy.verify import PCC_MIN, verify_kernel_file

pytestmark = NEEDS_SIM

# (kernel, hardware, shape, further flags)
CASES = (
    ("softmax", "wormhole_n150", "H=64,W=2080", ()),
    ("rmsnorm", "wormhole_n150", "H=64,W=2080", ()),
    ("layernorm", "wormhole_n150", "H=64,W=2080", ()),
    ("flash_attention", "wormhole_n300", "B=1,H=4,Hkv=2,Sq=224,Skv=224,D=64", ("--causal",)),
    ("flash_attention", "wormhole_n150", "B=1,H=8,Hkv=1,Sq=1,Skv=2500,D=64", ()),  # a decode step
    ("gemm", "wormhole_n150", "M=300,K=260,N=330", ()),
    ("binary", "wormhole_n150", "H=300,W=650", ()),
    ("swiglu", "wormhole_n150", "H=300,W=650", ()),
    ("unary", "wormhole_n150", "H=300,W=650", ("--activation", "gelu")),
)
IDS = [f"{k}-{s}{''.join(f)}" for k, _, s, f in CASES]


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loom_explorer.cli", *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "LOOM_EXPLORER_STORE": str(store)},
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory, toolchain) -> list[tuple[Path, str, CompileReport]]:
    """(file, export's stderr, the compiler's report) per case; every file compiled in one toolchain process."""
    out = tmp_path_factory.mktemp("ttlang_defaults")
    files = []
    for n, (kernel, hw, shape, flags) in enumerate(CASES):
        path = out / f"{kernel}_{n}.py"
        done = _cli(
            out / "store.sqlite",
            "export",
            kernel,
            "--hw",
            hw,
            "--shape",
            shape,
            *flags,
            "--format",
            "ttlang",
            "-o",
            str(path),
        )
        assert done.returncode == 0, done.stderr
        files.append((path, done.stderr))
    reports = compile_files([p for p, _ in files], toolchain)
    return [(path, err, report) for (path, err), report in zip(files, reports, strict=True)]


def _constant(text: str, name: str) -> int:
    found = re.search(rf"^{name} = (\d+)", text, flags=re.MULTILINE)
    assert found, name
    return int(found.group(1))


@pytest.mark.slow
@pytest.mark.toolchain
@pytest.mark.parametrize("case", range(len(CASES)), ids=IDS)
def test_the_default_export_compiles_and_verifies(exported, case: int, tmp_path) -> None:
    path, stderr, compiled = exported[case]
    kernel, _, _, flags = CASES[case]
    text = path.read_text()
    assert compiled.passed, f"{CASES[case]}: {compiled.message}"
    assert 0 < compiled.cb_l1_bytes <= compiled.l1_budget_bytes
    candidate = re.search(r"wrote .* \(ttlang\): (\S+), predicted", stderr)
    assert candidate, stderr
    if kernel in ("softmax", "rmsnorm", "layernorm"):  # the columns split over cores, evenly: no padded column
        assert "W@" in candidate.group(1) and _constant(text, "SPLIT") > 1, text[:2000]
        assert re.search(r"^ROWS_PAD, COLS_PAD = \d+, 2080\b", text, flags=re.MULTILINE), text[:2000]
    if kernel == "flash_attention" and not flags:  # flash-decoding, the key/value chunks split over cores
        assert candidate.group(1).endswith("|kv_split") and _constant(text, "KV_CORES") > 1
    report = verify_kernel_file(path, timeout_seconds=600, compile_it=False)  # compiled above, in one process
    assert report.constants_ok, report.constants
    assert report.pcc >= PCC_MIN, report.pcc
    assert report.traffic_equal, report.differences()  # every core at its own work
    assert report.passed, report.differences()
    assert "# Note:" not in text


@pytest.mark.slow  # each solves every candidate: 10-30 s
@pytest.mark.parametrize(
    "kernel,shape", [("batched_gemm", "B=2,M=300,K=260,N=330"), ("linear_gelu", "B=2,S=100,K=260,N=330")]
)
def test_a_kernel_tt_lang_does_not_write_is_refused_with_the_reason(tmp_path, kernel: str, shape: str) -> None:
    done = _cli(
        tmp_path / "store.sqlite",
        "export",
        kernel,
        "--hw",
        "wormhole_n150",
        "--shape",
        shape,
        "--format",
        "ttlang",
        "-o",
        str(tmp_path / "k.py"),
    )
    assert done.returncode == 2, done.stderr
    assert f"TT-Lang export covers plain GEMM (M, N, K) so far; {kernel} has batch dimensions B" in done.stderr
    assert not (tmp_path / "k.py").exists()
