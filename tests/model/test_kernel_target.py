"""Whose kernels run the schedule decides which circular buffers L1 holds (``Problem.target``): TTNN's op
kernels (the default; what the accuracy data measured) or the exported TT-Lang kernels, whose buffers the
TT-Lang compiler allocates (compared with the real compiler in tests/families/*/test_ttlang_compile*.py)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
from waits import WAIT_S

from loom_explorer.export.exporter import ExportError, SolvedSchedule
from loom_explorer.export.formats import export_text
from loom_explorer.export.schedule_json import ScheduleDocument, rebuild_own, schedule_document
from loom_explorer.hardware import load_hardware
from loom_explorer.model.build import build_schedule
from loom_explorer.model.expr import evaluate
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttlang.exporter import ttlang_l1_blocker

BIG = "M=4096,K=4096,N=4096"


@pytest.fixture(scope="module")
def solved():
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("gemm"), BIG)
    session = Session(hw, problem)
    best = session.solve({}, SolveOptions(), candidates=["M@y,N@x|in0=mcast_x,in1=mcast_y"])[0]
    return hw, problem, session.schedule(best.candidate_name), best


def test_the_tt_lang_kernels_hold_an_accumulator_ttnn_s_do_not(solved) -> None:
    hw, problem, schedule, best = solved
    values = best.solution.values()
    ttnn = {b.name: evaluate(b.bytes_expr, values) for b in schedule.l1_buffers}
    ttlang_schedule = build_schedule(hw, dataclasses.replace(problem, target=KernelTarget.ttlang), schedule.candidate)
    ttlang = {b.name: evaluate(b.bytes_expr, values) for b in ttlang_schedule.l1_buffers}
    block = values["out_block_h"] * values["out_block_w"] * hw.tile_bytes[problem.data_format("out")]
    assert "acc" not in ttnn and ttlang["acc"] == 2 * block
    assert sum(ttlang.values()) - sum(ttnn.values()) == 2 * block
    assert problem.target is KernelTarget.ttnn  # the default: TTNN's kernels, as measured


def test_a_ttnn_schedule_whose_tt_lang_kernel_overflows_is_not_exported_as_one(solved) -> None:
    hw, problem, schedule, best = solved
    reason = ttlang_l1_blocker(hw, problem, schedule, best.solution.values())
    assert reason is not None and "more than the 1,395,424 B usable" in reason and "--target ttlang" in reason
    exported = SolvedSchedule(schedule, best, "wormhole_n150", "gemm", SolveOptions())
    with pytest.raises(ExportError, match="TT-Lang kernel of this schedule needs"):
        export_text("ttlang", exported)
    ttnn_file = export_text("ttnn", exported)
    assert "ttnn" in ttnn_file  # the TTNN export of the same schedule is fine


def test_the_target_is_recorded_and_rebuilt() -> None:
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("gemm"), "M=256,K=256,N=256", target=KernelTarget.ttlang)
    result = Session(hw, problem).solve({}, SolveOptions(), candidates=["M@y,N@x|in0=mcast_x,in1=mcast_y"])[0]
    doc = schedule_document(hw, "wormhole_n150", "gemm", problem, result, SolveOptions())
    assert doc.problem.target == "ttlang"
    again = ScheduleDocument.model_validate_json(doc.to_json())
    built = rebuild_own(again)
    assert built.problem.target is KernelTarget.ttlang
    assert built.solution.l1_bytes == result.solution.l1_bytes
    older = json.loads(doc.to_json())
    del older["problem"]["target"]  # a document written before targets: TTNN's kernels
    assert ScheduleDocument.model_validate(older).problem.target == "ttnn"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loom_explorer.cli", *args], capture_output=True, text=True, timeout=WAIT_S, check=False
    )


@pytest.mark.slow  # over 8 s: CI runs it, the quick tier does not
def test_export_ttlang_solves_for_the_tt_lang_kernels(tmp_path) -> None:
    out = tmp_path / "k.py"
    done = _cli("export", "gemm", "--hw", "wormhole_n150", "--shape", BIG, "--format", "ttlang", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert '\\"target\\": \\"ttlang\\"' in out.read_text() or '"target": "ttlang"' in out.read_text()
    bad = _cli(
        "export",
        "gemm",
        "--hw",
        "wormhole_n150",
        "--shape",
        BIG,
        "--format",
        "ttlang",
        "--target",
        "ttnn",
        "-o",
        str(tmp_path / "k2.py"),
    )
    assert bad.returncode == 2 and "--target ttnn contradicts --format ttlang" in bad.stderr
    solve = _cli(
        "solve", "gemm", "--hw", "wormhole_n150", "--shape", "M=256,K=256,N=256", "--target", "ttlang", "--json"
    )
    assert solve.returncode == 0, solve.stderr
