"""One solved schedule in each export format, for the CLI (``loom-explorer export``) and the explorer."""

from __future__ import annotations

import json
from typing import Literal

from loom_explorer.export.npe_workload import npe_workload
from loom_explorer.export.schedule_json import rebuild_own, schedule_document
from loom_explorer.export.ttlang import ttlang_source
from loom_explorer.export.ttnn_config import ttnn_source
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Problem
from loom_explorer.solve.result import CandidateResult
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
    built = rebuild_own(doc)
    return ttlang_source(built, doc) if fmt == "ttlang" else ttnn_source(built, doc)
