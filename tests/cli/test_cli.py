"""The ``loom-explorer`` command line: listings, the JSON machine contract, exit codes and messages.

Exit codes: 0 when some candidate has a schedule, 3 when none has, 2 for bad input (with a message on
stderr that names the culprit and no traceback). Most runs call ``cli.main`` in-process; a few run the
installed console script in a subprocess.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys

import pytest
from loom_helpers import STATUSES
from waits import WAIT_S

from loom_explorer import cli
from loom_explorer.hardware import list_hardware, load_hardware
from loom_explorer.model.expr import evaluate
from loom_explorer.problem import make_problem
from loom_explorer.program import list_kernels, load_program
from loom_explorer.solve.solver import Session
from loom_explorer.validate import referee

CANDIDATE_KEYS = {
    "name",
    "description",
    "status",
    "latency_cycles",
    "latency_us",
    "tflops",
    "roofline_pct",
    "params",
    "breakdown",
    "l1_bytes",
    "solve_seconds",
    "conflict",
}
TOP_KEYS = {"schema_version", "hardware", "kernel", "shape", "dtype", "fidelity", "candidates"}


def run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------------------------------- listings


def test_hw_list(capsys):
    assert cli.main(["hw", "list"]) == 0
    out = capsys.readouterr().out
    for name in list_hardware():
        assert name in out
    assert "8x8" in out  # the n150's grid


def test_hw_show_json_round_trips(capsys):
    assert cli.main(["hw", "show", "wormhole_n150", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == load_hardware("wormhole_n150").model_dump(mode="json")


def test_hw_show_text_and_user_file(capsys, tiny_hw_path):
    assert cli.main(["hw", "show", str(tiny_hw_path)]) == 0
    out = capsys.readouterr().out
    assert "tiny_4x4" in out and "grid" in out


def test_hw_show_without_name(capsys):
    assert cli.main(["hw", "show"]) == 2
    assert "name" in capsys.readouterr().err


def test_kernels_list(capsys):
    assert cli.main(["kernels", "list"]) == 0
    out = capsys.readouterr().out
    for name in list_kernels():
        assert name in out
    assert {"gemm", "batched_gemm"} <= set(list_kernels())
    assert "K (reduction)" in out


# ----------------------------------------------------------------------------------- machine contract


@pytest.fixture(scope="module")
def contract():
    argv = ["solve", "gemm", "--hw", "wormhole_n150", "--shape", "M=256,K=256,N=256", "--json"]
    code, out, err = run_main(argv)
    assert code == 0, err
    return json.loads(out)


def test_solve_json_top_level(contract):
    assert set(contract) >= TOP_KEYS
    assert contract["schema_version"] == 1
    assert contract["hardware"] == "wormhole_n150"
    assert contract["kernel"] == "gemm"
    assert contract["shape"] == {"M": 256, "K": 256, "N": 256}
    assert contract["dtype"] == "bfloat16" and contract["fidelity"] == "hifi2"
    assert len(contract["candidates"]) == 20


def test_solve_json_candidates(contract):
    hw = load_hardware("wormhole_n150")
    session = Session(hw, make_problem(load_program("gemm"), "M=256,K=256,N=256"))  # schedules only
    names = [c["name"] for c in contract["candidates"]]
    assert len(set(names)) == len(names) == len(session.schedules)
    for c in contract["candidates"]:
        assert set(c) >= CANDIDATE_KEYS, CANDIDATE_KEYS - set(c)
        assert c["status"] in STATUSES
        assert c["description"]
        assert c["solve_seconds"] >= 0
        if c["status"] not in ("optimal", "feasible"):
            continue
        assert c["conflict"] is None
        assert sum(c["breakdown"].values()) == c["latency_cycles"]
        assert c["latency_us"] == pytest.approx(hw.cycles_to_us(c["latency_cycles"]), abs=1e-3)
        assert c["tflops"] > 0 and 0 < c["roofline_pct"] <= 100
        # the referee, on its own, agrees with every number the CLI printed
        schedule = session.schedule(c["name"])
        verdict = referee(schedule, c["params"])
        assert verdict.legal, verdict.violations
        assert verdict.solution.latency_cycles == c["latency_cycles"]
        assert dict(verdict.solution.breakdown) == c["breakdown"]
        assert verdict.solution.l1_bytes == c["l1_bytes"] <= hw.l1.usable_bytes
        assert c["latency_cycles"] >= schedule.ideal_cycles
        assert c["latency_cycles"] >= evaluate(schedule.latency_lower_bound, c["params"])
        flops = 2 * 256**3
        assert c["tflops"] == pytest.approx(flops / (c["latency_us"] * 1e-6) / 1e12, rel=1e-2)


def test_solve_json_sorted_best_first(contract):
    cands = contract["candidates"]
    feasible = [c for c in cands if c["status"] in ("optimal", "feasible")]
    assert feasible and cands[: len(feasible)] == feasible
    lat = [c["latency_cycles"] for c in feasible]
    assert lat == sorted(lat)


def test_solve_table(tiny_hw_path, capsys):
    code = cli.main(["solve", "gemm", "--hw", str(tiny_hw_path), "--shape", "M=64,K=64,N=64", "--top", "3"])
    assert code == 0
    out = capsys.readouterr().out
    assert "best:" in out and "latency breakdown" in out
    assert sum(1 for line in out.splitlines() if "|in0=" in line and "optimal" in line) == 3


def test_alternatives(tiny_hw_path):
    names = ["M@y,N@x|in0=dram,in1=dram", "N@xy|in0=mcast_xy,in1=dram"]
    argv = [
        "solve",
        "gemm",
        "--hw",
        str(tiny_hw_path),
        "--shape",
        "M=128,K=96,N=160",
        "--alternatives",
        "3",
        "--json",
    ] + [a for n in names for a in ("--candidate", n)]
    code, out, err = run_main(argv)
    assert code == 0, err
    data = json.loads(out)
    assert {c["name"] for c in data["candidates"]} == set(names)
    for c in data["candidates"]:
        alts = c["alternatives"]
        assert len(alts) == 2
        params = [json.dumps(c["params"], sort_keys=True)] + [json.dumps(a["params"], sort_keys=True) for a in alts]
        assert len(set(params)) == 3, "alternatives must be distinct schedules"
        for a in alts:
            assert a["latency_cycles"] >= c["latency_cycles"]
            assert sum(a["breakdown"].values()) == a["latency_cycles"]


# ------------------------------------------------------------------------------------------ exit codes


def test_exit_3_when_pins_conflict_everywhere(tiny_hw_path):
    """out_block_h = in0_block_w = 20 tiles of fp32: the in0 block alone is 1.6 MB, over L1 everywhere."""
    argv = [
        "solve",
        "gemm",
        "--hw",
        str(tiny_hw_path),
        "--shape",
        "M=640,K=640,N=64",
        "--dtype",
        "fp32",
        "--pin",
        "out_block_h=20",
        "--pin",
        "in0_block_w=20",
        "--json",
    ]
    code, out, err = run_main(argv)
    assert code == 3, err
    data = json.loads(out)
    assert len(data["candidates"]) == 20
    for c in data["candidates"]:
        assert c["status"] == "conflict"
        assert c["latency_cycles"] is None
        conflict = c["conflict"]
        assert set(conflict) >= {"pins", "constraints", "message"}
        assert conflict["pins"] and set(conflict["pins"].items()) <= {("out_block_h", 20), ("in0_block_w", 20)}
        assert conflict["constraints"] and conflict["message"]
        if "K@" not in c["name"]:
            # without split-K the only way out would be a smaller block: L1 is the whole story
            assert conflict["pins"] == {"out_block_h": 20, "in0_block_w": 20}
            assert conflict["constraints"] == ["l1_capacity"]
            assert "1,395,424" in conflict["message"] or "1395424" in conflict["message"]


@pytest.mark.parametrize(
    "extra, culprit",
    [
        (["--hw", "no_such_chip"], "no_such_chip"),
        (["--shape", "M=256,K=256"], "N"),  # missing key
        (["--shape", "M=256,K=abc,N=256"], "K"),  # not an integer
        (["--shape", "M=256,K=256,N=256,Q=3"], "Q"),  # unknown key
        (["--shape", "M=256,K=0,N=256"], "K"),  # not positive
        (["--pin", "warp_count=2"], "warp_count"),  # unknown pin
        (["--pin", "grid_x=99"], "grid_x"),  # outside its domain
        (["--pin", "grid_x"], "grid_x"),  # not NAME=VALUE
        (["--memory", "in0=ssd"], "ssd"),  # bad placement
        (["--memory", "weights=l1"], "weights"),  # unknown tensor
        (["--memory", "in0"], "in0"),  # not TENSOR=VALUE
        (["--format", "in1=bfp3"], "bfp3"),
        (["--activation", "swish"], "swish"),
        (["--candidate", "Q@xy|in0=dram"], "Q@xy"),
        (["--alternatives", "0"], "alternatives"),
        (["--fastest", "-1"], "fastest"),
    ],
)
def test_exit_2_names_the_culprit(tiny_hw_path, extra, culprit):
    argv = ["solve", "gemm", "--hw", str(tiny_hw_path), "--shape", "M=256,K=256,N=256"]
    # later options override earlier ones (--hw, --shape)
    code, out, err = run_main(argv + extra)
    assert code == 2, (code, err)
    assert culprit in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "extra, culprit",
    [
        (["--dtype", "bf17"], "bf17"),
        (["--fidelity", "hifi9"], "hifi9"),
    ],
)
def test_bad_dtype_or_fidelity_exits_2(tiny_hw_path, extra, culprit):
    code, _, err = run_main(["solve", "gemm", "--hw", str(tiny_hw_path), "--shape", "M=64,K=64,N=64"] + extra)
    assert code == 2 and culprit in err


def test_malformed_yaml_path(tmp_path):
    bad = tmp_path / "broken_chip.yaml"
    bad.write_text("grid: [1, 2\ndram: {channels: 12\n")
    code, _, err = run_main(["solve", "gemm", "--hw", str(bad), "--shape", "M=64,K=64,N=64"])
    assert code == 2 and "broken_chip.yaml" in err and "Traceback" not in err
    code, _, err = run_main(["hw", "show", str(bad)])
    assert code == 2 and "broken_chip.yaml" in err


def test_missing_yaml_path(tmp_path):
    code, _, err = run_main(["hw", "show", str(tmp_path / "absent.yaml")])
    assert code == 2 and "absent.yaml" in err


USER_KERNEL = """
from loom_explorer.program import Dim, Matmul, Tensor, TileProgram

