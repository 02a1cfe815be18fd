"""The card measurement, in its own process: ``python -m loom_explorer.deploy.card_launch DOC.json RUNS WARMUP
[--no-profiler]``.

ttnn's device profiler reads its switches from the environment once, when ttnn is imported:
``get_latest_programs_perf_data()`` stays empty unless ``TT_METAL_DEVICE_PROFILER``,
``TT_METAL_PROFILER_MID_RUN_DUMP`` and ``TT_METAL_PROFILER_CPP_POST_PROCESS`` are all ``1`` by then. So
``CardRunner`` starts this module with the same Python (``sys.executable``) and ``PROFILER_ENV`` added to
the environment; the module checks that ttnn was not imported before the environment was set, imports the
schedule's exported TTNN file (``targets/ttnn/exporter.py``: the exported file and the runner run the same
calls) and measures it:

1. ``build()`` (program, compute and memory configs) and the host inputs, before any device exists;
2. ``ttnn.open_device``, inputs uploaded once in the schedule's memory configs;
3. ``warmup`` runs, then the profiler read (dropping their records);
4. ``runs`` runs, each followed by ``synchronize_device`` + ``ReadDeviceProfiler`` and the sum over that
   read's programs of ``program_analyses_results["DEVICE KERNEL DURATION [ns]"].duration``
   (``get_latest_programs_perf_data`` keeps only the latest entry per program, so one read per run);
5. one more run for the PCC against torch, and ``runs`` calls captured in a trace for a wall-clock figure.

The device is closed on every path. The result is one line ``LOOM_CARD {json}`` on stdout: ``ok``, the
``stage`` reached, the durations or the error, and the profiler environment the process saw.

The device profiler needs a Tracy-enabled tt-metal build: the pip wheel of ttnn 0.81.1 is not one, and
with ``TT_METAL_DEVICE_PROFILER=1`` its ``open_device`` stops with ``TT_FATAL ... requires a Tracy-enabled
build``. ``--no-profiler`` (what ``CardRunner`` retries with after that error) leaves the profiler
environment out and skips step 4: only the trace's wall clock per call is measured.
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

PROFILER_ENV = {
    "TT_METAL_DEVICE_PROFILER": "1",
    "TT_METAL_PROFILER_MID_RUN_DUMP": "1",
    "TT_METAL_PROFILER_CPP_POST_PROCESS": "1",
}
KERNEL_DURATION = "DEVICE KERNEL DURATION [ns]"
RESULT_PREFIX = "LOOM_CARD "
TRACE_REGION_BYTES = 16 << 20


def kernel_durations_ns(perf_data: Mapping[Any, Iterable[Any]]) -> list[float]:
    """Every ``DEVICE KERNEL DURATION [ns]`` in one ``ttnn.get_latest_programs_perf_data()`` answer: a dict of
    chip id -> list of ``ttnn._ttnn.profiler.ProgramAnalysisData``, each with ``program_analyses_results``, a
    dict of analysis name -> ``ProgramSingleAnalysisResult`` whose ``duration`` is in ns. Programs without
    that analysis are skipped."""
    durations: list[float] = []
    for programs in perf_data.values():
        for program in programs:
            result = program.program_analyses_results.get(KERNEL_DURATION)
            if result is not None:
                durations.append(float(result.duration))
    return durations


def profiler_env_problem(environ: Mapping[str, str], imported: Iterable[str]) -> str | None:
    """Why the device profiler would stay silent in this process (None: it will report)."""
    missing = [k for k, v in PROFILER_ENV.items() if environ.get(k) != v]
    if missing:
        return f"the profiler environment is not set ({', '.join(f'{k}=1' for k in missing)})"
    if "ttnn" in imported:
        return "ttnn was imported before the profiler environment could take effect"
    return None


def load_exported(source: str, folder: Path) -> ModuleType:
    """The exported TTNN file ``source`` written into ``folder`` and imported (this imports ttnn)."""
    path = folder / "loom_ttnn_schedule.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("loom_ttnn_schedule", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def error_text(exc: BaseException) -> str:
    """``Type: message`` without the C++ backtrace ttnn's TT_FATAL messages carry."""
    return f"{type(exc).__name__}: {str(exc).split('backtrace:')[0].strip()}"


