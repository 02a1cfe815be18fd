"""A solved schedule as a versioned JSON document that round-trips.

``schedule_document`` records everything needed to rebuild the same schedule: the hardware (as given, and
the SHA-256 of its validated contents), the kernel (name or path, and the SHA-256 of its file), the
problem (shape, formats, fidelity, placements, options), the candidate, the pins and every parameter
value, the prediction (latency, breakdown, L1, DRAM bytes), and how it was solved (OR-Tools version,
time limit, workers, seed, whether the NoC link terms were in the model).

``rebuild`` loads the document's hardware and kernel, checks both hashes, rebuilds the candidate's
symbolic schedule and evaluates the recorded parameters with the referee: the predicted latency must come
out identical, or the document no longer describes what this version of the tool would predict
(:class:`ScheduleFileError` says which part changed).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import (
    HardwareSpec,
    parse_data_format,
    parse_fidelity,
)
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Placement, Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.program.load import shipped_kernels_dir
from loom_explorer.solve.result import CandidateResult, Solution
from loom_explorer.solve.solver import SolveOptions
from loom_explorer.validate import referee

SCHEDULE_SCHEMA_VERSION = 1


class ScheduleFileError(ValueError):
    """A schedule document that cannot be read, or no longer matches its hardware, kernel or model."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HardwareRecord(_Record):
    source: str  # the shipped name or YAML path it was loaded from
    name: str
    sha256: str  # of the validated specification (canonical JSON), not of the YAML text


class ProblemRecord(_Record):
    kernel: str  # the shipped name or .py path it was loaded from
    kernel_sha256: str
    shape: dict[str, int]
    formats: dict[str, str]
    fidelity: str
    fp32_acc: bool
    placements: dict[str, str]
    enabled: list[str]
    activation: str | None
    options: list[str]


class SolverRecord(_Record):
    tool_version: str
    ortools_version: str
    time_limit_seconds: float
    workers_per_model: int
    seed: int
    noc_bound: bool


class PredictionRecord(_Record):
    latency_cycles: int
    latency_us: float
    breakdown: dict[str, int]
    l1_bytes: int
    dram_read_bytes: int


class ScheduleDocument(_Record):
    schema_version: Literal[1] = SCHEDULE_SCHEMA_VERSION
    created: str
    hardware: HardwareRecord
    problem: ProblemRecord
    candidate: str
    status: str
    pins: dict[str, int]
    params: dict[str, int]
    prediction: PredictionRecord
    solver: SolverRecord

    def to_json(self) -> str:
        return self.model_dump_json(indent=2) + "\n"


@dataclass(frozen=True, slots=True)
class RebuiltSchedule:
    hardware: HardwareSpec
    problem: Problem
    schedule: SymbolicSchedule
    solution: Solution


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def hardware_sha256(hw: HardwareSpec) -> str:
    return hashlib.sha256(hw.model_dump_json().encode()).hexdigest()


def kernel_path(kernel: str) -> Path:
    return Path(kernel) if kernel.endswith(".py") else shipped_kernels_dir() / f"{kernel}.py"


def kernel_sha256(kernel: str) -> str:
    return hashlib.sha256(kernel_path(kernel).read_bytes()).hexdigest()


def schedule_document(hw: HardwareSpec, hw_source: str, kernel_source: str, problem: Problem,
                      result: CandidateResult, options: SolveOptions, noc_bound: bool = True) -> ScheduleDocument:
    """The document of one solved candidate (``result`` must have a solution)."""
    s = result.solution
    if s is None:
        raise ScheduleFileError(f"candidate {result.candidate_name} has no schedule ({result.status}); "
                                "nothing to export")
    return ScheduleDocument(
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        hardware=HardwareRecord(source=hw_source, name=hw.name, sha256=hardware_sha256(hw)),
        problem=ProblemRecord(
            kernel=kernel_source, kernel_sha256=kernel_sha256(kernel_source), shape=dict(problem.shape),
            formats={k: v.value for k, v in problem.formats}, fidelity=problem.fidelity.value,
            fp32_acc=problem.fp32_acc, placements={k: v.value for k, v in problem.placements},
            enabled=sorted(problem.enabled), activation=problem.activation, options=sorted(problem.options)),
        candidate=result.candidate_name, status=result.status, pins=dict(result.pins), params=s.values(),
        prediction=PredictionRecord(latency_cycles=s.latency_cycles, latency_us=round(hw.cycles_to_us(s.latency_cycles), 3),
                                    breakdown=dict(s.breakdown), l1_bytes=s.l1_bytes,
                                    dram_read_bytes=s.dram_read_bytes),
        solver=SolverRecord(tool_version=_package_version("loom-explorer"),
                            ortools_version=_package_version("ortools"),
                            time_limit_seconds=options.time_limit_seconds,
                            workers_per_model=options.workers_per_model, seed=options.seed, noc_bound=noc_bound),
    )


