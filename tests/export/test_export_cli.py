"""``loom-explorer export`` and ``loom-explorer verify``: the files they write and read, exit codes, messages.

Exit codes: 0 ok, 1 when ``verify`` finds a numerical or traffic mismatch, 2 for bad input (with a message
naming the culprit and no traceback), 3 when no candidate has a schedule. Runs ``cli.main`` in-process
(one run goes through the console script). Two runs of tt-lang-sim (~3 s each): a fresh TT-Lang export,
which must pass, and a copy whose output block was edited, which must fail with the differing counts.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from waits import WAIT_S

from loom_explorer import cli
from loom_explorer.deploy.verify import PCC_MIN, embedded_document
from loom_explorer.export.npe_workload import npe_workload
from loom_explorer.export.schedule_json import load_schedule_document, rebuild
from loom_explorer.traffic import schedule_transfers

HW = "wormhole_n150"
SHAPE = "M=256,K=256,N=256"
RAGGED = "M=320,K=256,N=192"  # 10 x 6 output tiles
DRAM = "M@y,N@x|in0=dram,in1=dram"  # not the best candidate at SHAPE; every core reads its own blocks


def run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def export(fmt, output, *extra, kernel="gemm", shape=SHAPE):
    return run_main(["export", kernel, "--hw", HW, "--shape", shape, "--format", fmt, "-o", output, *extra])


def leftovers(folder: Path) -> list[str]:
    """Temporary files write_new would leave behind after a failure."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp"))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("export_cli")


@pytest.fixture(scope="module")
def solved_best():
    """``solve --json``'s best candidate (one CP-SAT worker: deterministic, so export must agree exactly)."""
    code, out, err = run_main(["solve", "gemm", "--hw", HW, "--shape", SHAPE, "--json", "--top", "1", "--workers", "1"])
    assert code == 0, err
    (best,) = json.loads(out)["candidates"]
    assert best["status"] == "optimal"
    return best


@pytest.fixture(scope="module")
def best_export(workdir):
    path = workdir / "best.json"
    code, out, err = export("json", path, "--workers", "1")
    assert code == 0, err
    return path, out, err


# ------------------------------------------------------------------------------------ --format json


def test_export_json_is_the_solvers_best(best_export, solved_best):
    path, out, err = best_export
    doc = load_schedule_document(path)
    assert doc.candidate == solved_best["name"]
    assert doc.params == solved_best["params"]
    assert doc.prediction.latency_cycles == solved_best["latency_cycles"]
    assert doc.prediction.breakdown == solved_best["breakdown"]
    assert doc.prediction.l1_bytes == solved_best["l1_bytes"]
    assert doc.status == solved_best["status"]
    assert doc.pins == {}
    assert doc.hardware.source == HW and doc.problem.kernel == "gemm"
    assert doc.problem.shape == {"M": 256, "K": 256, "N": 256}
    assert doc.solver.workers_per_model == 1 and doc.solver.noc_bound is True
    assert doc.solver.time_limit_seconds == 30.0 and doc.solver.seed == 0
    # the file is the whole document; the one-line summary goes to stderr
    assert json.loads(path.read_text())["candidate"] == solved_best["name"]
    assert out == ""
    assert str(path) in err and solved_best["name"] in err and f"{solved_best['latency_us']:,.2f} us" in err
    assert rebuild(doc).solution.latency_cycles == solved_best["latency_cycles"]


@pytest.fixture(scope="module")
def dram_json(workdir) -> Path:
    path = workdir / "dram.json"
    code, _, err = export("json", path, "--candidate", DRAM)
    assert code == 0, err
    return path


def test_candidate_is_honoured(dram_json, solved_best):
    assert solved_best["name"] != DRAM
    doc = load_schedule_document(dram_json)
    assert doc.candidate == DRAM and doc.pins == {}
    assert doc.prediction.latency_cycles > solved_best["latency_cycles"]
    assert rebuild(doc).schedule.candidate.name == DRAM


def test_pins_are_honoured(workdir, solved_best):
    assert solved_best["params"]["in0_block_w"] != 2 and solved_best["params"]["grid_x"] != 4
    path = workdir / "pinned.json"
    code, _, err = export("json", path, "--pin", "in0_block_w=2", "--pin", "grid_x=4")
    assert code == 0, err
    doc = load_schedule_document(path)
    assert doc.pins == {"in0_block_w": 2, "grid_x": 4}
    assert doc.params["in0_block_w"] == 2 and doc.params["grid_x"] == 4
    assert doc.prediction.latency_cycles >= solved_best["latency_cycles"]
    assert rebuild(doc).solution.values() == doc.params


