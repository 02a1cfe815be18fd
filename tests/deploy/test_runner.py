"""Runners: the simulator runner everywhere; the card runner only on a machine with a card (``device``)."""

from __future__ import annotations

import importlib.util

import pytest

from loom_explorer.cli import main
from loom_explorer.deploy.runner import (
    CardRunner,
    RunnerError,
    SimulatorRunner,
    pick_runner,
)
from loom_explorer.deploy.store import open_store
from loom_explorer.export.schedule_json import schedule_document
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions

HAS_TTNN = importlib.util.find_spec("ttnn") is not None


def _doc(kernel: str = "gemm", shape: str = "M=256,K=256,N=256"):  # type: ignore[no-untyped-def]
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program(kernel), shape)
    best = Session(hw, problem).solve({}, SolveOptions())[0]
    return schedule_document(hw, "wormhole_n150", kernel, problem, best, SolveOptions())


def test_the_simulator_runner_checks_numerics_and_traffic() -> None:
    run = SimulatorRunner().run(_doc())
    assert run.source == "simulator" and run.measured_ns is None
    assert run.pcc is not None and run.pcc >= 0.999 and run.traffic_equal is True


@pytest.mark.skipif(HAS_TTNN, reason="this machine has ttnn: the no-card messages do not apply")
def test_without_ttnn_the_card_runner_says_why_and_auto_falls_back() -> None:
    assert "ttnn is not installed" in (CardRunner().unavailable() or "")
    runner, why = pick_runner("auto")
    assert runner.name == "simulator" and "no card here" in why
    with pytest.raises(RunnerError, match="ttnn is not installed"):
        pick_runner("card")


def test_deploy_in_the_simulator_records_the_run(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "r.sqlite"
    assert main(["deploy", "gemm", "--hw", "wormhole_n150", "--shape", "M=256,K=256,N=256", "--runner", "simulator",
                 "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "traffic equal to the model" in out and "recorded as measurement 1" in out
    with open_store(store) as s:
        (m,) = s.measurements()
    assert m.source == "simulator" and m.predicted_cycles and m.schedule_json.startswith("{")


@pytest.mark.device
@pytest.mark.skipif(not HAS_TTNN or CardRunner().unavailable() is not None, reason="needs ttnn and a Tenstorrent card")
def test_the_card_runner_measures_a_gemm() -> None:  # pragma: no cover - card only
    run = CardRunner().run(_doc("gemm", "M=1024,K=1024,N=1024"), runs=10, warmup=2)
    assert run.source == "card" and run.measured_ns and run.measured_ns > 0 and run.wall_clock_ns
