"""The rows of the results store as frozen records: measurements, sweep results and proven solves.

A measurement records the hardware (and its spec's sha256, ``hashing.py``), kernel, shape, candidate, the
schedule document, the prediction (cycles, ns, breakdown), what was measured (``measured_ns``, ``None`` for
a simulator run, whose ticks are not cycles; the PCC and whether the traffic matched the model, for
simulator runs), where it came from (``card``, ``simulator`` or ``report``), tool versions and time.

A sweep result (``loom-explorer sweep``) records one op on one chip: the op (kernel, shape, data format,
fidelity, program options: a sorted tuple of names, e.g. ``("causal",)``), the best schedule and the
runner-up (candidate, parameters, predicted latency, utilisation), ttnn's default config's predicted latency
for the same op, or why the op failed. A mesh sweep's op (``sweep/mesh_task.py``) also records the precision
preset its weights ran at (``precision``, ``mesh/precision.py``: its ``dtype`` is the activations'); a chip's
op, and a record written before the field was kept, has ``""``. Its key (hardware sha256, tool version, op)
makes a re-run skip what is already solved.

A proven solve (``SolvedRecord``) is the results of one solve, every candidate proven, as JSON the solver's
layer writes and reads (``solve/memory.py``), under the key of everything that determines them; the other
columns say what it was, for a reader of the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Literal

Source = Literal["card", "simulator", "report"]
SweepStatus = Literal["ok", "no_schedule", "failed"]


@cache
def package_version(name: str) -> str:
    """The installed version of ``name`` (read once per process: every Measurement carries two)."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class Measurement:
    source: Source
    hardware: str
    hardware_sha256: str
    kernel: str
    shape: dict[str, int]
    candidate: str
    schedule_json: str
    predicted_cycles: int | None
    predicted_ns: float | None
    breakdown: dict[str, int]
    measured_ns: float | None
    measured_what: str  # e.g. "device kernel duration", "wall clock with trace", "simulated (no time)"
    pcc: float | None = None
    traffic_equal: bool | None = None
    note: str = ""
    created: str = field(default_factory=_now)
    tool_version: str = field(default_factory=lambda: package_version("loom-explorer"))
    ortools_version: str = field(default_factory=lambda: package_version("ortools"))


@dataclass(frozen=True, slots=True)
class SweepChoice:
    """One schedule a sweep kept: candidate, parameter values, predicted latency, utilisation (ideal
    compute cycles over the predicted latency). On a mesh (``sweep/mesh_task.py``): the op's split, its
    per-chip problem's dims, its share of the layer and, in ``collectives``, what that share holds (one line
    each); kept in the same JSON column, and written only when there are some."""

    candidate: str
    params: tuple[tuple[str, int], ...]
    latency_cycles: int
    latency_ns: float
    utilisation: float
    collectives: tuple[str, ...] = ()

    def to_json(self) -> str:
        d: dict[str, object] = {
            "candidate": self.candidate,
            "params": dict(self.params),
            "latency_cycles": self.latency_cycles,
            "latency_ns": self.latency_ns,
            "utilisation": self.utilisation,
        }
        if self.collectives:
            d["collectives"] = list(self.collectives)
        return json.dumps(d)

    @staticmethod
    def from_json(text: str) -> SweepChoice:
        d = json.loads(text)
        return SweepChoice(
            d["candidate"],
            tuple(d["params"].items()),
            d["latency_cycles"],
            d["latency_ns"],
            d["utilisation"],
            tuple(d.get("collectives", ())),
        )


@dataclass(frozen=True, slots=True)
class SweepRecord:
    """One op of a sweep on one chip (module docstring)."""

    op_key: str
    hardware: str
    hardware_sha256: str
    tool_version: str
    label: str
    kernel: str
    shape: str
    dtype: str
    fidelity: str
    options: tuple[str, ...]  # the program options switched on, sorted (stored as a JSON list)
    status: SweepStatus
    error: str
    best: SweepChoice | None
    runner_up: SweepChoice | None
    ideal_ns: float | None
    ttnn_default_ns: float | None
    ttnn_default_note: str
    solve_seconds: float
    created: str = field(default_factory=_now)
    precision: str = ""  # a mesh op's weights' precision preset (module docstring); "" when none was recorded

    @property
    def speedup(self) -> float | None:
        """ttnn's default config's predicted latency over ours."""
        if self.best is None or not self.ttnn_default_ns:
            return None
        return self.ttnn_default_ns / self.best.latency_ns


@dataclass(frozen=True, slots=True)
class SolvedRecord:
    """One proven solve (module docstring): ``results`` is opaque here."""

    key: str
    hardware: str
    hardware_sha256: str
    kernel: str
    problem: str  # e.g. "M=4096,N=4096,K=4096 bfloat16 hifi2"
    results: str
    created: str = field(default_factory=_now)
    tool_version: str = field(default_factory=lambda: package_version("loom-explorer"))