PROGRAM = TileProgram(
    name="transposed", description="y[N, M] = w[N, K] @ x[K, M]",
    dims=(Dim("M", "parallel"), Dim("N", "parallel"), Dim("K", "reduction")),
    tensors=(Tensor("w", ("N", "K"), "input"), Tensor("x", ("K", "M"), "input"), Tensor("y", ("N", "M"), "output")),
    ops=(Matmul("w", "x", "y"),),
)
"""


def test_user_kernel_file(tmp_path, tiny_hw_path):
    path = tmp_path / "my_kernel.py"
    path.write_text(USER_KERNEL)
    code, out, err = run_main(
        ["solve", str(path), "--hw", str(tiny_hw_path), "--shape", "M=64,K=64,N=96", "--memory", "x=l1", "--json"]
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["kernel"] == "transposed" and data["candidates"]
    assert all("x=dram" not in c["name"] for c in data["candidates"])


@pytest.mark.parametrize(
    "text, culprit",
    [
        ("X = 1\n", "PROGRAM"),
        ("raise RuntimeError('boom')\n", "boom"),
        (
            USER_KERNEL.replace('ops=(Matmul("w", "x", "y"),)', 'ops=(Matmul("w", "x", "y"), Matmul("w", "x", "y"))'),
            "Matmul",
        ),
    ],
)
def test_bad_user_kernel_file(tmp_path, tiny_hw_path, text, culprit):
    path = tmp_path / "bad_kernel.py"
    path.write_text(text)
    code, _, err = run_main(["solve", str(path), "--hw", str(tiny_hw_path), "--shape", "M=64,K=64,N=64"])
    assert code == 2 and culprit in err and "Traceback" not in err


def test_bias_on_a_kernel_without_one(tiny_hw_path):
    code, _, err = run_main(
        ["solve", "batched_gemm", "--hw", str(tiny_hw_path), "--shape", "B=2,M=64,K=64,N=64", "--bias"]
    )
    assert code == 2 and "bias" in err


def test_unknown_kernel():
    code, _, err = run_main(["solve", "conv3d", "--hw", "wormhole_n150", "--shape", "M=64,K=64,N=64"])
    assert code == 2 and "conv3d" in err


# ------------------------------------------------------------------------------- the console script


def _console_script() -> list[str]:
    exe = shutil.which("loom-explorer")
    return [exe] if exe else [sys.executable, "-m", "loom_explorer.cli"]


def test_console_script_solves(tiny_hw_path):
    proc = subprocess.run(
        _console_script()
        + ["solve", "gemm", "--hw", str(tiny_hw_path), "--shape", "M=64,K=64,N=64", "--json", "--top", "2"],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["hardware"] == "tiny_4x4" and len(data["candidates"]) == 2
    assert all(c["status"] == "optimal" for c in data["candidates"])


def test_console_script_bad_input(tiny_hw_path):
    proc = subprocess.run(
        _console_script() + ["solve", "gemm", "--hw", "no_such_chip", "--shape", "M=64,K=64,N=64"],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert proc.returncode == 2
    assert "no_such_chip" in proc.stderr and "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------------------ attention


def test_solve_flash_attention_causal_json(tiny_hw_path):
    argv = [
        "solve",
        "flash_attention",
        "--hw",
        str(tiny_hw_path),
        "--shape",
        "B=2,H=2,Sq=256,Skv=256,D=64",
        "--causal",
        "--json",
    ]
    code, out, err = run_main(argv)
    assert code == 0, err
    data = json.loads(out)
    assert data["kernel"] == "flash_attention" and data["options"] == ["causal"]
    assert data["shape"] == {"B": 2, "H": 2, "Hkv": 2, "Sq": 256, "Skv": 256, "D": 64}
    best = data["candidates"][0]
    assert best["status"] == "optimal"
    assert {"q_chunk_size", "k_chunk_size", "qk_subblock_h", "out_subblock_w"} <= set(best["params"])
    assert best["params"]["q_chunk_size"] % 32 == 0 and best["params"]["k_chunk_size"] % 32 == 0
    assert list(best["breakdown"]) == [
        "launch",
        "fill",
        "q_load",
        "qk_matmul",
        "softmax",
        "pv_matmul",
        "kv_streaming",
        "normalize",
        "write_back",
    ]
    assert sum(best["breakdown"].values()) == best["latency_cycles"]
    assert any(c["name"].endswith("|balanced") for c in data["candidates"])


def test_solve_flash_attention_table(tiny_hw_path):
    code, out, err = run_main(
        [
            "solve",
            "flash_attention",
            "--hw",
            str(tiny_hw_path),
            "--shape",
            "B=1,H=4,Hkv=2,Sq=128,Skv=128,D=64",
            "--top",
            "3",
        ]
    )
    assert code == 0, err
    assert "Hkv=2" in out and "q_chunk_size" in out and "softmax" in out


@pytest.mark.parametrize(
    "kernel, shape, extra, culprit",
    [
        ("gemm", "M=64,K=64,N=64", ["--causal"], "causal"),  # gemm has no causal option
        ("flash_attention", "B=1,H=2,Sq=256,Skv=128,D=64", ["--causal"], "Sq == Skv"),
        ("flash_attention", "B=1,H=6,Hkv=4,Sq=128,Skv=128,D=64", [], "Hkv=4"),  # Hkv must divide H
        ("flash_attention", "B=1,H=2,Sq=128,Skv=128", [], "D"),  # missing key
    ],
)
def test_attention_bad_input_exits_2(tiny_hw_path, kernel, shape, extra, culprit):
    code, _, err = run_main(["solve", kernel, "--hw", str(tiny_hw_path), "--shape", shape] + extra)
    assert code == 2, err
    assert culprit in err and "Traceback" not in err


# ------------------------------------------------------------------------------------------ program options


def test_option_names_a_program_option_and_causal_is_its_shorthand(tiny_hw_path):
    """``--option causal`` and ``--causal`` build the same problem: one solve JSON, option for option."""
    shape = ["--hw", str(tiny_hw_path), "--shape", "B=1,H=2,Sq=128,Skv=128,D=64", "--json", "--fastest", "1"]
    outputs = []
    for flags in (["--option", "causal"], ["--causal"], ["--causal", "--option", "causal"]):
        code, out, err = run_main(["solve", "flash_attention", *shape, *flags])
        assert code == 0, err
        data = json.loads(out)
        assert data["options"] == ["causal"]
        outputs.append([(c["name"], c["status"], c.get("latency_cycles")) for c in data["candidates"]])
    assert outputs[0] == outputs[1] == outputs[2]


@pytest.mark.parametrize(
    "kernel, shape, extra, message",
    [
        (
            "gemm",
            "M=64,K=64,N=64",
            ["--option", "causal"],
            "--option causal (--causal): kernel gemm has no option 'causal' (its options: none)",
        ),
        (
            "flash_attention",
            "B=1,H=2,Sq=128,Skv=128,D=64",
            ["--option", "window"],
            "--option window: kernel flash_attention has no option 'window' (its options: causal)",
        ),
        (
            "gemm",
            "M=64,K=64,N=64",
            ["--causal"],
            "--option causal (--causal): kernel gemm has no option 'causal' (its options: none)",
        ),
    ],
)
def test_an_option_the_kernel_lacks_is_one_line_naming_the_flag(tiny_hw_path, kernel, shape, extra, message):
    code, _, err = run_main(["solve", kernel, "--hw", str(tiny_hw_path), "--shape", shape, *extra])
    assert code == 2
    assert err.strip().splitlines() == [f"loom-explorer: error: {message}"]


def test_kernels_list_names_each_kernels_options(capsys):
    assert cli.main(["kernels", "list"]) == 0
    out = capsys.readouterr().out
    attention = out[out.index("flash_attention") :].splitlines()[:3]
    assert attention[2].split() == ["options:", "causal"]
