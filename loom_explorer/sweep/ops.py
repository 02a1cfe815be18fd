"""The ops of a sweep: read from a ``shapes.csv`` or generated for a well-known transformer.

``shapes.csv`` has the columns ``kernel,shape,dtype,fidelity`` (``kernel`` a shipped kernel's name: a data
file never names a file to import; ``shape`` as in ``solve``, e.g.
``M=4096,K=4096,N=4096``), and optionally ``options`` (the kernel's program options to switch on, names
separated by spaces, e.g. ``causal``), ``causal`` (``1``/``true``: short for ``options`` ``causal``, the
column of files written before ``options`` existed) and ``label``. Every row is checked when the file is
read (kernel, shape, data format, fidelity, options), so a bad file is refused with the row and column at
fault before anything is solved.

``model_ops`` generates the ops of Llama-3 8B and 70B from their published dimensions (Meta's model
cards: hidden 4096 / 8192, FFN 14336 / 28672, 32 / 64 query heads, 8 key/value heads, head dim 128,
vocabulary 128256): every op of one decoder layer, then the final norm and the LM head, with ``M`` the
rows, the tokens (prefill at 2k and 8k) or the users (decode at batch 1 and 32):

* matmuls (``gemm``): ``qkv``: ``M x hidden x (H + 2*Hkv)*128`` (q, k and v projections fused), ``wo``:
  ``M x hidden x hidden``, ``w1`` and ``w3``: ``M x hidden x ffn`` (gate and up, two ops of one shape),
  ``w2``: ``M x ffn x hidden``, ``lm_head``: ``M x hidden x vocab``;
* ``attention`` (``flash_attention``): prefill ``B=1, Sq = Skv = tokens``, causal; decode one query per user
  over a ``DECODE_KV`` token cache, not causal. Its softmax is inside the kernel: no softmax op;
* ``attn_norm`` and ``ffn_norm`` (``rmsnorm``, ``H=M, W=hidden``): before the attention and before the MLP;
  ``final_norm`` (the same shape) before the LM head;
* ``residual_attn`` and ``residual_ffn`` (``binary``, ``H=M, W=hidden``): the residual adds after the
  attention's output projection and after the MLP;
* ``swiglu`` (``H=M, W=ffn``): ``silu(x @ w1) * (x @ w3)``.

Ops of one shape keep their own labels (``w1`` and ``w3``; the three norms; the two residual adds): a sweep
solves such ops once and records each label (``sweep/run.py``), so a group's totals count every op of the
layer. Labels are ``<model> <phase>: <op>``. Every op is bf16, HiFi2 (ttnn's default compute config for
bf16).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from loom_explorer.errors import LoomError
from loom_explorer.hardware.schema import (
    DataFormat,
    Fidelity,
    parse_data_format,
    parse_fidelity,
)
from loom_explorer.problem import ProblemError, make_problem
from loom_explorer.program import KernelError, list_kernels, load_program

COLUMNS = ("kernel", "shape", "dtype", "fidelity")
DECODE_KV = 4096  # cached tokens each decode step attends to


class OpsError(LoomError, ValueError):
    """A shapes file or model name that cannot be read; the message names the row and column."""


@dataclass(frozen=True, slots=True)
class SweepOp:
    kernel: str
    shape: str  # canonical: the program's dims in order, e.g. "M=4096,N=4096,K=4096"
    dtype: DataFormat
    fidelity: Fidelity
    options: frozenset[str] = frozenset()  # the program options switched on
    label: str = ""

    @property
    def key(self) -> str:
        """What identifies the op (with the hardware and tool version, a sweep's skip key): the options are
        their sorted names joined by commas (``causal``, or nothing), as the key has always spelled them."""
        return f"{self.kernel}|{self.shape}|{self.dtype.value}|{self.fidelity.value}|{','.join(sorted(self.options))}"


def make_op(
    kernel: str, shape: str, dtype: str = "bf16", fidelity: str = "hifi2", options: Iterable[str] = (), label: str = ""
) -> SweepOp:
    """An op, checked: the kernel exists, the shape fits it, each option is one the kernel declares
    (ValueError)."""
    program = load_program(kernel)
    fmt, fid = parse_data_format(dtype), parse_fidelity(fidelity)
    chosen = frozenset(options)
    for name in sorted(chosen):
        if name not in program.options:
            raise ProblemError(
                f"kernel {kernel} has no {name} option (its options: {', '.join(program.options) or 'none'})"
            )
    problem = make_problem(program, shape, fmt, fid, options=chosen)
    return SweepOp(program.name, problem.shape_text, fmt, fid, chosen, label)


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise ValueError(f"expected 1/0 or true/false, got {text!r}")


def read_shapes(path: str | Path) -> list[SweepOp]:
    """Every row of a ``shapes.csv`` as a checked op (module docstring)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")  # a spreadsheet's byte-order mark is not part of the header
    except (OSError, UnicodeDecodeError) as exc:
        raise OpsError(f"{p}: cannot read ({exc})") from None
    reader = csv.reader(text.splitlines())
    header = [h.strip().lower() for h in next(reader, [])]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise OpsError(
            f"{p}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"(expected {','.join(COLUMNS)}[,options][,causal][,label])"
        )
    ops: list[SweepOp] = []
    shipped = list_kernels()
    for cells in reader:
        number = reader.line_num  # the file's line, blank lines counted
        if not any(c.strip() for c in cells):
            continue
        row = {name: (cells[i].strip() if i < len(cells) else "") for i, name in enumerate(header)}
        empty = [c for c in COLUMNS if not row[c]]
        if empty:
            raise OpsError(f"{p} row {number}: column {empty[0]} is empty")
        if row["kernel"] not in shipped:  # a data file names kernels, never a file to import (Python)
            raise OpsError(
                f"{p} row {number}, column kernel: {row['kernel'][:60]!r} is not a shipped kernel; a "
                "shapes file names one of "
                f"{', '.join(shipped)}, never a file"
            )
        try:
            causal = _flag(row.get("causal", ""))
        except ValueError as exc:
            raise OpsError(f"{p} row {number}, column causal: {exc}") from None
        options = set(row.get("options", "").split()) | ({"causal"} if causal else set())
        try:
            ops.append(
                make_op(row["kernel"], row["shape"], row["dtype"], row["fidelity"], options, row.get("label", ""))
            )
        except (ValueError, KernelError) as exc:
            raise OpsError(f"{p} row {number}: {exc}") from None
    if not ops:
        raise OpsError(f"{p}: no ops (only a header)")
    return ops


def write_shapes(ops: list[SweepOp]) -> str:
    """The ops as ``shapes.csv`` text (``read_shapes`` reads it back to the same ops)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow((*COLUMNS, "options", "label"))
    for op in ops:
        writer.writerow(
            (op.kernel, op.shape, op.dtype.value, op.fidelity.value, " ".join(sorted(op.options)), op.label)
        )
    return out.getvalue()


@dataclass(frozen=True, slots=True)
class Transformer:
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int = 128
    vocab: int = 128256
    layers: int = 32  # decoder layers (num_hidden_layers of the model's config.json)


MODELS = {
    "llama-3-8b": Transformer(hidden=4096, ffn=14336, heads=32, kv_heads=8, layers=32),
    "llama-3-70b": Transformer(hidden=8192, ffn=28672, heads=64, kv_heads=8, layers=80),
}
PHASES = (("prefill 2k", 2048, True), ("prefill 8k", 8192, True), ("decode b1", 1, False), ("decode b32", 32, False))


def model_ops(name: str) -> list[SweepOp]:
    """The ops of ``name`` (``MODELS``) in prefill at 2k/8k tokens and decode at batch 1/32."""
    name = name.lower()
    model = MODELS.get(name)
    if model is None:
        raise OpsError(f"--model {name}: known models are {', '.join(MODELS)}")
    m, ops = model, []
    for phase, rows, prefill in PHASES:
        qkv = (m.heads + 2 * m.kv_heads) * m.head_dim
        for op, k, n in (
            ("qkv", m.hidden, qkv),
            ("wo", m.heads * m.head_dim, m.hidden),
            ("w1", m.hidden, m.ffn),
            ("w3", m.hidden, m.ffn),
            ("w2", m.ffn, m.hidden),
            ("lm_head", m.hidden, m.vocab),
        ):
            ops.append(make_op("gemm", f"M={rows},K={k},N={n}", label=f"{name} {phase}: {op}"))
        if prefill:
            shape = f"B=1,H={m.heads},Hkv={m.kv_heads},Sq={rows},Skv={rows},D={m.head_dim}"
            ops.append(make_op("flash_attention", shape, options={"causal"}, label=f"{name} {phase}: attention"))
        else:
            shape = f"B={rows},H={m.heads},Hkv={m.kv_heads},Sq=1,Skv={DECODE_KV},D={m.head_dim}"
            ops.append(make_op("flash_attention", shape, label=f"{name} {phase}: attention"))
        for op, kernel, width in (
            ("attn_norm", "rmsnorm", m.hidden),
            ("ffn_norm", "rmsnorm", m.hidden),
            ("residual_attn", "binary", m.hidden),
            ("residual_ffn", "binary", m.hidden),
            ("swiglu", "swiglu", m.ffn),
            ("final_norm", "rmsnorm", m.hidden),
        ):
            ops.append(make_op(kernel, f"H={rows},W={width}", label=f"{name} {phase}: {op}"))
    return ops
