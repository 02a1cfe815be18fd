"""A kernel family's TT-Lang writer: the plug-in the TT-Lang export and ``verify`` dispatch to.

Families register a :class:`TtlangWriter` under the entry-point group ``loom_explorer.ttlang_writers``
(``loom_explorer/plugins.py``), named as the family. A writer says why a candidate cannot be written
(``unsupported``, None when it can), writes the kernel file of a solved schedule (``source``), says where each
of the problem's tensors sits in the file's host arguments (``host_tensors``: :class:`HostTensor`, the layouts
the writer's docstring gives) and computes the problem's outputs from its inputs in torch (``reference``: by
the program's meaning, fp32, each ``[items, rows, cols]``), which ``verify`` compares the kernel's outputs with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loom_explorer.errors import LoomError
from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.mapping.variants import family_name
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.plugins import registered
from loom_explorer.problem import Problem

GROUP = "loom_explorer.ttlang_writers"


class KernelContractError(LoomError, ValueError):
    """The kernel's host tensors cannot hold the schedule's problem (the message names the tensor)."""


@dataclass(frozen=True, slots=True)
class HostTensor:
    """Where a problem tensor sits in the kernel's host arguments: argument ``argument``, ``items`` blocks of
    ``rows_per_item`` rows (0: the whole tensor is one block), the logical ``rows x cols`` elements at each
    block's top left, zero padding elsewhere."""

    name: str
    argument: int
    items: int
    rows_per_item: int
    rows: int
    cols: int

    def take(self, host: Sequence[Any]) -> Any:
        """The tensor's logical elements, ``[items, rows, cols]`` fp32, from the host arguments ``host``."""
        if self.argument >= len(host):
            raise KernelContractError(
                f"kernel_arguments() gives {len(host)} tensors; {self.name} is argument {self.argument}"
            )
        t = host[self.argument].float()
        height = self.rows_per_item or t.shape[0]
        if t.dim() != 2 or t.shape[0] < self.items * height or height < self.rows or t.shape[1] < self.cols:
            raise KernelContractError(
                f"kernel argument {self.argument} ({self.name}) is {list(t.shape)}: it cannot hold {self.items} x "
                f"{self.rows} x {self.cols} elements in blocks of {height} rows, as the schedule's problem needs"
            )
        return t[: self.items * height].reshape(self.items, height, t.shape[1])[:, : self.rows, : self.cols]


HostTensors = tuple[tuple[HostTensor, ...], tuple[HostTensor, ...]]
"""(the problem's inputs, its outputs) in the kernel's host arguments."""


@dataclass(frozen=True, slots=True)
class TtlangWriter:
    """One kernel family's TT-Lang writer (module docstring)."""

    name: str
    unsupported: Callable[[SymbolicSchedule], str | None]
    source: Callable[[RebuiltSchedule, ScheduleDocument], str]
    host_tensors: Callable[[RebuiltSchedule], HostTensors]
    reference: Callable[[RebuiltSchedule, Mapping[str, Any]], dict[str, Any]]


def ttlang_writers() -> Mapping[str, TtlangWriter]:
    """Every registered TT-Lang writer, by family name."""
    return registered(GROUP, TtlangWriter)


def ttlang_writer(problem: Problem, candidate: Candidate | None = None) -> TtlangWriter | None:
    """The TT-Lang writer of ``candidate``'s kernel family (``Candidate.family``) when it names one, else of
    ``problem``'s (None: the family registers none)."""
    return ttlang_writers().get(family_name(problem.program, candidate))
