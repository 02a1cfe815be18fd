"""The export formats (``loom-explorer export --format``, the explorer's downloads): one :class:`Exporter` per
format (``export/exporter.py``), each a plug-in of the entry-point group ``loom_explorer.export_formats``
(``plugins.py``), offered in their ``order``.

A new format is one module with one exporter object, and one entry-point line in its ``pyproject.toml``::

    [project.entry-points."loom_explorer.export_formats"]
    myformat = "my_package.my_format:EXPORTER"
"""

from __future__ import annotations

from loom_explorer.export.exporter import Exporter, ExportError, SolvedSchedule
from loom_explorer.plugins import registered

GROUP = "loom_explorer.export_formats"


def exporters() -> tuple[Exporter, ...]:
    """Every registered export format, in their ``order`` (then by name)."""
    found = registered(GROUP, Exporter)  # type: ignore[type-abstract]  # a runtime-checkable protocol
    return tuple(sorted(found.values(), key=lambda e: (e.order, e.name)))


def export_formats() -> tuple[str, ...]:
    """The names of the export formats, in order (``--format``'s choices)."""
    return tuple(e.name for e in exporters())


def exporter(name: str) -> Exporter:
    """The exporter of format ``name``; ExportError listing the formats when there is none."""
    for e in exporters():
        if e.name == name:
            return e
    raise ExportError(f"no export format {name!r}; formats: {', '.join(export_formats())}")


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
