"""Run a solved schedule and measure it: on a Tenstorrent card through ttnn, or in tt-lang-sim.

Both runners take the same ``ScheduleDocument`` and return a :class:`Run`:

* :class:`SimulatorRunner` exports the TT-Lang kernel into a temporary folder and verifies it
  (``deploy/verify.py``): numerics and traffic, no time (simulator ticks are not cycles);
* :class:`CardRunner` (ttnn imported lazily) opens the device once, runs the schedule's TTNN program
  config (``export/ttnn_config.py``) ``warmup`` times, then ``runs`` times with the device profiler on and
  reads back ``DEVICE KERNEL DURATION [ns]`` of each run (median), then once more captured in a trace of
  ``runs`` ops for a wall-clock figure; the device is closed on every path. Schedules TTNN cannot run are
  refused with the reason (running their TT-Lang kernel on a card is left to ``python FILE``).

``pick_runner`` chooses the card when ttnn sees one, else the simulator, and says why.
"""

from __future__ import annotations

import importlib.util
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from loom_explorer.deploy.store import Measurement
from loom_explorer.deploy.verify import VerifyReport, verify_kernel_file
from loom_explorer.export.schedule_json import ScheduleDocument, rebuild_own
from loom_explorer.export.ttlang import ttlang_source
from loom_explorer.export.ttnn_config import compute_config_args, ttnn_equivalent


class RunnerError(RuntimeError):
    """A runner that cannot run here or cannot run this schedule; the message says why."""


@dataclass(frozen=True, slots=True)
class Run:
    source: Literal["card", "simulator"]
    measured_ns: float | None
    measured_what: str
    pcc: float | None = None
    traffic_equal: bool | None = None
    wall_clock_ns: float | None = None
    note: str = ""


class Runner(Protocol):
    name: Literal["card", "simulator"]

    def unavailable(self) -> str | None:
        """Why this runner cannot run on this machine (None: it can)."""

    def run(self, doc: ScheduleDocument, runs: int = 20, warmup: int = 5) -> Run: ...


class SimulatorRunner:
    name: Literal["simulator"] = "simulator"

    def __init__(self, timeout_seconds: float = 600.0) -> None:
        self.timeout_seconds = timeout_seconds

    def unavailable(self) -> str | None:
        if importlib.util.find_spec("ttl") is None:
            return "tt-lang-sim is not installed (pip install 'loom-explorer[sim]')"
        return None

    def run(self, doc: ScheduleDocument, runs: int = 20, warmup: int = 5) -> Run:
        why = self.unavailable()
        if why:
            raise RunnerError(why)
        source = ttlang_source(rebuild_own(doc), doc)
        with tempfile.TemporaryDirectory(prefix="loom-run-") as work:
            path = Path(work) / "kernel.py"
            path.write_text(source)
            report = verify_kernel_file(path, self.timeout_seconds, hw_file=doc.hardware.source,
                                        kernel_file=doc.problem.kernel)
        return simulator_run(report)


def simulator_run(report: VerifyReport) -> Run:
    """A verified simulator run: numerics and traffic, no time (simulator ticks are not cycles)."""
    return Run("simulator", None, "simulated in tt-lang-sim (no time)", pcc=report.pcc,
               traffic_equal=report.traffic_equal, note="; ".join(report.differences()))


class CardRunner:
    name: Literal["card"] = "card"

    def unavailable(self) -> str | None:
        if importlib.util.find_spec("ttnn") is None:
            return "ttnn is not installed (pip install 'loom-explorer[device]', Python 3.10 or 3.12)"
        import ttnn

        try:
            count = ttnn.GetNumAvailableDevices()
        except Exception as exc:  # noqa: BLE001 -- any driver failure means "no card here"
            return f"ttnn found no Tenstorrent device ({exc})"
        return None if count > 0 else "ttnn found no Tenstorrent device"

    def run(self, doc: ScheduleDocument, runs: int = 20, warmup: int = 5) -> Run:  # pragma: no cover - card only
        why = self.unavailable()
        if why:
            raise RunnerError(why)
        built = rebuild_own(doc)
        name, args, notes = ttnn_equivalent(built.schedule, built.solution.values())
        import torch
        import ttnn

        device = ttnn.open_device(device_id=0, trace_region_size=16 << 20)
        try:
            op = _ttnn_op(ttnn, torch, device, built, name, args)
            for _ in range(warmup):
                op()
            ttnn.synchronize_device(device)
            ttnn.ReadDeviceProfiler(device)  # drop the warm-up records
            for _ in range(runs):
                op()
            ttnn.synchronize_device(device)
            ttnn.ReadDeviceProfiler(device)
            durations = [float(r["DEVICE KERNEL DURATION [ns]"])
                         for rows in ttnn.get_latest_programs_perf_data().values() for r in rows
                         if "DEVICE KERNEL DURATION [ns]" in r]
            trace = ttnn.begin_trace_capture(device, cq_id=0)
            for _ in range(runs):
                op()
            ttnn.end_trace_capture(device, trace, cq_id=0)
            start = time.perf_counter()
            ttnn.execute_trace(device, trace, cq_id=0, blocking=False)
            ttnn.synchronize_device(device)
            wall_ns = (time.perf_counter() - start) * 1e9 / runs
            ttnn.release_trace(device, trace)
        finally:
            ttnn.close_device(device)
        if not durations:
            raise RunnerError("the device profiler returned no kernel durations; build tt-metal with the profiler "
                              "(TT_METAL_DEVICE_PROFILER=1)")
        return Run("card", statistics.median(durations[-runs:]), "device kernel duration (median)",
                   wall_clock_ns=wall_ns, note="; ".join(notes))


