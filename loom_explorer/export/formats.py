"""One solved schedule in each export format, for the CLI (``loom-explorer export``) and the explorer."""

from __future__ import annotations

import dataclasses
import json
from typing import Literal

from loom_explorer.export.npe_workload import npe_workload
from loom_explorer.export.schedule_json import rebuild_own, schedule_document
from loom_explorer.export.ttlang import ttlang_source
from loom_explorer.export.ttlang_common import ExportError
from loom_explorer.export.ttnn_config import ttnn_source
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.build import build_schedule
from loom_explorer.model.expr import evaluate
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import KernelTarget, Problem
from loom_explorer.result import CandidateResult
from loom_explorer.solve.solver import SolveOptions
from loom_explorer.traffic.transfers import schedule_transfers

ExportFormat = Literal["ttlang", "ttnn", "json", "npe"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("ttlang", "ttnn", "json", "npe")
SUFFIXES: dict[ExportFormat, str] = {"ttlang": ".py", "ttnn": "_ttnn.py", "json": ".json", "npe": "_npe.json"}


def export_text(fmt: ExportFormat, hw: HardwareSpec, hw_source: str, kernel_source: str, problem: Problem,
                schedule: SymbolicSchedule, result: CandidateResult, options: SolveOptions,
                noc_bound: bool = True) -> str:
    """The file text of ``result`` (a solved candidate of ``schedule``) in format ``fmt``.

    Raises ScheduleFileError (no schedule) or ExportError (the format cannot express it)."""
    doc = schedule_document(hw, hw_source, kernel_source, problem, result, options, noc_bound)
    if fmt == "json":
        return doc.to_json()
    if fmt == "npe":
        return json.dumps(npe_workload(hw, schedule_transfers(hw, schedule, doc.params)), indent=1) + "\n"
    if fmt == "ttlang":
        blocker = ttlang_l1_blocker(hw, problem, schedule, doc.params)
        if blocker:
            raise ExportError(blocker)
    built = rebuild_own(doc)
    return ttlang_source(built, doc) if fmt == "ttlang" else ttnn_source(built, doc)


def ttlang_l1_blocker(hw: HardwareSpec, problem: Problem, schedule: SymbolicSchedule,
                      values: dict[str, int]) -> str | None:
    """Why a schedule solved for TTNN's kernels cannot be written as a TT-Lang kernel: the TT-Lang kernel's own
    circular buffers (``Problem.target``) overflow L1 at these values. None when they fit (or the schedule was
    solved for the TT-Lang kernels, whose buffers the solve already counted)."""
    if problem.target is KernelTarget.ttlang:
        return None
    ttlang = build_schedule(hw, dataclasses.replace(problem, target=KernelTarget.ttlang), schedule.candidate)
    need = evaluate(ttlang.l1_bytes, values)
    if need <= hw.l1.usable_bytes:
        return None
    return (f"the TT-Lang kernel of this schedule needs {need:,} B of circular buffers per core, more than the "
            f"{hw.l1.usable_bytes:,} B usable (it was solved for TTNN's kernels, "
            f"{evaluate(schedule.l1_bytes, values):,} B): solve for the TT-Lang kernels (--target ttlang)")