def parse_schedule_document(text: str, origin: str = "schedule") -> ScheduleDocument:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScheduleFileError(f"{origin}: not JSON: {exc}") from None
    if isinstance(raw, dict) and raw.get("schema_version") not in (None, SCHEDULE_SCHEMA_VERSION):
        raise ScheduleFileError(f"{origin}: schema_version {raw['schema_version']!r}; this tool reads "
                                f"{SCHEDULE_SCHEMA_VERSION}")
    try:
        return ScheduleDocument.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ScheduleFileError(f"{origin}: field {where}: {first['msg']}") from None


def load_schedule_document(path: str | Path) -> ScheduleDocument:
    return parse_schedule_document(read_text(path, "schedule file"), str(path))


def read_text(path: str | Path, what: str) -> str:
    """The UTF-8 text of ``path``; ScheduleFileError naming it when it is missing or not text."""
    p = Path(path)
    if not p.is_file():
        raise ScheduleFileError(f"{what} {p} does not exist")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ScheduleFileError(f"{what} {p} is not UTF-8 text") from None


def rebuild(doc: ScheduleDocument) -> RebuiltSchedule:
    """The document's schedule, rebuilt and re-evaluated (module docstring); raises ScheduleFileError."""
    try:
        hw = load_hardware(doc.hardware.source)
    except ValueError as exc:
        raise ScheduleFileError(f"hardware: {exc}") from None
    if hardware_sha256(hw) != doc.hardware.sha256:
        raise ScheduleFileError(f"hardware: {doc.hardware.source} has changed since the schedule was exported "
                                "(its sha256 differs)")
    p = doc.problem
    try:
        if kernel_sha256(p.kernel) != p.kernel_sha256:
            raise ScheduleFileError(f"problem.kernel: {p.kernel} has changed since the schedule was exported "
                                    "(its sha256 differs)")
        program = load_program(p.kernel)
        output = program.outputs[0].name
        if output not in p.formats:
            raise ScheduleFileError(f"problem.formats: no format for the output tensor {output!r}")
        problem = make_problem(
            program, p.shape, parse_data_format(p.formats[output]), parse_fidelity(p.fidelity),
            formats={k: parse_data_format(v) for k, v in p.formats.items()},
            placements={k: Placement(v) for k, v in p.placements.items()}, fp32_acc=p.fp32_acc,
            enabled=set(p.enabled), activation=p.activation, options=set(p.options))
    except (OSError, ValueError) as exc:
        if isinstance(exc, ScheduleFileError):
            raise
        raise ScheduleFileError(f"problem: {exc}") from None
    candidate = next((c for c in enumerate_candidates(problem) if c.name == doc.candidate), None)
    if candidate is None:
        raise ScheduleFileError(f"candidate: {doc.candidate!r} is not a candidate of this problem")
    schedule = build_schedule(hw, problem, candidate, doc.solver.noc_bound)
    missing = [n for n in schedule.param_names if n not in doc.params]
    unknown = [n for n in doc.params if n not in schedule.param_names]
    if missing or unknown:
        raise ScheduleFileError("params: " + "; ".join(
            part for part in (f"missing {', '.join(missing)}" if missing else "",
                              f"unknown {', '.join(unknown)}" if unknown else "") if part))
    off = [f"{n}={v} (params say {doc.params.get(n)})" for n, v in doc.pins.items() if doc.params.get(n) != v]
    if off:
        raise ScheduleFileError(f"pins: {', '.join(off)}: a pinned value must equal the parameter's")
    verdict = referee(schedule, dict(doc.params))
    if verdict.solution is None:
        raise ScheduleFileError(f"params: not a legal schedule of {doc.candidate}: {'; '.join(verdict.violations)}")
    solution = verdict.solution
    if solution.latency_cycles != doc.prediction.latency_cycles:
        raise ScheduleFileError(f"prediction.latency_cycles: the model now predicts {solution.latency_cycles:,} "
                                f"cycles for these parameters, the document says {doc.prediction.latency_cycles:,}")
    return RebuiltSchedule(hw, problem, schedule, solution)