def test_tensor_format_and_no_noc_bound_are_recorded(workdir):
    path = workdir / "bfp8.json"
    code, _, err = export("json", path, "--candidate", DRAM, "--tensor-format", "in1=bfp8_b", "--no-noc-bound")
    assert code == 0, err
    doc = load_schedule_document(path)
    assert doc.problem.formats["in1"] == "bfloat8_b" and doc.problem.formats["in0"] == "bfloat16"
    assert doc.solver.noc_bound is False
    assert rebuild(doc).solution.latency_cycles == doc.prediction.latency_cycles


# ------------------------------------------------------------------------------------- output files


def test_existing_file_is_left_untouched(workdir):
    path = workdir / "existing.json"
    path.write_text("precious contents\n")
    code, _, err = export("json", path, "--candidate", DRAM)
    assert code == 2, err
    assert str(path) in err and "--force" in err, err
    assert "Traceback" not in err
    assert path.read_text() == "precious contents\n"
    assert leftovers(workdir) == []
    # --force overwrites it with the document
    code, _, err = export("json", path, "--candidate", DRAM, "--force")
    assert code == 0, err
    assert load_schedule_document(path).candidate == DRAM
    assert leftovers(workdir) == []


def test_missing_folder(workdir):
    path = workdir / "no_such_folder" / "schedule.json"
    code, _, err = export("json", path, "--candidate", DRAM)
    assert code == 2
    assert f"folder {path.parent} " in err, err
    assert not path.parent.exists()


def test_output_is_a_folder(workdir):
    code, _, err = export("json", workdir, "--candidate", DRAM)
    assert code == 2
    assert str(workdir) in err and "folder" in err, err


def test_unknown_candidate(workdir):
    path = workdir / "unknown.json"
    code, _, err = export("json", path, "--candidate", "Q@xy|in0=dram")
    assert code == 2
    assert "Q@xy|in0=dram" in err and "Traceback" not in err
    assert not path.exists()


def test_no_schedule_exits_3(workdir):
    path = workdir / "none.json"
    # an fp32 in0 block of 20 x 20 tiles alone is 1.6 MB: over L1
    code, _, err = export(
        "json",
        path,
        "--candidate",
        DRAM,
        "--dtype",
        "fp32",
        "--pin",
        "out_block_h=20",
        "--pin",
        "in0_block_w=20",
        shape="M=640,K=640,N=64",
    )
    assert code == 3, err
    assert DRAM in err and "no schedule, so no export" in err, err
    assert not path.exists()


def test_npe_workload(workdir, dram_json):
    doc = load_schedule_document(dram_json)
    path = workdir / "dram_npe.json"
    # the same candidate at exactly the parameters of the JSON export
    pins = [a for k, v in doc.params.items() for a in ("--pin", f"{k}={v}")]
    code, _, err = export("npe", path, "--candidate", DRAM, *pins)
    assert code == 0, err
    data = json.loads(path.read_text())
    built = rebuild(doc)
    assert data == npe_workload(built.hardware, schedule_transfers(built.hardware, built.schedule, doc.params))
    assert data["hardware"] == HW
    transfers = data["phases"][0]["transfers"]
    assert transfers and all({"packet_size", "num_packets", "src_x", "src_y", "noc_type"} <= set(t) for t in transfers)
    assert not any("mcast_start_x" in t for t in transfers)  # dram,dram: nothing is multicast


# ---------------------------------------------------------------------------------- --format ttlang


def test_ttlang_of_a_2d_attention_layout_is_refused(workdir):
    path = workdir / "attention.py"
    code, _, err = export(
        "ttlang",
        path,
        "--causal",
        "--candidate",
        "H@y,Sq@x|q=dram,k=dram,v=dram",
        kernel="flash_attention",
        shape="B=1,H=2,Sq=512,Skv=512,D=64",
    )
    assert code == 2, err
    assert "flattened layout" in err and "H@y,Sq@x|q=dram,k=dram,v=dram is not" in err, err
    assert "Traceback" not in err
    assert not path.exists() and leftovers(workdir) == []


