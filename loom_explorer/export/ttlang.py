"""A schedule as a self-contained TT-Lang kernel file (GEMM in ``families/contraction/ttlang.py``; attention in ``ttlang_attention.py`` and,
flash-decoding, ``ttlang_decode.py``,
element-wise programs in ``families/elementwise/ttlang.py``, row reductions in ``families/row_reduction/ttlang.py``).

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
import math
from collections.abc import Mapping
from typing import Any

from loom_explorer.export.exporter import ExportError, SolvedSchedule
from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument, rebuild_own, solved_document
from loom_explorer.export.ttlang_attention import (
    attention_source,
    attention_unsupported,
)
from loom_explorer.export.ttlang_decode import decode_source
from loom_explorer.export.ttlang_family import HostTensor, HostTensors, TtlangWriter, ttlang_writer
from loom_explorer.hardware.schema import DataFormat, HardwareSpec
from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.build import build_schedule
from loom_explorer.model.constraints.ttlang_export import FAMILY as TTLANG_EXPORT
from loom_explorer.model.expr import evaluate
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import KernelTarget, Problem
from loom_explorer.program.attention import analyse_attention
from loom_explorer.program.family import Structure
from loom_explorer.program.structure import analyse_program, program_family


def unsupported_reason(schedule: SymbolicSchedule) -> str | None:
    """Why TT-Lang export cannot write this candidate's schedules (None: it can)."""
    try:
        writer = _writer(schedule.problem)
    except ExportError as exc:
        return str(exc)
    return writer.unsupported(schedule)


def _attention_unsupported(schedule: SymbolicSchedule) -> str | None:
    cand = schedule.candidate
    if cand.kv_split:
        return None  # flash-decoding: ``ttlang_decode.py`` writes every such candidate
    return attention_unsupported(analyse_attention(schedule.problem.program), cand.name, cand.flattened,
                                 all(c is Comm.dram for _, c in cand.comms))


def _writer(problem: Problem) -> TtlangWriter:
    """The writer of ``problem``'s kernel family (a plug-in: ``ttlang_family.py``), after the checks every
    export needs."""
    _check_common(problem)
    writer = ttlang_writer(problem)
    if writer is None:
        family = program_family(problem.program)
        raise ExportError(f"TT-Lang export writes no kernel for the {family.name} family ({family.description})")
    return writer


def _check_common(problem: Problem) -> Structure:
    """What every TT-Lang export needs: DRAM-interleaved bfloat16 tensors."""
    placed = [t for t, p in problem.placements if p.value != "dram"]
    if placed:
        raise ExportError(f"TT-Lang export reads and writes DRAM-interleaved tensors; {', '.join(placed)} "
                          "is placed in L1")
    formats = {fmt for _, fmt in problem.formats}
    if not formats <= {DataFormat.bfloat16}:
        raise ExportError("TT-Lang export writes bfloat16 kernels so far; this problem uses "
                          f"{', '.join(sorted(f.value for f in formats))}")
    return analyse_program(problem.program)


def ttlang_source(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    """The kernel file of a schedule (module docstring; attention: ``ttlang_attention.py``); ExportError for
    what it cannot express."""
    return _writer(built.problem).source(built, doc)


def _attention_source(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    st = analyse_attention(built.problem.program)
    if built.schedule.candidate.kv_split:
        return decode_source(built, doc, st)
    return attention_source(built, doc, st)


def _attention_host_tensors(built: RebuiltSchedule) -> HostTensors:
    """q, k, v, o: arguments 0..3. FlashAttention: a (batch, query head) of q and o per block of
    ``ceil(Sq / q_chunk) * q_chunk`` rows, a (batch, key/value head) of k and v per block of
    ``ceil(Skv / k_chunk) * k_chunk`` rows. Flash-decoding: a (batch, key/value head) group per block, its
    query heads' rows packed (``G * Sq`` rows in ``q_chunk_size`` rows), its keys in ``ceil(Skv / k_chunk)``
    chunks."""
    p, st, v = built.problem, analyse_attention(built.problem.program), built.solution.values()
    q, k, val = st.streamed
    sq, skv, d = (p.elements(x) for x in (st.q_dim, st.kv_dim, st.head_dim))
    heads = math.prod(p.elements(x) for x in st.batch_dims)
    kv_heads = math.prod(p.elements(p.program.grouped_by(k, x) or x) for x in st.batch_dims)
    kc = v["k_chunk_size"]
    kv_rows = -(-skv // kc) * kc
    if built.schedule.candidate.kv_split:
        qc, group = v["q_chunk_size"], heads // kv_heads
        packed = group * sq
        return ((HostTensor(q, 0, kv_heads, qc, packed, d), HostTensor(k, 1, kv_heads, kv_rows, skv, d),
                 HostTensor(val, 2, kv_heads, kv_rows, skv, d)), (HostTensor(st.output, 3, kv_heads, qc, packed, d),))
    q_rows = -(-sq // v["q_chunk_size"]) * v["q_chunk_size"]
    return ((HostTensor(q, 0, heads, q_rows, sq, d), HostTensor(k, 1, kv_heads, kv_rows, skv, d),
             HostTensor(val, 2, kv_heads, kv_rows, skv, d)), (HostTensor(st.output, 3, heads, q_rows, sq, d),))


def _attention_reference(built: RebuiltSchedule, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """softmax(q k^T / sqrt(D)) v, each query head on its key/value head, causal when the problem is (a
    flash-decoding file packs a group's query heads as rows of one item: no grouping, no mask)."""
    import torch

    st = analyse_attention(built.problem.program)
    q, k, v = (inputs[t] for t in st.streamed)
    kv_split = built.schedule.candidate.kv_split
    groups = q.shape[0] // k.shape[0] if not kv_split else 1
    causal = built.problem.has_option("causal") and not kv_split
    out = torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(groups, dim=0), v.repeat_interleave(groups, dim=0), is_causal=causal)
    return {st.output: out}


ATTENTION_WRITER = TtlangWriter("attention", _attention_unsupported, _attention_source, _attention_host_tensors,
                                _attention_reference)


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


def ttlang_rule_blocker(hw: HardwareSpec, problem: Problem, schedule: SymbolicSchedule,
                        values: dict[str, int]) -> str | None:
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
    suffix = ".py"
    summary = "TT-Lang kernel (runs in tt-lang-sim)"
    noun = "a TT-Lang export"
    label = "TT-Lang kernel (.py)"
    kernel_target: KernelTarget | None = KernelTarget.ttlang

    def can_export(self, solved: SolvedSchedule) -> str | None:
        return (unsupported_reason(solved.schedule)
                or ttlang_rule_blocker(solved.hw, solved.problem, solved.schedule, solved.values)
                or ttlang_l1_blocker(solved.hw, solved.problem, solved.schedule, solved.values))

    def export(self, solved: SolvedSchedule) -> str:
        why = self.can_export(solved)
        if why is not None:
            raise ExportError(why)
        doc = solved_document(solved)
        return ttlang_source(rebuild_own(doc), doc)
