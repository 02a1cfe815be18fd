"""A schedule as a self-contained TT-Lang kernel file, written by its kernel family's writer (a plug-in:
``writer.py``; each family's in ``families/<family>/ttlang.py``).

The file runs unchanged under ``tt-lang-sim FILE`` (CPU) and ``python FILE`` on a card with tt-lang; it
builds random inputs, runs the kernel, checks the result against torch (PCC) and prints one line
``LOOM_RESULT {"pcc": ...}`` that ``loom-explorer verify`` reads. The schedule document it was made from
(``export/schedule_json.py``) is embedded at the end, so the file can be verified on its own.

The file is written in the language both the TT-Lang compiler and the simulator take (no ``slice``
objects, no ``return`` in a thread, no zero fill; docs/export.md), its dataflow buffers are exactly the
model's L1 buffers (``model/constraints/l1_capacity.py``), and it defines ``KERNEL`` (the operation) and
``kernel_arguments()`` (the host tensors in argument order), which the compile driver and ``main()`` use.
"""

from __future__ import annotations

import dataclasses

from loom_explorer.export.exporter import ExportError, SolvedSchedule
from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument, rebuild_own, solved_document
from loom_explorer.hardware.schema import DataFormat, HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.build import build_schedule
from loom_explorer.model.constraints.ttlang_export import FAMILY as TTLANG_EXPORT
from loom_explorer.model.expr import evaluate
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import KernelTarget, Problem
from loom_explorer.program.family import Structure
from loom_explorer.program.structure import analyse_program, program_family
from loom_explorer.targets.ttlang.writer import TtlangWriter, ttlang_writer


def unsupported_reason(schedule: SymbolicSchedule) -> str | None:
    """Why TT-Lang export cannot write this candidate's schedules (None: it can)."""
    try:
        writer = _writer(schedule.problem, schedule.candidate)
    except ExportError as exc:
        return str(exc)
    return writer.unsupported(schedule)


def _writer(problem: Problem, candidate: Candidate) -> TtlangWriter:
    """The writer of ``candidate``'s kernel family (a plug-in: ``writer.py``), after the checks every
    export needs."""
    _check_common(problem)
    writer = ttlang_writer(problem, candidate)
    if writer is None:
        family = program_family(problem.program)
        raise ExportError(f"TT-Lang export writes no kernel for the {family.name} family ({family.description})")
    return writer


def _check_common(problem: Problem) -> Structure:
    """What every TT-Lang export needs: DRAM-interleaved bfloat16 tensors."""
    placed = [t for t, p in problem.placements if p.value != "dram"]
    if placed:
        raise ExportError(
            f"TT-Lang export reads and writes DRAM-interleaved tensors; {', '.join(placed)} is placed in L1"
        )
    formats = {fmt for _, fmt in problem.formats}
    if not formats <= {DataFormat.bfloat16}:
        raise ExportError(
            "TT-Lang export writes bfloat16 kernels so far; this problem uses "
            f"{', '.join(sorted(f.value for f in formats))}"
        )
    return analyse_program(problem.program)


def ttlang_source(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    """The kernel file of a schedule (module docstring; another family's: its writer's); ExportError for what
    it cannot express."""
    return _writer(built.problem, built.schedule.candidate).source(built, doc)


def ttlang_l1_blocker(
    hw: HardwareSpec, problem: Problem, schedule: SymbolicSchedule, values: dict[str, int]
) -> str | None:
    """Why a schedule solved for TTNN's kernels cannot be written as a TT-Lang kernel: the TT-Lang kernel's own
    circular buffers (``Problem.target``) overflow L1 at these values. None when they fit (or the schedule was
    solved for the TT-Lang kernels, whose buffers the solve already counted)."""
    if problem.target is KernelTarget.ttlang:
        return None
    ttlang = build_schedule(hw, dataclasses.replace(problem, target=KernelTarget.ttlang), schedule.candidate)
    need = evaluate(ttlang.l1_bytes, values)
    if need <= hw.l1.usable_bytes:
        return None
    return (
        f"the TT-Lang kernel of this schedule needs {need:,} B of circular buffers per core, more than the "
        f"{hw.l1.usable_bytes:,} B usable (it was solved for TTNN's kernels, "
        f"{evaluate(schedule.l1_bytes, values):,} B): solve for the TT-Lang kernels (--target ttlang)"
    )


def ttlang_rule_blocker(
    hw: HardwareSpec, problem: Problem, schedule: SymbolicSchedule, values: dict[str, int]
) -> str | None:
    """Why the TT-Lang writer cannot write these values: the first writer rule (``ttlang_export`` constraint
    family, ``model/constraints/ttlang_export.py``) they break. None when they keep every one, as a schedule
    solved for the TT-Lang kernels does; one solved for TTNN's kernels (the explorer's download of such a
    schedule) is checked against the rules of the TT-Lang target's model."""
    if problem.target is not KernelTarget.ttlang:
        schedule = build_schedule(hw, dataclasses.replace(problem, target=KernelTarget.ttlang), schedule.candidate)
    for c in schedule.constraints:
        if c.family == TTLANG_EXPORT and not c.holds(values):
            lhs, rhs = c.values(values)
            return c.message.format(lhs=lhs, rhs=rhs)
    return None


class TtLangExporter:
    """``--format ttlang``: the TT-Lang kernel file (module docstring), solved for the TT-Lang kernels' buffers."""

    name = "ttlang"
    order = 10
    suffix = ".py"
    summary = "TT-Lang kernel (runs in tt-lang-sim)"
    noun = "a TT-Lang export"
    label = "TT-Lang kernel (.py)"
    kernel_target: KernelTarget | None = KernelTarget.ttlang

    def can_export(self, solved: SolvedSchedule) -> str | None:
        return (
            unsupported_reason(solved.schedule)
            or ttlang_rule_blocker(solved.hw, solved.problem, solved.schedule, solved.values)
            or ttlang_l1_blocker(solved.hw, solved.problem, solved.schedule, solved.values)
        )

    def export(self, solved: SolvedSchedule) -> str:
        why = self.can_export(solved)
        if why is not None:
            raise ExportError(why)
        doc = solved_document(solved)
        return ttlang_source(rebuild_own(doc), doc)


EXPORTER = TtLangExporter()