def test_ttlang_of_a_block_float_gemm_is_refused(workdir):
    path = workdir / "bfp8.py"
    code, _, err = export("ttlang", path, "--candidate", DRAM, "--tensor-format", "in1=bfp8_b")
    assert code == 2
    assert "bfloat16" in err and "bfloat8_b" in err, err
    assert not path.exists()


@pytest.fixture(scope="module")
def dram_kernel(workdir) -> Path:
    """A TT-Lang export of the dram,dram candidate of the ragged shape, output blocks 2 tiles wide."""
    path = workdir / "gemm_dram.py"
    code, _, err = export("ttlang", path, "--candidate", DRAM, "--pin", "out_block_w=2", shape=RAGGED)
    assert code == 0, err
    return path


def _constants(text: str) -> dict[str, int]:
    """The kernel file's schedule constants (``NAME, NAME = a, b`` lines)."""
    out: dict[str, int] = {}
    for names, values in re.findall(
        r"^([A-Z][A-Z_0-9]*(?:, [A-Z][A-Z_0-9]*)*) = (\d+(?:, \d+)*)\s*(?:#.*)?$", text, flags=re.MULTILINE
    ):
        out.update(zip(names.split(", "), map(int, values.split(", ")), strict=True))
    return out


def test_ttlang_passes_ruff(dram_kernel):
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", str(dram_kernel)],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ttlang_header_and_constants(dram_kernel):
    text = dram_kernel.read_text()
    header = text.split("\nimport ", 1)[0]
    doc = embedded_document(dram_kernel)
    assert doc.candidate == DRAM and doc.pins == {"out_block_w": 2}
    assert doc.problem.shape == {"M": 320, "N": 192, "K": 256}
    assert f"Candidate {DRAM}:" in header
    assert "Pins: out_block_w=2" in header
    assert f"Predicted latency: {doc.prediction.latency_cycles:,} cycles" in header
    assert len(doc.params) == 12
    for name, value in doc.params.items():
        found = re.search(rf"^#\s+{name}\s+=\s+{value}$", header, flags=re.MULTILINE)
        assert found, f"{name} = {value} not in the header"
    c = _constants(text)
    v = doc.params
    assert (c["GRID_X"], c["GRID_Y"]) == (v["grid_x"], v["grid_y"])
    assert (c["PER_CORE_M"], c["PER_CORE_N"], c["PER_CORE_K"]) == (v["per_core_M"], v["per_core_N"], v["per_core_K"])
    assert (c["OUT_BLOCK_H"], c["OUT_BLOCK_W"], c["IN0_BLOCK_W"]) == (
        v["out_block_h"],
        v["out_block_w"],
        v["in0_block_w"],
    )
    assert (c["M"], c["N"], c["K"]) == (320, 192, 256)
    assert c["CORES_ALONG_K"] == 1


@pytest.fixture(scope="module")
def fresh_verify(dram_kernel):
    code, out, err = run_main(["verify", dram_kernel, "--json"])
    return code, out, err


@pytest.mark.slow  # over 8 s: CI runs it, the quick tier does not
def test_verify_fresh_export(fresh_verify, dram_kernel):
    code, out, err = fresh_verify
    assert code == 0, out + err
    data = json.loads(out)
    assert {"pcc", "passed", "traffic", "candidate", "file"} <= set(data)
    assert data["passed"] is True and data["candidate"] == DRAM and data["file"] == str(dram_kernel)
    assert PCC_MIN <= data["pcc"] <= 1.0 + 1e-6
    traffic = data["traffic"]
    assert {"simulated", "predicted", "equal"} <= set(traffic)
    assert traffic["equal"] is True and traffic["differences"] == []
    assert traffic["simulated"] == traffic["predicted"]
    # every core reads its own blocks: in0 once per output block column, in1 once per block row
    v = embedded_document(dram_kernel).params
    cores = v["grid_x"] * v["grid_y"]
    pm, pn, pk = v["per_core_M"], v["per_core_N"], v["per_core_K"]
    assert traffic["predicted"]["dram_read_tiles"] == {
        "in0": cores * pm * pk * pn // v["out_block_w"],
        "in1": cores * pn * pk * pm // v["out_block_h"],
    }
    assert traffic["predicted"]["dram_written_tiles"] == {"out": cores * pm * pn}
    assert traffic["predicted"]["pipe_received_tiles"] == {}


