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
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loom_explorer.errors import LoomError
from loom_explorer.export.schedule_json import RebuiltSchedule
from loom_explorer.export.ttlang_elementwise import SFPU_OPS, output_expressions
from loom_explorer.export.ttlang_row_reduction import reference_lines
from loom_explorer.program.attention import analyse_attention
from loom_explorer.program.contraction import analyse_contraction
from loom_explorer.program.elementwise import analyse_elementwise
from loom_explorer.program.row_reduction import analyse_row_reduction
from loom_explorer.program.structure import program_family

_NOT_COMPARED = {"LOOM_SCHEDULE"}  # the embedded document itself: what the comparison is against


class KernelContractError(LoomError, ValueError):
    """The kernel's host tensors cannot hold the schedule's problem (the message names the tensor)."""


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
            elif (isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                  and len(target.elts) == len(node.value.elts)):
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
class HostTensor:
    """Where a problem tensor sits in the kernel's host arguments (module docstring): argument ``argument``,
    ``items`` blocks of ``rows_per_item`` rows (0: the whole tensor is one block), the logical ``rows x cols``
    elements at each block's top left."""

    name: str
    argument: int
    items: int
    rows_per_item: int
    rows: int
    cols: int

    def take(self, host: Sequence[Any]) -> Any:
        """The tensor's logical elements, ``[items, rows, cols]`` fp32, from the host arguments ``host``."""
        if self.argument >= len(host):
            raise KernelContractError(f"kernel_arguments() gives {len(host)} tensors; {self.name} is argument "
                                      f"{self.argument}")
        t = host[self.argument].float()
        height = self.rows_per_item or t.shape[0]
        if t.dim() != 2 or t.shape[0] < self.items * height or height < self.rows or t.shape[1] < self.cols:
            raise KernelContractError(
                f"kernel argument {self.argument} ({self.name}) is {list(t.shape)}: it cannot hold {self.items} x "
                f"{self.rows} x {self.cols} elements in blocks of {height} rows, as the schedule's problem needs")
        return t[:self.items * height].reshape(self.items, height, t.shape[1])[:, :self.rows, :self.cols]


@dataclass(frozen=True, slots=True)
class KernelContract:
    """The problem's inputs and outputs in the kernel's host arguments, and the family's reference."""

    inputs: tuple[HostTensor, ...]
    outputs: tuple[HostTensor, ...]
    family: str
    built: RebuiltSchedule


def kernel_contract(built: RebuiltSchedule) -> KernelContract:
    """The contract of ``built``'s kernel family (module docstring)."""
    family = program_family(built.problem.program).name
    maker = {"contraction": _gemm, "attention": _attention, "elementwise": _elementwise,
             "row_reduction": _row_reduction}.get(family)
    if maker is None:
        raise KernelContractError(f"verify has no reference for the {family} family")
    inputs, outputs = maker(built)
    return KernelContract(inputs, outputs, family, built)


def _gemm(built: RebuiltSchedule) -> tuple[tuple[HostTensor, ...], tuple[HostTensor, ...]]:
    p, con = built.problem, analyse_contraction(built.problem.program)
    m, n, k = (p.elements(d) for d in (con.m_dim, con.n_dim, con.k_dim))
    mm = con.matmul
    return ((HostTensor(mm.a, 0, 1, 0, m, k), HostTensor(mm.b, 1, 1, 0, k, n)), (HostTensor(mm.out, 2, 1, 0, m, n),))


def _elementwise(built: RebuiltSchedule) -> tuple[tuple[HostTensor, ...], tuple[HostTensor, ...]]:
    p, st = built.problem, analyse_elementwise(built.problem.program)
    rows, cols = (p.elements(d) for d in st.dims)
    inputs = [t for t, _ in built.schedule.candidate.comms]

    def extent(t: str) -> tuple[int, int]:
        dims = p.program.tensor(t).dims
        if t in st.full or t in st.outputs:
            return rows, cols
        return (1, 1) if not dims else ((1, cols) if dims == (st.dims[1],) else (rows, 1))

    return (tuple(HostTensor(t, i, 1, 0, *extent(t)) for i, t in enumerate(inputs)),
            tuple(HostTensor(t, len(inputs) + i, 1, 0, rows, cols) for i, t in enumerate(st.outputs)))


def _row_reduction(built: RebuiltSchedule) -> tuple[tuple[HostTensor, ...], tuple[HostTensor, ...]]:
    p, st = built.problem, analyse_row_reduction(built.problem.program)
    rows, cols = p.elements(st.rows_dim), p.elements(st.cols_dim)
    inputs = [t for t, _ in built.schedule.candidate.comms]
    extent = {"rows": (rows, cols), "row": (1, cols), "col": (rows, 1), "scalar": (1, 1)}
    return (tuple(HostTensor(t, i, 1, 0, *extent[st.kind(t)]) for i, t in enumerate(inputs)),
            tuple(HostTensor(t, len(inputs) + i, 1, 0, rows, cols) for i, t in enumerate(st.outputs)))


def _attention(built: RebuiltSchedule) -> tuple[tuple[HostTensor, ...], tuple[HostTensor, ...]]:
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


def reference_outputs(contract: KernelContract, host_inputs: Sequence[Any]) -> dict[str, Any]:
    """The problem's outputs (fp32, ``[items, rows, cols]``) from its inputs in ``host_inputs`` (module
    docstring)."""
    import torch

    built = contract.built
    x = {t.name: t.take(host_inputs) for t in contract.inputs}
    if contract.family == "contraction":
        a, b = (t.name for t in contract.inputs)
        return {contract.outputs[0].name: x[a] @ x[b]}
    if contract.family == "attention":
        q, k, v = (x[t.name] for t in contract.inputs)
        groups = q.shape[0] // k.shape[0] if not built.schedule.candidate.kv_split else 1
        causal = built.problem.has_option("causal") and not built.schedule.candidate.kv_split
        out = torch.nn.functional.scaled_dot_product_attention(
            q, k.repeat_interleave(groups, dim=0), v.repeat_interleave(groups, dim=0), is_causal=causal)
        return {contract.outputs[0].name: out}
    env: dict[str, Any] = {"torch": torch, **{name: value[0] for name, value in x.items()}}
    if contract.family == "elementwise":
        st = analyse_elementwise(built.problem.program)
        exprs = output_expressions(built.problem, st, {t: t for t in x}, SFPU_OPS)
        return {t: eval(e, env)[None] for t, e in exprs.items()}  # the program's own ops, as torch
    st_r = analyse_row_reduction(built.problem.program)
    exec("\n".join(reference_lines(built.problem, st_r, {t: t for t in x})), env)  # as above
    return {t: env[t][None] for t in st_r.outputs}


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
            raise KernelContractError(f"the reference of {t.name} is {list(expected.shape)}, expected "
                                      f"{[t.items, t.rows, t.cols]}")
        pccs.append(torch.corrcoef(torch.stack([got, expected.flatten()]))[0, 1].item())
    return min(pccs)
