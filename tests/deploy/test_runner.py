"""Runners: the simulator runner everywhere; the card runner's refusals, its child process and its report
everywhere, its measurement only on a machine with a card (``device``; the real-ttnn checks up to opening a
device are in ``tests/ttnn_contract``)."""

from __future__ import annotations

import importlib.util
import json
from types import SimpleNamespace
from typing import cast

import pytest

from loom_explorer.cli import main
from loom_explorer.deploy import runner as runner_module
from loom_explorer.deploy.card_launch import PROFILER_ENV
from loom_explorer.deploy.runner import (
    CardRunner,
    CardRunnerError,
    RunnerError,
    SimulatorRunner,
    card_run,
    launch_card_measurement,
    parse_card_report,
    pick_runner,
    refuse_for_card,
)
from loom_explorer.export.schedule_json import ScheduleDocument, schedule_document
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import DataFormat
from loom_explorer.problem import Placement, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.store import open_store

HAS_TTNN = importlib.util.find_spec("ttnn") is not None


def _doc(kernel: str = "gemm", shape: str = "M=256,K=256,N=256"):
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program(kernel), shape)
    best = Session(hw, problem).solve({}, SolveOptions())[0]
    return schedule_document(hw, "wormhole_n150", kernel, problem, best, SolveOptions())


@pytest.mark.slow
def test_the_simulator_runner_checks_numerics_and_traffic() -> None:
    run = SimulatorRunner(compile_it=False).run(_doc())
    assert run.source == "simulator" and run.measured_ns is None
    assert run.pcc is not None and run.pcc >= 0.999 and run.traffic_equal is True


def test_the_simulator_runner_compiles_unless_told_not_to(monkeypatch: pytest.MonkeyPatch) -> None:
    """The option reaches ``verify_kernel_file`` (the export and verify are stood in for: no solve, no simulator)."""
    asked: list[bool] = []

    def verify(path, timeout_seconds, hw_file=None, kernel_file=None, compile_it=True):
        asked.append(compile_it)
        raise RuntimeError("stop before the simulator")

    monkeypatch.setattr(runner_module, "rebuild_own", lambda doc: None)
    monkeypatch.setattr(runner_module, "ttlang_source", lambda built, doc: "# kernel\n")
    monkeypatch.setattr(runner_module, "verify_kernel_file", verify)
    monkeypatch.setattr(SimulatorRunner, "unavailable", lambda self: None)
    doc = cast(
        ScheduleDocument, SimpleNamespace(hardware=SimpleNamespace(source=None), problem=SimpleNamespace(kernel="gemm"))
    )
    for runner in (SimulatorRunner(), SimulatorRunner(compile_it=False)):
        with pytest.raises(RuntimeError, match="stop before the simulator"):
            runner.run(doc)
    assert asked == [True, False]


@pytest.mark.skipif(HAS_TTNN, reason="this machine has ttnn: the no-card messages do not apply")
def test_without_ttnn_the_card_runner_says_why_and_auto_falls_back() -> None:
    assert "ttnn is not installed" in (CardRunner().unavailable() or "")
    runner, why = pick_runner("auto")
    assert runner.name == "simulator" and "no card here" in why
    with pytest.raises(RunnerError, match="ttnn is not installed"):
        pick_runner("card")


