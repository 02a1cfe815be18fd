"""The card runner against the real ttnn: its profiler read on real ``ProgramAnalysisData``, its measurement
up to ``ttnn.open_device`` (in this process and in the subprocess it really starts)."""

from __future__ import annotations

from pathlib import Path

import pytest
import ttnn
from contract_helpers import GEMM_SHAPE, OpenDeviceReached, solved
from ttnn._ttnn.profiler import ProgramAnalysisData, ProgramSingleAnalysisResult

from loom_explorer.deploy.card_launch import (
    KERNEL_DURATION,
    PROFILER_ENV,
    StageError,
    kernel_durations_ns,
    load_exported,
    measure,
    profiler_env_problem,
)
from loom_explorer.deploy.runner import CardRunnerError, launch_card_measurement
from loom_explorer.export.schedule_json import rebuild_own
from loom_explorer.targets.ttnn.exporter import ttnn_source

HAS_CARD = Path("/dev/tenstorrent").is_dir() and any(Path("/dev/tenstorrent").iterdir())


def _with(name: str, duration: int) -> ProgramAnalysisData:
    """A real ProgramAnalysisData holding one analysis (its constructors take no arguments in 0.81.1)."""
    data = ProgramAnalysisData()
    result = ProgramSingleAnalysisResult()
    result.duration = duration
    data.program_analyses_results = {name: result}
    return data


def test_the_profiler_read_takes_real_program_analysis_data() -> None:
    perf = {
        0: [_with(KERNEL_DURATION, 12_345), _with("DEVICE FW DURATION [ns]", 99), _with(KERNEL_DURATION, 678)],
        1: [_with(KERNEL_DURATION, 10)],
    }
    assert kernel_durations_ns(perf) == [12_345.0, 678.0, 10.0]
    # without a device and without the profiler environment, ttnn's own answer is an empty dict
    assert kernel_durations_ns(ttnn.get_latest_programs_perf_data()) == []


def test_the_profiler_environment_is_checked_before_ttnn_is_imported() -> None:
    assert profiler_env_problem(PROFILER_ENV, ["json"]) is None
    assert "TT_METAL_PROFILER_MID_RUN_DUMP=1" in str(profiler_env_problem({"TT_METAL_DEVICE_PROFILER": "1"}, []))
    assert "imported before" in str(profiler_env_problem(PROFILER_ENV, ["ttnn"]))


@pytest.mark.parametrize(
    "placements,candidate,sharded",
    [
        ((), "M@y,N@x|in0=mcast_x,in1=mcast_y", set()),
        ((("in0", "l1_height"), ("out", "l1_height")), "M@xy|in0=local,in1=mcast_xy", {"in0", "out"}),
    ],
)
def test_the_measurement_builds_everything_then_stops_at_open_device(
    placements,
    candidate,
    sharded,
    tmp_path,
    stop_at_open_device,
) -> None:
    doc = solved("gemm", GEMM_SHAPE, placements)[candidate]
    module = load_exported(ttnn_source(rebuild_own(doc), doc), tmp_path)
    with pytest.raises(StageError) as failed:
        measure(module, runs=3, warmup=1)
    assert failed.value.stage == "open_device" and isinstance(failed.value.error, OpenDeviceReached)
    assert stop_at_open_device["kwargs"] == {"device_id": 0, "trace_region_size": 16 << 20}
    made = stop_at_open_device["locals"]
    assert isinstance(
        made["configs"]["program"],
        ttnn.MatmulMultiCoreReuseMultiCastProgramConfig
        if "@y" in candidate
        else ttnn.MatmulMultiCoreReuseMultiCast1DProgramConfig,
    )
    assert {t for t, m in made["configs"]["memory"].items() if m.is_sharded()} == sharded
    assert set(made["inputs"]) == {"in0", "in1"}


@pytest.mark.skipif(HAS_CARD, reason="a card is present: this checks the path up to a failing open_device")
def test_the_subprocess_sets_the_profiler_environment_and_reaches_open_device() -> None:
    doc = solved("gemm", GEMM_SHAPE)["M@y,N@x|in0=mcast_x,in1=mcast_y"]
    with pytest.raises(CardRunnerError) as failed:
        launch_card_measurement(doc, runs=2, warmup=1)
    report = failed.value.report
    assert report is not None and report["stage"] == "open_device", report
    if report["profiled"]:  # a Tracy build: the profiler environment reached ttnn, then no chip
        assert report["profiler_env"] == PROFILER_ENV
    else:  # the pip wheel: ttnn saw TT_METAL_DEVICE_PROFILER=1 and said its build has no profiler
        assert "TT_METAL_DEVICE_PROFILER requires a Tracy-enabled build" in str(report["no_profiler_reason"])
        assert set(report["profiler_env"].values()) == {None}  # type: ignore[attr-defined]
    assert "No chips detected" in str(report["error"])
