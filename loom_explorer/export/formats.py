"""The export formats (``loom-explorer export --format``, the explorer's downloads): one :class:`Exporter` per
format (``export/exporter.py``), listed here in the order the command line offers them.

A new format is one module with one exporter class, and one entry in ``EXPORTERS``.
"""

from __future__ import annotations

from loom_explorer.export.exporter import Exporter, ExportError, SolvedSchedule
from loom_explorer.export.npe_workload import NpeExporter
from loom_explorer.export.schedule_json import JsonExporter
from loom_explorer.export.ttlang import TtLangExporter
from loom_explorer.export.ttnn_config import TtnnExporter

EXPORTERS: tuple[Exporter, ...] = (TtLangExporter(), TtnnExporter(), JsonExporter(), NpeExporter())
EXPORT_FORMATS: tuple[str, ...] = tuple(e.name for e in EXPORTERS)


def exporter(name: str) -> Exporter:
    """The exporter of format ``name``; ExportError listing the formats when there is none."""
    for e in EXPORTERS:
        if e.name == name:
            return e
    raise ExportError(f"no export format {name!r}; formats: {', '.join(EXPORT_FORMATS)}")


def export_blocker(name: str, solved: SolvedSchedule) -> str | None:
    """Why ``solved`` cannot be exported as ``name`` (``None``: it can): no schedule, or the format's reason."""
    if solved.result.solution is None:
        return f"no schedule to export ({solved.result.status})"
    return exporter(name).can_export(solved)


def export_text(name: str, solved: SolvedSchedule) -> str:
    """The file text of ``solved`` in format ``name``; ExportError when it cannot be exported
    (``export_blocker`` says why), ScheduleFileError when the schedule no longer rebuilds."""
    why = export_blocker(name, solved)
    if why is not None:
        raise ExportError(why)
    return exporter(name).export(solved)
