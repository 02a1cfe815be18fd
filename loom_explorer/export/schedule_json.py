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

Reading is strict: UTF-8 JSON (``NaN``, ``Infinity`` and numbers that overflow a float are refused, though
Python's ``json`` module accepts them), every field of its JSON type (no ``"5"`` for 5), counts and cycles
>= 0, extents >= 1, the time limit finite and > 0; every problem is one line naming the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from loom_explorer.errors import LoomError
from loom_explorer.export.exporter import SolvedSchedule
from loom_explorer.hardware import list_hardware, load_hardware
from loom_explorer.hardware.schema import (
    HardwareSpec,
    parse_data_format,
    parse_fidelity,
)
from loom_explorer.hashing import file_sha256, hardware_sha256
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import KernelTarget, Placement, Problem, make_problem
from loom_explorer.program import list_kernels, load_program
from loom_explorer.program.load import shipped_kernels_dir
from loom_explorer.result import CandidateResult, Solution
from loom_explorer.solve.solver import SolveOptions
from loom_explorer.validate import referee

SCHEDULE_SCHEMA_VERSION: Final = 1
MAX_FILE_BYTES = 1 << 24  # a schedule document is a few KiB; an exported kernel embedding one, tens of KiB
_MAX_INT = (1 << 63) - 1  # the model's integers are 64-bit

Count = Annotated[int, Field(ge=0, le=_MAX_INT)]
Extent = Annotated[int, Field(ge=1, le=_MAX_INT)]


class ScheduleFileError(LoomError, ValueError):
    """A schedule document that cannot be read, or no longer matches its hardware, kernel or model."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class HardwareRecord(_Record):
    source: str  # the shipped name or YAML path it was loaded from
    name: str
    sha256: str  # of the validated specification (canonical JSON), not of the YAML text


class ProblemRecord(_Record):
    kernel: str  # the shipped name or .py path it was loaded from
    kernel_sha256: str
    shape: dict[str, Extent]
    formats: dict[str, str]
    fidelity: str
    fp32_acc: bool
    placements: dict[str, str]
    enabled: list[str]
    activation: str | None
    options: list[str]
    target: Literal["ttnn", "ttlang"] = "ttnn"  # whose kernels' buffers the L1 constraint counted


class SolverRecord(_Record):
    tool_version: str
    ortools_version: str
    time_limit_seconds: float = Field(gt=0)
    workers_per_model: int = Field(ge=1)
    seed: int = Field(ge=0, le=2**31 - 1)  # CP-SAT's random_seed is a 32-bit integer
    noc_bound: bool


class PredictionRecord(_Record):
    latency_cycles: Count
    latency_us: float = Field(ge=0)
    breakdown: dict[str, Count]
    l1_bytes: Count
    dram_read_bytes: Count


class ScheduleDocument(_Record):
    schema_version: Literal[1] = SCHEDULE_SCHEMA_VERSION
    created: str
    hardware: HardwareRecord
    problem: ProblemRecord
    candidate: str
    status: str
    pins: dict[str, Count]
    params: dict[str, Count]
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


def kernel_path(kernel: str) -> Path:
    return Path(kernel) if kernel.endswith(".py") else shipped_kernels_dir() / f"{kernel}.py"


def kernel_sha256(kernel: str) -> str:
    return file_sha256(kernel_path(kernel))


def schedule_document(
    hw: HardwareSpec,
    hw_source: str,
    kernel_source: str,
    problem: Problem,
    result: CandidateResult,
    options: SolveOptions,
    noc_bound: bool = True,
) -> ScheduleDocument:
    """The document of one solved candidate (``result`` must have a solution)."""
    s = result.solution
    if s is None:
        raise ScheduleFileError(
            f"candidate {result.candidate_name} has no schedule ({result.status}); nothing to export"
        )
    return ScheduleDocument(
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        hardware=HardwareRecord(source=hw_source, name=hw.name, sha256=hardware_sha256(hw)),
        problem=ProblemRecord(
            kernel=kernel_source,
            kernel_sha256=kernel_sha256(kernel_source),
            shape=dict(problem.shape),
            formats={k: v.value for k, v in problem.formats},
            fidelity=problem.fidelity.value,
            fp32_acc=problem.fp32_acc,
            placements={k: v.value for k, v in problem.placements},
            enabled=sorted(problem.enabled),
            activation=problem.activation,
            options=sorted(problem.options),
            target=problem.target.value,
        ),
        candidate=result.candidate_name,
        status=result.status,
        pins=dict(result.pins),
        params=s.values(),
        prediction=PredictionRecord(
            latency_cycles=s.latency_cycles,
            latency_us=round(hw.cycles_to_us(s.latency_cycles), 3),
            breakdown=dict(s.breakdown),
            l1_bytes=s.l1_bytes,
            dram_read_bytes=s.dram_read_bytes,
        ),
        solver=SolverRecord(
            tool_version=_package_version("loom-explorer"),
            ortools_version=_package_version("ortools"),
            time_limit_seconds=options.time_limit_seconds,
            workers_per_model=options.workers_per_model,
            seed=options.seed,
            noc_bound=noc_bound,
        ),
    )


class _NotFinite:
    """What the JSON reader puts in place of ``NaN``, ``Infinity`` or an overflowing number: no field accepts
    it, so validation names the field that holds it."""

    def __init__(self, text: str, why: str = "is not a finite number JSON allows") -> None:
        self.text, self.why = text, why

    def __repr__(self) -> str:
        return self.text


def _parse_float(text: str) -> float | _NotFinite:
    value = float(text)
    return value if math.isfinite(value) else _NotFinite(text)


def _parse_int(text: str) -> int | _NotFinite:
    if len(text) <= 20 and abs(value := int(text)) <= _MAX_INT:  # length first: int() of 5000 digits raises
        return value
    shown = text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"
    return _NotFinite(shown, "is too large (at most 2^63-1)")


def _json(text: str) -> Any:
    return json.loads(text, parse_constant=_NotFinite, parse_float=_parse_float, parse_int=_parse_int)


def _field_error(origin: str, err: Any) -> str:
    where = ".".join(str(p) for p in err["loc"]) or "(top level)"
    if isinstance(err["input"], _NotFinite):
        return f"{origin}: field {where}: {err['input'].text[:30]} {err['input'].why}"
    got = "" if err["type"] == "missing" or isinstance(err["input"], (dict, list)) else f" (got {err['input']!r:.40})"
    return f"{origin}: field {where}: {err['msg']}{got}"


def solved_document(solved: SolvedSchedule) -> ScheduleDocument:
    """The document of an exporter's :class:`SolvedSchedule` (``schedule_document`` of its parts)."""
    return schedule_document(
        solved.hw,
        solved.hw_source,
        solved.kernel_source,
        solved.problem,
        solved.result,
        solved.options,
        solved.noc_bound,
    )


def parse_schedule_document(text: str, origin: str = "schedule") -> ScheduleDocument:
    """The document in ``text``; ScheduleFileError, one line per problem naming ``origin`` and the field."""
    try:
        raw = _json(text)
    except json.JSONDecodeError as exc:
        raise ScheduleFileError(f"{origin}: not JSON: {exc}") from None
    except RecursionError:
        raise ScheduleFileError(f"{origin}: not a schedule document: nested too deeply") from None
    version_value = raw.get("schema_version", SCHEDULE_SCHEMA_VERSION) if isinstance(raw, dict) else None
    if isinstance(raw, dict) and (type(version_value) is not int or version_value != SCHEDULE_SCHEMA_VERSION):
        raise ScheduleFileError(
            f"{origin}: schema_version {raw['schema_version']!r}; this tool reads {SCHEDULE_SCHEMA_VERSION}"
        )
    try:
        return ScheduleDocument.model_validate(raw, strict=True)
    except ValidationError as exc:
        raise ScheduleFileError("\n".join(_field_error(origin, err) for err in exc.errors())) from None


def load_schedule_document(path: str | Path) -> ScheduleDocument:
    return parse_schedule_document(read_text(path, "schedule file"), str(path))


def read_text(path: str | Path, what: str) -> str:
    """The UTF-8 text of ``path``; ScheduleFileError naming it when it is missing, unreadable or not text."""
    p = Path(path)
    try:
        if not p.is_file():
            raise ScheduleFileError(f"{what} {p} " + ("is not a regular file" if p.exists() else "does not exist"))
        with p.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ScheduleFileError(f"{what} {p}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ScheduleFileError(f"{what} {p} is larger than {MAX_FILE_BYTES:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScheduleFileError(f"{what} {p} is not UTF-8 text") from None


def _source(field: str, named: str, shipped: list[str], given: str | Path | None, flag: str) -> str:
    """What to load for a document's hardware or kernel: a shipped name as it is; otherwise only the file the
    person running the tool gave (``given``). A document is data: it never names a file to open or, for a
    kernel, Python to run."""
    if named in shipped:
        return named
    if given is None:
        raise ScheduleFileError(
            f"{field}: the document names the file {named!r}, and a schedule document never "
            f"opens a file it names; give that file yourself ({flag} FILE) to use it"
        )
    return str(given)


def rebuild(
    doc: ScheduleDocument, hw_file: str | Path | None = None, kernel_file: str | Path | None = None
) -> RebuiltSchedule:
    """The document's schedule, rebuilt and re-evaluated (module docstring); raises ScheduleFileError.

    A shipped hardware or kernel name in the document is loaded as such. A file it names instead is never
    opened: ``hw_file`` / ``kernel_file`` are the files the person running the tool names for them (from the
    command line, or the arguments this process made the document from); their hashes must match the
    document's."""
    hw_source = _source("hardware", doc.hardware.source, list_hardware(), hw_file, "--hw")
    try:
        hw = load_hardware(hw_source)
    except ValueError as exc:
        raise ScheduleFileError(f"hardware: {exc}") from None
    if hardware_sha256(hw) != doc.hardware.sha256:
        raise ScheduleFileError(
            f"hardware: {hw_source} has changed since the schedule was exported (its sha256 differs)"
        )
    p = doc.problem
    kernel = _source("problem.kernel", p.kernel, list_kernels(), kernel_file, "--kernel")
    try:
        if kernel_sha256(kernel) != p.kernel_sha256:
            raise ScheduleFileError(
                f"problem.kernel: {kernel} has changed since the schedule was exported (its sha256 differs)"
            )
        program = load_program(kernel)
        output = program.outputs[0].name
        if output not in p.formats:
            raise ScheduleFileError(f"problem.formats: no format for the output tensor {output!r}")
        problem = make_problem(
            program,
            p.shape,
            parse_data_format(p.formats[output]),
            parse_fidelity(p.fidelity),
            formats={k: parse_data_format(v) for k, v in p.formats.items()},
            placements={k: Placement(v) for k, v in p.placements.items()},
            fp32_acc=p.fp32_acc,
            enabled=set(p.enabled),
            activation=p.activation,
            options=set(p.options),
            target=KernelTarget(p.target),
        )
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
        raise ScheduleFileError(
            "params: "
            + "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"unknown {', '.join(unknown)}" if unknown else "",
                )
                if part
            )
        )
    off = [f"{n}={v} (params say {doc.params.get(n)})" for n, v in doc.pins.items() if doc.params.get(n) != v]
    if off:
        raise ScheduleFileError(f"pins: {', '.join(off)}: a pinned value must equal the parameter's")
    verdict = referee(schedule, dict(doc.params))
    if verdict.solution is None:
        raise ScheduleFileError(f"params: not a legal schedule of {doc.candidate}: {'; '.join(verdict.violations)}")
    solution = verdict.solution
    if solution.latency_cycles != doc.prediction.latency_cycles:
        raise ScheduleFileError(
            f"prediction.latency_cycles: the model now predicts {solution.latency_cycles:,} "
            f"cycles for these parameters, the document says {doc.prediction.latency_cycles:,}"
        )
    return RebuiltSchedule(hw, problem, schedule, solution)


def rebuild_own(doc: ScheduleDocument) -> RebuiltSchedule:
    """``rebuild`` of a document this process made from its user's own arguments (never one read from a
    file): the hardware and kernel files it names are the ones that user gave."""
    return rebuild(doc, hw_file=doc.hardware.source, kernel_file=doc.problem.kernel)


class JsonExporter:
    """``--format json``: the schedule document (module docstring), which ``rebuild`` reads back."""

    name = "json"
    order = 30
    suffix = ".json"
    summary = "the schedule document"
    noun = "a schedule document"
    label = "schedule document (JSON, round-trips)"
    kernel_target: KernelTarget | None = None

    def can_export(self, solved: SolvedSchedule) -> str | None:
        return None

    def export(self, solved: SolvedSchedule) -> str:
        return solved_document(solved).to_json()


EXPORTER = JsonExporter()
