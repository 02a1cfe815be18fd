"""TTNN export: which candidates map to which program config, with the schedule's values; L1 placements as
sharded memory configs; the others are refused with the reason; the file is valid Python and builds its
ttnn objects before opening a device; on a card (``device`` marker) it runs. The same files against the
real ttnn (up to opening a device) are checked in ``tests/ttnn_contract``."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys

import pytest

from loom_explorer.cli import main
from loom_explorer.cli.export import best_exportable
from loom_explorer.export.exporter import ExportError, SolvedSchedule
from loom_explorer.export.schedule_json import rebuild, schedule_document
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import DataFormat
from loom_explorer.problem import Placement, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttnn.exporter import ttnn_source
from loom_explorer.targets.ttnn.op import ttnn_equivalent, ttnn_memory

MAPPED = {
    "M@y,N@x|in0=mcast_x,in1=mcast_y": ("MatmulMultiCoreReuseMultiCastProgramConfig", {"transpose_mcast": False}),
    "N@y,M@x|in0=mcast_y,in1=mcast_x": ("MatmulMultiCoreReuseMultiCastProgramConfig", {"transpose_mcast": True}),
    "N@xy|in0=mcast_xy,in1=dram": ("MatmulMultiCoreReuseMultiCast1DProgramConfig", {"mcast_in0": True}),
    "M@xy|in0=dram,in1=mcast_xy": ("MatmulMultiCoreReuseMultiCast1DProgramConfig", {"mcast_in0": False}),
}


# candidate -> why TTNN has no program config for it
REFUSED = {
    "K@y,N@x|in0=dram,in1=dram": "split-K",
    "M@y,N@x|in0=dram,in1=mcast_y": "multicasts both inputs",
    "M@y,N@x|in0=dram,in1=dram": "multicasts both inputs",
    "M@xy|in0=dram,in1=dram": "1-D config",
}


@pytest.fixture(scope="module")
def gemm():
    """The problem's session and the results of the candidates the tests read (``MAPPED`` and ``REFUSED``)."""
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("gemm"), "M=1024,K=2048,N=768")
    session = Session(hw, problem)
    results = session.solve({}, SolveOptions(), candidates=[*MAPPED, *REFUSED])
    return hw, problem, session, {r.candidate_name: r for r in results}


def _file(hw, problem, result) -> str:
    doc = schedule_document(hw, "wormhole_n150", problem.program.name, problem, result, SolveOptions())
    return ttnn_source(rebuild(doc), doc)


@pytest.mark.parametrize("candidate", sorted(MAPPED))
def test_mapped_candidates_carry_the_schedule_values(gemm, candidate: str) -> None:
    hw, problem, session, results = gemm
    values = results[candidate].solution.values()
    name, args, notes = ttnn_equivalent(session.schedule(candidate), values)
    expected_name, flags = MAPPED[candidate]
    assert name == expected_name
    assert args["compute_with_storage_grid_size"] == [values["grid_x"], values["grid_y"]]
    for key in (
        "in0_block_w",
        "out_subblock_h",
        "out_subblock_w",
        "out_block_h",
        "out_block_w",
        "per_core_M",
        "per_core_N",
    ):
        assert args[key] == values[key], key
    assert {k: args[k] for k in flags} == flags
    depths_differ = {values["in0_buffer_depth"], values["in1_buffer_depth"]} - {
        1 if values["per_core_K"] == values["in0_block_w"] else 2
    }
    assert bool(notes) == bool(depths_differ)
    source = _file(hw, problem, results[candidate])
    tree = ast.parse(source)
    config = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "PROGRAM_CONFIG")  # type: ignore[attr-defined]
    assert ast.literal_eval(config) == args
    lint = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "-"],
        input=source,
        check=False,
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout


@pytest.mark.parametrize("candidate,why", list(REFUSED.items()))
def test_other_candidates_are_refused_with_the_reason(gemm, candidate: str, why: str) -> None:
    _, _, session, results = gemm
    with pytest.raises(ExportError, match=why):
        ttnn_equivalent(session.schedule(candidate), results[candidate].solution.values())


