"""Run a solved schedule and measure it: on a Tenstorrent card through ttnn, or in tt-lang-sim.

Both runners take the same ``ScheduleDocument`` and return a :class:`Run`:

* :class:`SimulatorRunner` exports the TT-Lang kernel into a temporary folder and verifies it
  (``deploy/verify.py``): numerics and traffic, no time (simulator ticks are not cycles);
* :class:`CardRunner` measures in a subprocess (``deploy/card_launch.py``, same Python as the caller) started
  with the device profiler's environment (``TT_METAL_DEVICE_PROFILER``, ``TT_METAL_PROFILER_MID_RUN_DUMP``,
  ``TT_METAL_PROFILER_CPP_POST_PROCESS`` = 1), which ttnn reads when it is imported: the parent never imports
  ttnn. The child runs the schedule's exported TTNN file (``targets/ttnn/exporter.py``: program, compute and
  memory configs, so L1-sharded operands stay sharded) ``warmup`` times, then ``runs`` times reading
  ``DEVICE KERNEL DURATION [ns]`` after each (median), checks the PCC, and times ``runs`` calls captured
  in a trace; its JSON line comes back as a :class:`Run`. Schedules TTNN cannot run as scheduled are
  refused before any process starts, with the reason (running their TT-Lang kernel on a card is left to
  ``python FILE``).

``pick_runner`` chooses the card when ttnn is installed and a card is under ``/dev/tenstorrent``, else the
simulator, and says why.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from loom_explorer.deploy.card_launch import PROFILER_ENV, RESULT_PREFIX
from loom_explorer.deploy.verify import VerifyReport, verify_kernel_file
from loom_explorer.errors import LoomError
from loom_explorer.export.exporter import ExportError
from loom_explorer.export.schedule_json import ScheduleDocument, rebuild_own
from loom_explorer.solve.children import die_with_parent_preexec
from loom_explorer.store import Measurement
from loom_explorer.targets.ttlang.exporter import ttlang_source
from loom_explorer.targets.ttnn.exporter import ttnn_source

DEVICE_FOLDER = Path("/dev/tenstorrent")  # one entry per card the kernel driver (tt-kmd) found


class RunnerError(LoomError, RuntimeError):
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
    @property
    def name(self) -> Literal["card", "simulator"]: ...

    def unavailable(self) -> str | None:
        """Why this runner cannot run on this machine (None: it can)."""

    def run(self, doc: ScheduleDocument, runs: int = 20, warmup: int = 5) -> Run: ...


class SimulatorRunner:
    name: Literal["simulator"] = "simulator"

    def __init__(self, timeout_seconds: float = 600.0, compile_it: bool = True) -> None:
        """``compile_it=False``: simulate only, without the TT-Lang compile ``verify`` runs beside the simulator
        (the :class:`Run` carries numerics and traffic only, so its answer is the same either way)."""
        self.timeout_seconds = timeout_seconds
        self.compile_it = compile_it

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
            report = verify_kernel_file(
                path,
                self.timeout_seconds,
                hw_file=doc.hardware.source,
                kernel_file=doc.problem.kernel,
                compile_it=self.compile_it,
            )
        return simulator_run(report)


def simulator_run(report: VerifyReport) -> Run:
    """A verified simulator run: numerics and traffic, no time (simulator ticks are not cycles)."""
    return Run(
        "simulator",
        None,
        "simulated in tt-lang-sim (no time)",
        pcc=report.pcc,
        traffic_equal=report.traffic_equal,
        note="; ".join(report.differences()),
    )


class CardRunnerError(RunnerError):
    """A card measurement that failed in its process; ``report`` is the child's JSON report (or None)."""

    def __init__(self, message: str, report: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.report = report


class CardRunner:
    name: Literal["card"] = "card"

    def __init__(self, timeout_seconds: float = 1800.0, python: str | None = None) -> None:
        self.timeout_seconds = timeout_seconds
        self.python = python or sys.executable

    def unavailable(self) -> str | None:
        """Checked without importing ttnn here (ttnn must first be imported with the profiler environment,
        in the measuring process): ttnn installed, and a card under ``/dev/tenstorrent``."""
        if importlib.util.find_spec("ttnn") is None:
            return "ttnn is not installed (pip install 'loom-explorer[device]', Python 3.10 or 3.12)"
        if not (DEVICE_FOLDER.is_dir() and any(DEVICE_FOLDER.iterdir())):
            return f"no Tenstorrent device ({DEVICE_FOLDER} is absent or empty)"
        return None

    def run(self, doc: ScheduleDocument, runs: int = 20, warmup: int = 5) -> Run:
        refuse_for_card(doc)
        why = self.unavailable()
        if why:
            raise RunnerError(why)
        return launch_card_measurement(doc, runs, warmup, self.python, self.timeout_seconds)


def refuse_for_card(doc: ScheduleDocument) -> None:
    """RunnerError with the reason when TTNN cannot run ``doc``'s schedule as it was scheduled (no TTNN
    config, a format the op refuses, a memory placement TTNN cannot realise)."""
    try:
        ttnn_source(rebuild_own(doc), doc)
    except ExportError as exc:
        raise RunnerError(f"the card cannot run this schedule through TTNN: {exc}") from None


NO_TRACY = "Tracy-enabled build"  # ttnn's TT_FATAL when the device profiler is asked of a build without it


def launch_card_measurement(
    doc: ScheduleDocument, runs: int, warmup: int, python: str | None = None, timeout_seconds: float = 1800.0
) -> Run:
    """Measure ``doc`` in ``python -m loom_explorer.deploy.card_launch`` (``python``: this interpreter by
    default) with ``PROFILER_ENV`` added to the environment. When ttnn stops because its build has no
    device profiler (no Tracy), measure again without it: the trace's wall clock only, said in the Run.
    CardRunnerError carrying the child's report (its ``stage`` and ``error``) when the measurement failed."""
    report = _launch(doc, runs, warmup, python, timeout_seconds, profile=True)
    if not report.get("ok") and report.get("stage") == "open_device" and NO_TRACY in str(report.get("error")):
        first = report
        report = _launch(doc, runs, warmup, python, timeout_seconds, profile=False)
        report["no_profiler_reason"] = str(first.get("error"))
    if not report.get("ok"):
        raise CardRunnerError(f"the card measurement failed at {report.get('stage')}: {report.get('error')}", report)
    return card_run(report)


def _launch(
    doc: ScheduleDocument, runs: int, warmup: int, python: str | None, timeout_seconds: float, profile: bool
) -> CardReport:
    with tempfile.TemporaryDirectory(prefix="loom-card-") as work:
        path = Path(work) / "schedule.json"
        path.write_text(doc.to_json())
        env = {k: v for k, v in os.environ.items() if k not in PROFILER_ENV}
        if profile:
            env.update(PROFILER_ENV)
        argv = [python or sys.executable, "-m", "loom_explorer.deploy.card_launch", str(path), str(runs), str(warmup)]
        try:
            done = subprocess.run(
                [*argv, *([] if profile else ["--no-profiler"])],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_seconds,
                check=False,
                preexec_fn=die_with_parent_preexec(),
            )  # dies with this process
        except subprocess.TimeoutExpired:
            raise CardRunnerError(f"the card measurement did not finish in {timeout_seconds:.0f} s") from None
    report = parse_card_report(done.stdout)
    if report is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise CardRunnerError(
            f"the card measurement process exited with {done.returncode} and no report: " + " | ".join(tail)
        )
    return report


# the JSON report the card process prints (``card_launch.run_document``): read at this boundary, field by field
CardReport = dict[str, Any]


def parse_card_report(stdout: str) -> CardReport | None:
    """The last ``LOOM_CARD {json}`` line of the child's stdout (None when there is none)."""
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    return json.loads(lines[-1][len(RESULT_PREFIX) :]) if lines else None


def card_run(report: CardReport) -> Run:
    """A successful child report as a Run: the median device kernel duration, or, from a run without the
    device profiler, the trace's wall clock per call (``measured_what`` says which); CardRunnerError when
    the profiler was on and returned no kernel durations."""
    notes = [str(n) for n in report.get("notes", [])]
    wall_ns = float(report["wall_clock_ns"])
    if not report.get("profiled", True):
        notes.append(f"no device profiler in this ttnn build ({report.get('no_profiler_reason', 'not asked for')})")
        return Run(
            "card",
            wall_ns,
            f"wall clock per call over a trace of {report.get('runs')} calls (no device profiler)",
            pcc=float(report["pcc"]),
            wall_clock_ns=wall_ns,
            note="; ".join(notes),
        )
    if report.get("median_ns") is None:
        raise CardRunnerError(
            "the device profiler returned no kernel durations although the profiler environment "
            f"was set ({report.get('profiler_env')}); is this ttnn built with the profiler?",
            report,
        )
    return Run(
        "card",
        float(report["median_ns"]),
        "device kernel duration (median)",
        pcc=float(report["pcc"]),
        wall_clock_ns=wall_ns,
        note="; ".join(notes),
    )


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
        source=run.source,
        hardware=doc.hardware.name,
        hardware_sha256=doc.hardware.sha256,
        kernel=doc.problem.kernel,
        shape=dict(doc.problem.shape),
        candidate=doc.candidate,
        schedule_json=doc.to_json(),
        predicted_cycles=doc.prediction.latency_cycles,
        predicted_ns=doc.prediction.latency_us * 1e3,
        breakdown=dict(doc.prediction.breakdown),
        measured_ns=run.measured_ns,
        measured_what=run.measured_what,
        pcc=run.pcc,
        traffic_equal=run.traffic_equal,
        note="; ".join(
            x for x in (run.note, f"wall clock with trace {run.wall_clock_ns:.0f} ns" if run.wall_clock_ns else "") if x
        ),
    )
