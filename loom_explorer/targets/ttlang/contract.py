"""What ``loom-explorer verify`` holds an exported TT-Lang kernel file to, built from the schedule document the
file embeds and never from the file's own constants: one mechanism for every writer.

* Constants. The export of the embedded schedule, written afresh, assigns module-level names (``GRID_X``,
  ``HKV``, ``QC``, ``PER_CORE_M`` ...). Every one of them must be in the file with the same value: a literal
  is compared as a value (``ast.literal_eval``), a derived one (``GROUP = H // HKV``) as its expression. A
  name the file assigns that the export does not is a mismatch too (:func:`constant_mismatches`).
* Tensors. Each of the problem's tensors sits in one argument of the file's ``kernel_arguments()`` as a 2-D
  host tensor: ``items`` blocks of ``rows_per_item`` rows (a (batch, head) of attention, a group of
  flash-decoding; one block otherwise), the tensor's ``rows x cols`` logical elements at the top left of each
  block, zero padding elsewhere (:class:`HostTensor`; the layouts are the writers' module docstrings).
  :func:`reference_pcc` takes the problem's inputs out of the host tensors the kernel was given, computes the
  problem's outputs from them in torch (fp32) by the program's meaning (``a @ b``; softmax(q k^T / sqrt(D)) v,
  each query head on its key/value head, causal when the problem is; the element-wise and row-reduction ops
  in order), takes the kernel's outputs out of its output arguments the same way and returns the smallest
  Pearson correlation coefficient over the outputs.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loom_explorer.export.schedule_json import RebuiltSchedule
from loom_explorer.program.structure import program_family
from loom_explorer.targets.ttlang.writer import HostTensor, KernelContractError, TtlangWriter, ttlang_writer

_NOT_COMPARED = {"LOOM_SCHEDULE"}  # the embedded document itself: what the comparison is against


# ---------------------------------------------------------------------------------------------- constants


@dataclass(frozen=True, slots=True)
class ConstantMismatch:
    """A module-level name whose value in the file differs from the export of the file's schedule (``None``:
    not assigned there)."""

    name: str
    in_file: str | None
    in_schedule: str | None

    def __str__(self) -> str:
        if self.in_file is None:
            return f"constant {self.name}: missing from the file (the schedule gives {self.in_schedule})"
        if self.in_schedule is None:
            return f"constant {self.name}: {self.in_file} in the file, not a constant of the schedule's export"
        return f"constant {self.name}: {self.in_file} in the file, {self.in_schedule} in the schedule"


def module_constants(source: str, label: str = "<kernel file>") -> dict[str, str]:
    """Every module-level ``NAME = value`` (and ``A, B = 1, 2``) of ``source``: a literal as its value's
    ``repr``, anything else as its expression's source (``ast.unparse``)."""
    try:
        tree = ast.parse(source, label)
    except SyntaxError as exc:
        raise KernelContractError(f"{label}: not Python: {exc}") from None
    out: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name):
                out[target.id] = _value_text(node.value)
            elif (
                isinstance(target, ast.Tuple)
                and isinstance(node.value, ast.Tuple)
                and len(target.elts) == len(node.value.elts)
            ):
                for name, value in zip(target.elts, node.value.elts, strict=True):
                    if isinstance(name, ast.Name):
                        out[name.id] = _value_text(value)
    return {k: v for k, v in out.items() if k not in _NOT_COMPARED}


def _value_text(node: ast.expr) -> str:
    try:
        return repr(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node)


def constant_mismatches(file_source: str, schedule_source: str, label: str = "<kernel file>") -> list[ConstantMismatch]:
    """The module-level constants on which ``file_source`` and the export of its schedule (``schedule_source``)
    differ, in the order the export assigns them, then the file's extra names."""
    got, want = module_constants(file_source, label), module_constants(schedule_source, "<the schedule's export>")
    out = [ConstantMismatch(name, got.get(name), value) for name, value in want.items() if got.get(name) != value]
    out += [ConstantMismatch(name, value, None) for name, value in got.items() if name not in want]
    return out


# ---------------------------------------------------------------------------------------------- tensors


@dataclass(frozen=True, slots=True)
class KernelContract:
    """The problem's inputs and outputs in the kernel's host arguments, and the family's reference."""

    inputs: tuple[HostTensor, ...]
    outputs: tuple[HostTensor, ...]
    writer: TtlangWriter
    built: RebuiltSchedule


def kernel_contract(built: RebuiltSchedule) -> KernelContract:
    """The contract of ``built``'s kernel family (module docstring), from its TT-Lang writer."""
    writer = ttlang_writer(built.problem, built.schedule.candidate)
    if writer is None:
        raise KernelContractError(
            f"verify has no reference for the {program_family(built.problem.program).name} "
            "family: it registers no TT-Lang writer"
        )
    inputs, outputs = writer.host_tensors(built)
    return KernelContract(inputs, outputs, writer, built)


def reference_outputs(contract: KernelContract, host_inputs: Sequence[Any]) -> dict[str, Any]:
    """The problem's outputs (fp32, ``[items, rows, cols]``) from its inputs in ``host_inputs`` (module
    docstring), by the family's TT-Lang writer."""
    return contract.writer.reference(contract.built, {t.name: t.take(host_inputs) for t in contract.inputs})


def reference_pcc(built: RebuiltSchedule, host_inputs: Sequence[Any], host_after: Sequence[Any]) -> float:
    """The smallest PCC over the problem's outputs between the kernel's (in ``host_after``, its arguments
    after the run) and the reference from its inputs (``host_inputs``, the arguments it was given)."""
    import torch

    contract = kernel_contract(built)
    want = reference_outputs(contract, host_inputs)
    pccs = []
    for t in contract.outputs:
        got, expected = t.take(host_after).flatten(), want[t.name].float()
        if expected.shape != (t.items, t.rows, t.cols):
            raise KernelContractError(
                f"the reference of {t.name} is {list(expected.shape)}, expected {[t.items, t.rows, t.cols]}"
            )
        pccs.append(torch.corrcoef(torch.stack([got, expected.flatten()]))[0, 1].item())
    return min(pccs)


__all__ = [
    "ConstantMismatch",
    "HostTensor",
    "KernelContract",
    "KernelContractError",
    "constant_mismatches",
    "kernel_contract",
    "module_constants",
    "reference_outputs",
    "reference_pcc",
]