def test_sdpa_config_for_the_flattened_attention_candidate() -> None:
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("flash_attention"), "B=1,H=4,Sq=1024,Skv=1024,D=64", options={"causal"})
    session = Session(hw, problem)
    for r in session.solve({}, SolveOptions()):
        if r.solution is None:
            continue
        schedule = session.schedule(r.candidate_name)
        if schedule.candidate.flattened and "mcast" not in r.candidate_name:
            name, args, _ = ttnn_equivalent(schedule, r.solution.values())
            assert name == "SDPAProgramConfig"
            assert (args["q_chunk_size"], args["k_chunk_size"]) == (
                r.solution.values()["q_chunk_size"],
                r.solution.values()["k_chunk_size"],
            )
            assert "CAUSAL = True" in _file(hw, problem, r)
        else:
            with pytest.raises(ExportError, match="SDPA"):
                ttnn_equivalent(schedule, r.solution.values())


def test_export_picks_the_best_candidate_ttnn_can_run(tmp_path, capsys) -> None:
    out = tmp_path / "mm_ttnn.py"
    # a tall-K shape whose best schedules split K, which TTNN cannot
    code = main(
        ["export", "gemm", "--hw", "wormhole_n150", "--shape", "M=64,K=16384,N=64", "--format", "ttnn", "-o", str(out)]
    )
    err = capsys.readouterr().err
    assert code == 0 and out.is_file()
    assert "the best candidate with a TTNN program config; better ones have none" in err and "split-K" in err
    text = out.read_text()
    assert "PROGRAM_CONFIG_CLASS" in text and "K@" not in text.split("LOOM_SCHEDULE")[0]


@pytest.mark.device
@pytest.mark.skipif(importlib.util.find_spec("ttnn") is None, reason="needs ttnn and a Tenstorrent card")
def test_the_exported_file_runs_on_a_card(gemm, tmp_path) -> None:
    hw, problem, _, results = gemm
    path = tmp_path / "mm_ttnn.py"
    path.write_text(_file(hw, problem, results["N@y,M@x|in0=mcast_y,in1=mcast_x"]))
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "LOOM_RESULT" in run.stdout


def _solved(placements: dict[str, Placement], candidate: str):
    """The problem with these placements, its session and ``candidate``'s result (by name)."""
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("gemm"), "M=1024,K=2048,N=768", placements=placements)
    session = Session(hw, problem)
    results = session.solve({}, SolveOptions(), candidates=[candidate])
    return hw, problem, session, {r.candidate_name: r for r in results if r.solution}


