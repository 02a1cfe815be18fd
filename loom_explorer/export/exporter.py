"""What an export format is: the :class:`Exporter` protocol, what it exports (:class:`SolvedSchedule`) and the
error for a schedule a format cannot express.

An exporter has a ``name`` (``--format NAME``), a file-name ``suffix``, words for the command line's help and
messages and for the explorer's download menu, the kernels whose circular buffers the solve should count for it
(``kernel_target``: ``None`` keeps the problem's), its place in those lists (``order``), ``can_export`` (why it
cannot write a solved schedule, or ``None``) and ``export`` (the file's text). A format is a plug-in: one
module with one exporter object, registered under the entry-point group ``loom_explorer.export_formats``
(``export/formats.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from loom_explorer.errors import LoomError
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import KernelTarget, Problem
from loom_explorer.result import CandidateResult
from loom_explorer.solve.solver import SolveOptions


class ExportError(LoomError, ValueError):
    """A schedule the chosen export format cannot express; the message says why."""


@dataclass(frozen=True, slots=True)
class SolvedSchedule:
    """One candidate's solved schedule, with what an exported file records about where it came from:
    ``hw_source`` and ``kernel_source`` as the user named them (a shipped name or a path), the solve
    ``options`` and whether the NoC bound was in the latency."""

    schedule: SymbolicSchedule
    result: CandidateResult
    hw_source: str
    kernel_source: str
    options: SolveOptions
    noc_bound: bool = True

    @property
    def hw(self) -> HardwareSpec:
        return self.schedule.hardware

    @property
    def problem(self) -> Problem:
        return self.schedule.problem

    @property
    def values(self) -> dict[str, int]:
        """The schedule's parameter values; ExportError when the candidate has no schedule."""
        solution = self.result.solution
        if solution is None:
            raise ExportError(
                f"candidate {self.result.candidate_name} has no schedule ({self.result.status}); nothing to export"
            )
        return solution.values()


@runtime_checkable
class Exporter(Protocol):
    """One export format (module docstring)."""

    @property
    def name(self) -> str: ...

    @property
    def suffix(self) -> str:
        """Appended to a file name made for an export (``_ttnn.py``)."""
        ...

    @property
    def summary(self) -> str:
        """What the file is, for ``export --help`` (``TTNN program config and the call``)."""
        ...

    @property
    def noun(self) -> str:
        """One file of the format in a sentence (``a TTNN program config``)."""
        ...

    @property
    def label(self) -> str:
        """The explorer's download menu entry (``TTNN program config and call (.py)``)."""
        ...

    @property
    def order(self) -> int:
        """Its place in the command line's list of formats and the explorer's download menu (smaller first)."""
        ...

    @property
    def kernel_target(self) -> KernelTarget | None:
        """Whose kernels run the exported file, so whose circular buffers the solve counts (``None``: the
        problem's own target)."""
        ...

    def can_export(self, solved: SolvedSchedule) -> str | None:
        """Why this format cannot express ``solved`` (``None``: it can)."""
        ...

    def export(self, solved: SolvedSchedule) -> str:
        """The file's text; ExportError (the ``can_export`` reason) when the format cannot express it."""
        ...