class StageError(RuntimeError):
    def __init__(self, stage: str, error: BaseException) -> None:
        super().__init__(f"{stage}: {type(error).__name__}: {error}")
        self.stage, self.error = stage, error


def measure(module: ModuleType, runs: int, warmup: int, profile: bool = True) -> dict[str, object]:
    """Steps 1-5 of the module docstring on ``module`` (an imported exported TTNN file; step 4 only when
    ``profile``); StageError names the step that failed."""
    ttnn, torch = module.ttnn, module.torch
    stage = "build"
    try:
        configs = module.build()
        torch.manual_seed(0)
        inputs = module.host_inputs()
        stage = "open_device"
        device = ttnn.open_device(device_id=0, trace_region_size=TRACE_REGION_BYTES)
    except Exception as exc:
        raise StageError(stage, exc) from exc
    try:
        stage = "upload"
        tensors = module.upload(inputs, configs, device)
        stage = "warmup"
        for _ in range(warmup):
            module.op(tensors, configs)
        ttnn.synchronize_device(device)
        per_run: list[float] = []
        if profile:
            ttnn.ReadDeviceProfiler(device)  # drop the warm-up records
        stage = "profile"
        for _ in range(runs if profile else 0):
            module.op(tensors, configs)
            ttnn.synchronize_device(device)
            ttnn.ReadDeviceProfiler(device)
            found = kernel_durations_ns(ttnn.get_latest_programs_perf_data())
            if found:
                per_run.append(sum(found))
        stage = "pcc"
        result = ttnn.to_torch(module.op(tensors, configs)).float()
        pcc = float(module.pcc(result, module.expected(inputs)))
        stage = "trace"
        trace = ttnn.begin_trace_capture(device, cq_id=0)
        for _ in range(runs):
            module.op(tensors, configs)
        ttnn.end_trace_capture(device, trace, cq_id=0)
        start = time.perf_counter()
        ttnn.execute_trace(device, trace, cq_id=0, blocking=False)
        ttnn.synchronize_device(device)
        wall_ns = (time.perf_counter() - start) * 1e9 / runs
        ttnn.release_trace(device, trace)
    except Exception as exc:
        raise StageError(stage, exc) from exc
    finally:
        ttnn.close_device(device)
    return {
        "durations_ns": per_run,
        "median_ns": statistics.median(per_run) if per_run else None,
        "pcc": pcc,
        "wall_clock_ns": wall_ns,
        "runs": runs,
        "notes": list(module.NOTES),
    }


def run_document(doc_json: str, runs: int, warmup: int, profile: bool = True) -> dict[str, object]:
    """The report of measuring one schedule document (never raises: failures are reported with their stage)."""
    seen_env = {k: os.environ.get(k) for k in PROFILER_ENV}
    report: dict[str, object] = {"ok": False, "stage": "environment", "profiler_env": seen_env, "profiled": profile}
    problem = profiler_env_problem(os.environ, sys.modules) if profile else None
    if problem:
        return {**report, "error": problem}
    try:
        from loom_explorer.export.schedule_json import (
            parse_schedule_document,
            rebuild_own,
        )
        from loom_explorer.targets.ttnn.exporter import ttnn_source

        doc = parse_schedule_document(doc_json, "card_launch")
        source = ttnn_source(rebuild_own(doc), doc)
    except Exception as exc:
        return {**report, "stage": "export", "error": error_text(exc)}
    with tempfile.TemporaryDirectory(prefix="loom-card-") as folder:
        try:
            module = load_exported(source, Path(folder))
        except Exception as exc:
            return {**report, "stage": "import", "error": error_text(exc)}
        try:
            measured = measure(module, runs, warmup, profile)
        except StageError as exc:
            return {**report, "stage": exc.stage, "error": error_text(exc.error)}
    return {**report, "ok": True, "stage": "done", **measured}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    profile = "--no-profiler" not in args
    args = [a for a in args if a != "--no-profiler"]
    if len(args) != 3:
        print("usage: python -m loom_explorer.deploy.card_launch DOC.json RUNS WARMUP [--no-profiler]", file=sys.stderr)
        return 2
    report = run_document(Path(args[0]).read_text(), int(args[1]), int(args[2]), profile)
    print(RESULT_PREFIX + json.dumps(report), flush=True)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