@pytest.mark.slow  # over 8 s: CI runs it, the quick tier does not
def test_deploy_in_the_simulator_records_the_run(tmp_path, capsys, simulate_only) -> None:
    store = tmp_path / "r.sqlite"
    assert (
        main(
            [
                "deploy",
                "gemm",
                "--hw",
                "wormhole_n150",
                "--shape",
                "M=256,K=256,N=256",
                "--runner",
                "simulator",
                "--store",
                str(store),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "traffic equal to the model" in out and "recorded as measurement 1" in out
    with open_store(store) as s:
        (m,) = s.measurements()
    assert m.source == "simulator" and m.predicted_cycles and m.schedule_json.startswith("{")


@pytest.mark.slow
def test_deploy_in_the_simulator_runs_the_schedule_solved_for_the_tt_lang_kernel(
    tmp_path, capsys, simulate_only
) -> None:
    """Solved for TTNN's kernels, the best softmax of 65 column tiles splits them 8 x 9 (padded), which the TT-Lang
    writer refuses; the simulator runs the TT-Lang file, so deploy solves for its kernels, as export does, and
    runs the even split."""
    store = tmp_path / "r.sqlite"
    assert (
        main(
            [
                "deploy",
                "softmax",
                "--hw",
                "wormhole_n150",
                "--shape",
                "H=64,W=2080",
                "--runner",
                "simulator",
                "--store",
                str(store),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "PCC 1.000000, traffic equal to the model" in out
    with open_store(store) as s:
        (m,) = s.measurements()
    params = json.loads(m.schedule_json)["params"]
    assert 65 % params["per_core_W"] == 0, params


@pytest.mark.device
@pytest.mark.skipif(not HAS_TTNN or CardRunner().unavailable() is not None, reason="needs ttnn and a Tenstorrent card")
def test_the_card_runner_measures_a_gemm() -> None:  # pragma: no cover - card only
    run = CardRunner().run(_doc("gemm", "M=1024,K=1024,N=1024"), runs=10, warmup=2)
    assert run.source == "card" and run.measured_ns and run.measured_ns > 0 and run.wall_clock_ns


def test_a_child_report_becomes_a_run() -> None:
    profiled = {
        "ok": True,
        "stage": "done",
        "profiled": True,
        "median_ns": 1500.0,
        "durations_ns": [1400.0, 1500.0],
        "pcc": 0.9995,
        "wall_clock_ns": 1800.0,
        "runs": 2,
        "notes": ["in0: TTNN buffers 2 block(s)"],
    }
    run = card_run(profiled)
    assert (run.source, run.measured_ns, run.measured_what) == ("card", 1500.0, "device kernel duration (median)")
    assert run.pcc == 0.9995 and run.wall_clock_ns == 1800.0 and "TTNN buffers" in run.note
    wall_only = {
        **profiled,
        "profiled": False,
        "median_ns": None,
        "durations_ns": [],
        "no_profiler_reason": "TT_METAL_DEVICE_PROFILER requires a Tracy-enabled build of tt-metal.",
    }
    run = card_run(wall_only)
    assert run.measured_ns == 1800.0 and "no device profiler" in run.measured_what and "Tracy" in run.note
    with pytest.raises(CardRunnerError, match="no kernel durations"):
        card_run({**profiled, "median_ns": None, "durations_ns": []})
    line = "LOOM_CARD " + json.dumps(profiled)
    assert parse_card_report(f"ttnn chatter\n{line}\nmore chatter\n") == profiled
    assert parse_card_report("no report at all\n") is None


@pytest.mark.slow  # a solve, then a fresh interpreter (the measuring child): about 7 s
def test_the_measuring_process_gets_the_profiler_environment(tmp_path) -> None:
    """A real child process of this interpreter: it reports the profiler environment it saw, and (without
    ttnn here, or without a card) the stage it stopped at."""
    with pytest.raises(CardRunnerError) as failed:
        launch_card_measurement(_doc(), runs=1, warmup=0)
    report = failed.value.report
    assert report is not None and report["profiler_env"] in (PROFILER_ENV, dict.fromkeys(PROFILER_ENV))
    if not HAS_TTNN:
        assert report["stage"] == "import" and "ttnn" in str(report["error"])
        assert report["profiler_env"] == PROFILER_ENV


def test_the_card_runner_refuses_what_ttnn_would_not_run_as_scheduled() -> None:
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("flash_attention"), "B=1,H=2,Sq=256,Skv=256,D=64", DataFormat.float32)
    session = Session(hw, problem)
    (result,) = [r for r in session.solve({}, SolveOptions()) if r.candidate_name.startswith("H*Sq@xy")]
    doc = schedule_document(hw, "wormhole_n150", "flash_attention", problem, result, SolveOptions())
    with pytest.raises(RunnerError, match="SDPA takes q, k and v in bfloat16, bfloat8_b, bfloat4_b only; q is float32"):
        CardRunner().run(doc)
    problem = make_problem(load_program("gemm"), "M=256,K=256,N=256", placements={"in0": Placement.l1})
    best = Session(hw, problem).solve({}, SolveOptions())[0]
    doc = schedule_document(hw, "wormhole_n150", "gemm", problem, best, SolveOptions())
    with pytest.raises(RunnerError, match="in0=l1: a what-if placement"):
        refuse_for_card(doc)
