"""Which kernel family reads a device-profiler op, and which family of the error table speaks for a kernel.

Every kernel family that the accuracy tools score registers one :class:`AccuracyOps` under the entry-point
group ``loom_explorer.accuracy_ops`` (``plugins.py``), from its own folder (``families/<family>/accuracy.py``).
The object says

* ``op_codes``: the profiler ``OP CODE``s (the last ``::`` part, lower case) whose rows are this family's
  ops; ``ingest`` reads a row whose code no family claims as a skip;
* ``kernels``: the shipped kernels it reads rows as;
* ``read_interleaved``: for a family whose ops ttnn runs with its interleaved default (no program config),
  the kernel, shape and note of such a row (:class:`InterleavedOp`), or :class:`OpSkip` with the reason
  (``ingest`` predicts its ``kernels`` with ttnn's interleaved default);
* ``read_configured``: for a family whose op carries its own program config (matmul, SDPA), what a row says
  of its op (``capture.OpReading``), or ``capture.RowSkip`` with the reason;
* ``configured_op_codes``: of a family with ``read_interleaved``, the op codes whose rows carry their own
  program config and are read by its ``read_configured`` instead (a group norm beside the default norms);
* ``no_math_op_codes``: the op codes whose kernels do no math (a copy of rows): their rows may leave
  ``MATH FIDELITY`` empty, read as the problem's default fidelity, which costs such an op nothing;
* ``error_family``: the family of ``model_error.csv`` whose timings speak for an op of one of the family's
  kernels and its shape, ``None`` for a kernel that is not its (``family_error.family_of``);
* ``op_words``: the words that name the family's kind of op in any profiler op code, whether a family reads
  the op or not (``coverage.py``: the matmul and attention time of a capture, and of the rows predicted as
  the family's ``kernels``);
* ``published``: for a family whose kernel has published measurements, how ``accuracy`` and ``calibrate``
  read, predict and score them (:class:`~loom_explorer.accuracy.published.PublishedKernel`);
* ``ops_phrase``: its ops in the reason a row no family claims is skipped (``layer/RMS norm, softmax``);
* ``unmapped_variant``: the reason a row of its kind (an op code with one of its ``op_words``) that is none
  of its ``op_codes`` is skipped ("" for a family without ``op_words``).

How ttnn's interleaved default splits such an op's work is ttnn's behaviour: the family's ``TtnnOp``
(``targets/ttnn/op.py``) says it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

from loom_explorer.accuracy.capture import OpReading, ProfilerRow
from loom_explorer.accuracy.published import PublishedKernel
from loom_explorer.errors import LoomError
from loom_explorer.plugins import registered

GROUP = "loom_explorer.accuracy_ops"

InputShape = tuple[int, int, int, int]  # an input's logical W, Z, Y, X


class OpSkip(LoomError, ValueError):
    """A row of a family's op that is not what a shipped kernel computes; the message is the reason."""


@dataclass(frozen=True, slots=True)
class InterleavedOp:
    """A row read as a shipped kernel that ttnn runs with its interleaved default."""

    kernel: str  # a shipped kernel
    shape: dict[str, int]  # the kernel's problem shape
    inputs: int  # how many INPUT_<i> tensors the kernel reads (the rest would be fused extras)
    note: str = ""
    options: frozenset[str] = frozenset()  # the kernel's program options the op ran with


def _no_error_family(kernel: str, shape: Mapping[str, int]) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class AccuracyOps:
    """A kernel family's part in reading and scoring profiler captures (module docstring)."""

    name: str  # the family's name (its entry's)
    op_codes: frozenset[str]
    kernels: tuple[str, ...] = ()
    read_interleaved: Callable[[str, Mapping[str, str], Sequence[InputShape]], InterleavedOp] | None = None
    error_family: Callable[[str, Mapping[str, int]], str | None] = field(default=_no_error_family)
    read_configured: Callable[[ProfilerRow, str, dict[str, str], dict[str, object]], OpReading] | None = None
    configured_op_codes: frozenset[str] = frozenset()
    no_math_op_codes: frozenset[str] = frozenset()
    op_words: tuple[str, ...] = ()
    published: PublishedKernel | None = None
    ops_phrase: str = ""
    unmapped_variant: str = ""


@cache
def accuracy_ops() -> tuple[AccuracyOps, ...]:
    """Every registered family's :class:`AccuracyOps`, in name order."""
    return tuple(registered(GROUP, AccuracyOps).values())


@cache
def op_families() -> Mapping[str, AccuracyOps]:
    """The family of each profiler op code some family claims (module docstring)."""
    return {code: ops for ops in accuracy_ops() for code in sorted(ops.op_codes)}


def error_family(kernel: str, shape: Mapping[str, int]) -> str:
    """The family of the error table whose timings speak for an op of ``kernel`` and ``shape``: the one a
    registered family names, else the kernel's own name."""
    for ops in accuracy_ops():
        named = ops.error_family(kernel, shape)
        if named is not None:
            return named
    return kernel


@cache
def op_words() -> tuple[str, ...]:
    """The words that name an op of some family's kind in a profiler op code (``AccuracyOps.op_words``)."""
    return tuple(word for ops in accuracy_ops() for word in ops.op_words)


def unmapped_reason(op_code: str) -> str:
    """Why a row of lower-case op code ``op_code`` that no family claims is skipped: a variant of a family's
    kind of op (``unmapped_variant``), else none of the ops the families map (their ``ops_phrase``)."""
    for ops in accuracy_ops():
        if ops.unmapped_variant and any(word in op_code for word in ops.op_words):
            return ops.unmapped_variant
    return f"not an op the model maps ({', '.join(ops.ops_phrase for ops in accuracy_ops() if ops.ops_phrase)})"


@cache
def worded_kernels() -> frozenset[str]:
    """The kernels that the families with ``op_words`` read their rows as."""
    return frozenset(k for ops in accuracy_ops() if ops.op_words for k in ops.kernels)


@cache
def published_kernels() -> tuple[PublishedKernel, ...]:
    """The kernels with published measurements (``AccuracyOps.published``): the default one first, then in
    their families' name order."""
    found = [ops.published for ops in accuracy_ops() if ops.published is not None]
    return tuple(sorted(found, key=lambda p: not p.default))


def published_kernel(kernel: str) -> PublishedKernel:
    """The published measurements of ``kernel`` (one of ``published_kernels``)."""
    return next(p for p in published_kernels() if p.kernel == kernel)