def test_verify_names_a_tampered_constant_and_runs_nothing(dram_kernel, workdir):
    """Narrower output blocks would still compute the right product (moving more tiles): the file is no longer
    its schedule's kernel, and verify says which constant differs, with both values, before any run."""
    text = dram_kernel.read_text()
    c = _constants(text)
    old_w, per_core_n = c["OUT_BLOCK_W"], c["PER_CORE_N"]
    new_w = next((w for w in range(1, per_core_n + 1) if per_core_n % w == 0 and w != old_w), None)
    assert new_w is not None, f"PER_CORE_N = {per_core_n} has no other divisor than OUT_BLOCK_W = {old_w}"
    pattern = rf"^OUT_BLOCK_H, OUT_BLOCK_W = {c['OUT_BLOCK_H']}, {old_w}\b"
    tampered_text, n = re.subn(
        pattern, f"OUT_BLOCK_H, OUT_BLOCK_W = {c['OUT_BLOCK_H']}, {new_w}", text, flags=re.MULTILINE
    )
    assert n == 1
    tampered = workdir / "gemm_dram_tampered.py"
    tampered.write_text(tampered_text)

    code, out, err = run_main(["verify", tampered])
    assert code == 1, out + err
    assert f"candidate {DRAM}: FAILED, its constants are not its schedule's (not simulated, not compiled)" in out
    assert [line.strip() for line in out.splitlines() if line.strip().startswith("constant ")] == [
        f"constant OUT_BLOCK_W: {new_w} in the file, {old_w} in the schedule"
    ], out


def test_verify_tampered_schedule_exits_2(dram_kernel, workdir):
    """An edited LOOM_SCHEDULE is caught before the simulator runs."""
    doc = embedded_document(dram_kernel)
    true = doc.prediction.latency_cycles
    text, n = re.subn(rf'"latency_cycles": {true},', f'"latency_cycles": {true + 7},', dram_kernel.read_text())
    assert n == 1
    path = workdir / "gemm_bad_schedule.py"
    path.write_text(text)
    code, _, err = run_main(["verify", path])
    assert code == 2
    assert "prediction.latency_cycles" in err and f"{true + 7:,}" in err, err


@pytest.mark.parametrize(
    "contents, culprit",
    [
        ("print('a kernel without a schedule')\n", "no LOOM_SCHEDULE"),
        ("LOOM_SCHEDULE = 42\n", "no LOOM_SCHEDULE"),
        ("def broken(:\n", "not Python"),
        ('LOOM_SCHEDULE = r"""{"schema_version": 1"""\n', "not JSON"),
    ],
)
def test_verify_file_without_a_schedule(workdir, contents, culprit):
    path = workdir / "not_an_export.py"
    path.write_text(contents)
    code, _, err = run_main(["verify", path])
    assert code == 2, err
    assert str(path) in err and culprit in err, err
    assert "Traceback" not in err


def test_verify_missing_file_through_the_console_script(workdir):
    exe = shutil.which("loom-explorer")
    command = [exe] if exe else [sys.executable, "-m", "loom_explorer.cli"]
    path = workdir / "never_exported.py"
    proc = subprocess.run(command + ["verify", str(path)], capture_output=True, text=True, timeout=WAIT_S, check=False)
    assert proc.returncode == 2, proc.stderr
    assert str(path) in proc.stderr and "does not exist" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_verify_binary_file_exits_2(workdir):
    """Regression: a file that is not UTF-8 used to crash verify with a traceback and exit 1 (the
    'mismatch' code)."""
    path = workdir / "binary.py"
    path.write_bytes(b"\xff\xfe\x00\x81 not text")
    code, _, err = run_main(["verify", path])
    assert code == 2 and str(path) in err, err
    assert "Traceback" not in err


def test_ttlang_without_a_candidate_takes_the_best_one_it_can_write(workdir):
    """Causal attention whose best candidate is a 2-D layout: export writes the best flattened one and says
    which better candidate it could not write."""
    path = workdir / "causal.py"
    code, _, err = export("ttlang", path, "--causal", kernel="flash_attention", shape="B=1,H=2,Sq=256,Skv=256,D=64")
    assert code == 0, err
    assert "the best candidate with a TT-Lang export; better ones have none" in err and "flattened layout" in err
    assert "H*Sq@xy|q=dram,k=dram,v=dram|balanced" in path.read_text()