def _ttnn_op(ttnn, torch, device, built, name: str, args: dict[str, object]):  # type: ignore[no-untyped-def]  # pragma: no cover
    """A callable that runs the schedule's TTNN op once on ``device`` (inputs uploaded once)."""
    config = dict(args)
    config["compute_with_storage_grid_size"] = ttnn.CoreCoord(*config["compute_with_storage_grid_size"])  # type: ignore[misc]
    if config.get("fused_activation", "absent") is None:
        del config["fused_activation"]
    program_config = getattr(ttnn, name)(**config)
    problem = built.problem
    compute_args = compute_config_args(problem)
    compute_args["math_fidelity"] = getattr(ttnn.MathFidelity, compute_args["math_fidelity"])
    compute = ttnn.WormholeComputeKernelConfig(**compute_args)

    def upload(shape: tuple[int, ...], tensor: str):  # type: ignore[no-untyped-def]
        return ttnn.from_torch(torch.randn(shape, dtype=torch.bfloat16),
                               dtype=getattr(ttnn, problem.data_format(tensor).value), layout=ttnn.TILE_LAYOUT,
                               device=device, memory_config=ttnn.DRAM_MEMORY_CONFIG)

    s = dict(problem.shape)
    if name == "SDPAProgramConfig":
        q = upload((s["B"], s["H"], s["Sq"], s["D"]), "q")
        k = upload((s["B"], s["Hkv"], s["Skv"], s["D"]), "k")
        v = upload((s["B"], s["Hkv"], s["Skv"], s["D"]), "v")
        causal = problem.has_option("causal")
        return lambda: ttnn.transformer.scaled_dot_product_attention(
            q, k, v, is_causal=causal, program_config=program_config, compute_kernel_config=compute)
    a, b = upload((s["M"], s["K"]), "in0"), upload((s["K"], s["N"]), "in1")
    return lambda: ttnn.matmul(a, b, program_config=program_config, compute_kernel_config=compute,
                               memory_config=ttnn.DRAM_MEMORY_CONFIG)


def pick_runner(choice: Literal["auto", "card", "simulator"] = "auto") -> tuple[Runner, str]:
    """(runner, why it was chosen)."""
    card = CardRunner()
    if choice == "simulator":
        return SimulatorRunner(), "asked for the simulator"
    why_not = card.unavailable()
    if choice == "card":
        if why_not:
            raise RunnerError(why_not)
        return card, "asked for the card"
    if why_not is None:
        return card, "a Tenstorrent card is present"
    return SimulatorRunner(), f"no card here ({why_not}): running in tt-lang-sim"


def run_measurement(doc: ScheduleDocument, run: Run) -> Measurement:
    """A run as a results-store entry, beside the document's prediction."""
    return Measurement(
        source=run.source, hardware=doc.hardware.name, hardware_sha256=doc.hardware.sha256,
        kernel=doc.problem.kernel, shape=dict(doc.problem.shape), candidate=doc.candidate,
        schedule_json=doc.to_json(), predicted_cycles=doc.prediction.latency_cycles,
        predicted_ns=doc.prediction.latency_us * 1e3, breakdown=dict(doc.prediction.breakdown),
        measured_ns=run.measured_ns, measured_what=run.measured_what, pcc=run.pcc, traffic_equal=run.traffic_equal,
        note="; ".join(x for x in (run.note, f"wall clock with trace {run.wall_clock_ns:.0f} ns"
                                   if run.wall_clock_ns else "") if x))