@pytest.mark.parametrize(
    "placements,candidate,expected",
    [
        # (tensor, layout, shard rows and columns in tiles as a function of the values, cores)
        (
            {"in0": Placement.l1_block, "out": Placement.l1_block},
            "M@y,N@x|in0=mcast_x,in1=mcast_y",
            {
                "in0": (
                    "BLOCK_SHARDED",
                    lambda v: (v["per_core_M"], -(-64 // v["grid_x"])),
                    lambda v: v["grid_x"] * v["grid_y"],
                ),
                "out": (
                    "BLOCK_SHARDED",
                    lambda v: (v["per_core_M"], v["per_core_N"]),
                    lambda v: v["grid_x"] * v["grid_y"],
                ),
            },
        ),
        (
            {"in0": Placement.l1_height, "out": Placement.l1_height},
            "M@xy|in0=local,in1=mcast_xy",
            {
                "in0": ("HEIGHT_SHARDED", lambda v: (v["per_core_M"], 64), lambda v: -(-32 // v["per_core_M"])),
                "out": ("HEIGHT_SHARDED", lambda v: (v["per_core_M"], 24), lambda v: -(-32 // v["per_core_M"])),
            },
        ),
        (
            {"out": Placement.l1_width},
            "N@xy|in0=mcast_xy,in1=dram",
            {"out": ("WIDTH_SHARDED", lambda v: (32, v["per_core_N"]), lambda v: -(-24 // v["per_core_N"]))},
        ),
    ],
)
def test_l1_placements_become_sharded_memory_configs(placements, candidate, expected) -> None:
    hw, problem, session, results = _solved(placements, candidate)
    values = results[candidate].solution.values()
    memory = ttnn_memory(session.schedule(candidate), values)
    assert {t for t, m in memory.items() if m == "DRAM"} == {"in0", "in1", "out"} - set(expected)
    for tensor, (layout, shard_tiles, cores) in expected.items():
        spec: dict = memory[tensor]  # type: ignore[assignment]
        assert spec["memory_layout"] == layout and spec["buffer_type"] == "L1", tensor
        assert spec["shard_shape"] == [32 * x for x in shard_tiles(values)], tensor
        count = sum((b[0] - a[0] + 1) * (b[1] - a[1] + 1) for a, b in spec["core_ranges"])
        assert count == cores(values), tensor
    source = _file(hw, problem, results[candidate])
    assert (
        ast.literal_eval(
            next(n.value for n in ast.parse(source).body if isinstance(n, ast.Assign) and n.targets[0].id == "MEMORY")  # type: ignore[attr-defined]
        )
        == memory
    )
    assert "L1-sharded operands (as the schedule places them)" in source
    lint = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "-"],
        input=source,
        check=False,
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout


@pytest.mark.parametrize(
    "placements,candidate,why",
    [
        ({"in1": Placement.l1_width}, "N@xy|in0=mcast_xy,in1=local", "in1=l1_width: TTNN's multicast matmuls read in1"),
        ({"in0": Placement.l1}, "M@y,N@x|in0=mcast_x,in1=mcast_y", "in0=l1: a what-if placement"),
    ],
)
def test_placements_ttnn_cannot_realise_are_refused(placements, candidate, why) -> None:
    _, _, session, results = _solved(placements, candidate)
    with pytest.raises(ExportError, match=why):
        ttnn_equivalent(session.schedule(candidate), results[candidate].solution.values())


def test_fp32_attention_is_refused() -> None:
    """SDPA takes q, k and v in bf16, bfp8_b or bfp4_b (attention with L1 operands never gets this far: the
    attention model itself reads and writes DRAM-interleaved tensors only)."""
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("flash_attention"), "B=1,H=2,Sq=256,Skv=256,D=64", DataFormat.float32)
    session = Session(hw, problem)
    results = session.solve({}, SolveOptions())
    flat = [r for r in results if r.solution and r.candidate_name.startswith("H*Sq@xy")]
    assert flat
    with pytest.raises(ExportError, match="SDPA takes q, k and v in bfloat16, bfloat8_b, bfloat4_b only; q is float32"):
        ttnn_equivalent(session.schedule(flat[0].candidate_name), flat[0].solution.values())
    # export's refusal gives that reason, which holds for every candidate, and no other (a 2-D candidate's
    # split, which SDPA has not either, is beside the point)
    solved = [
        SolvedSchedule(session.schedule(r.candidate_name), r, "wormhole_n150", "flash_attention", SolveOptions())
        for r in results
        if r.solution
    ]
    assert any(not s.schedule.candidate.flattened for s in solved)
    with pytest.raises(ExportError) as refused:
        best_exportable(solved, "ttnn")
    assert str(refused.value) == (
        "no candidate with a schedule has a TTNN program config: TTNN's SDPA takes q, k "
        "and v in bfloat16, bfloat8_b, bfloat4_b only; q is float32 (the op refuses it "
        "on the card)"
    )


def test_the_file_builds_every_ttnn_object_before_opening_the_device(gemm) -> None:
    hw, problem, _, results = gemm
    tree = ast.parse(_file(hw, problem, results["M@y,N@x|in0=mcast_x,in1=mcast_y"]))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"build", "host_inputs", "upload", "op", "expected", "main"} <= set(functions)
    calls = [ast.unparse(n.func) for n in ast.walk(functions["main"]) if isinstance(n, ast.Call)]
    assert calls.index("ttnn.open_device") > max(calls.index("build"), calls.index("host_inputs"))


@pytest.mark.parametrize(
    ("kernel", "shape", "says"),
    [
        ("rmsnorm", "H=32,W=4096", "ttnn.rms_norm runs this schedule only on l1_width x and y"),
        ("binary", "H=64,W=64", "TTNN's element-wise ops split the tiles over the whole grid themselves"),
    ],
)
def test_interleaved_norms_and_element_wise_ops_say_why_no_ttnn_config(
    tmp_path,
    capsys,
    kernel: str,
    shape: str,
    says: str,
) -> None:
    out = tmp_path / "ttnn.py"
    assert main(["export", kernel, "--hw", "wormhole_n150", "--shape", shape, "--format", "ttnn", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert says in err and "predict --ttnn-default" in err
    assert not out.exists()
