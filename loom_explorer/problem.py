"""What is being scheduled: a tile program with concrete extents, data formats and fidelity.

``parse_shape("M=4096,K=4096,N=4096", program)`` turns the CLI's shape text into extents; every error
names the key at fault. An extent is written in ASCII digits (no point, exponent or underscore) and lies
in 1..2^63-1: the model computes in 64-bit integers, so a larger extent has no representation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from loom_explorer.errors import LoomError
from loom_explorer.hardware.schema import DataFormat, Fidelity
from loom_explorer.program.dsl import TileProgram


class Placement(str, Enum):
    """Where a tensor lives when the op starts (inputs) or ends (outputs).

    The L1 shardings follow TTNN's memory layouts for a tensor whose last dim is its columns and whose
    other dims are its rows: ``l1_height`` splits the rows over the cores of a 1-D layout, ``l1_width``
    the columns, ``l1_block`` the rows over grid rows and the columns over grid columns. ``l1`` means
    "sharded however each candidate needs it" (an optimistic what-if). ``l1_interleaved`` is TTNN's
    L1-interleaved tensor: its pages dealt round-robin over the L1 banks of the worker cores, read and
    written page by page over the NoC as a DRAM-interleaved tensor is, but from those banks
    (``model/l1_banks.py``): it is not resident where the candidate needs it, so it is not ``in_l1``.
    """

    dram = "dram"  # DRAM-interleaved (TTNN's default)
    l1 = "l1"
    l1_height = "l1_height"
    l1_width = "l1_width"
    l1_block = "l1_block"
    l1_interleaved = "l1_interleaved"

    @property
    def in_l1(self) -> bool:
        """Whether the tensor is sharded in L1 (each core holds its own part): no page is read or written
        over the NoC for it. False for the interleaved placements (DRAM and L1)."""
        return self not in (Placement.dram, Placement.l1_interleaved)

    @property
    def interleaved(self) -> bool:
        """Whether the tensor's pages are interleaved over banks (DRAM's or the worker cores' L1)."""
        return self in (Placement.dram, Placement.l1_interleaved)


class ProblemError(LoomError, ValueError):
    """Bad problem input: shape, data format, placement or option."""


MAX_EXTENT = (1 << 63) - 1  # the model's integers are 64-bit
_WHOLE = re.compile(r"([+-]?)([0-9]+)")


def parse_whole(raw: str, what: str, error: type[ValueError], minimum: int = 1) -> int:
    """``raw`` as an integer in ``minimum..2^63-1`` written in ASCII digits; ``error`` naming ``what`` otherwise.

    Python's ``int()`` also takes ``1_000``, other scripts' digits and surrounding blanks, and gives up past
    4300 digits with its own message: this reads only plain decimal numbers and checks the length first.
    """
    m = _WHOLE.fullmatch(raw.strip())
    if m is None:
        raise error(f"{what}={raw.strip()!r} is not a whole number")
    sign, digits = m.groups()
    if sign == "-" and digits.strip("0"):
        raise error(f"{what}={raw.strip()} must be >= {minimum}")
    if len(digits.lstrip("0")) > len(str(MAX_EXTENT)) or int(digits) > MAX_EXTENT:
        raise error(f"{what}={_abbreviated(digits)} is too large (at most 2^63-1 = {MAX_EXTENT})")
    value = int(digits)
    if value < minimum:
        raise error(f"{what}={value} must be >= {minimum}")
    return value


def _abbreviated(digits: str) -> str:
    digits = digits.lstrip("0") or "0"
    return digits if len(digits) <= 24 else f"{digits[:10]}...({len(digits)} digits)"


class KernelTarget(str, Enum):
    """Which kernels run the schedule, and so which circular buffers the L1 constraint counts
    (``model/constraints/l1_capacity.py``): TTNN's own op kernels (its matmul and SDPA program factories,
    what ``--format ttnn`` configures and the accuracy data measured), or the kernels ``--format ttlang``
    writes (their dataflow buffers, as the TT-Lang compiler allocates them)."""

    ttnn = "ttnn"
    ttlang = "ttlang"


@dataclass(frozen=True, slots=True)
class Problem:
    program: TileProgram
    shape: tuple[tuple[str, int], ...]
    formats: tuple[tuple[str, DataFormat], ...]
    fidelity: Fidelity
    fp32_acc: bool = False
    placements: tuple[tuple[str, Placement], ...] = ()
    enabled: frozenset[str] = field(default_factory=frozenset)
    activation: str | None = None
    options: frozenset[str] = field(default_factory=frozenset)
    target: KernelTarget = KernelTarget.ttnn

    def has_option(self, option: str) -> bool:
        """Whether a program option (e.g. ``causal``) is switched on."""
        return option in self.options

    def elements(self, dim: str) -> int:
        return dict(self.shape)[dim]

    def tiles(self, dim: str) -> int:
        return self.program.dim(dim).tiles(self.elements(dim))

    def data_format(self, tensor: str) -> DataFormat:
        return dict(self.formats)[tensor]

    def placement(self, tensor: str) -> Placement:
        return dict(self.placements).get(tensor, Placement.dram)

    def is_enabled(self, tensor: str) -> bool:
        t = self.program.tensor(tensor)
        return not t.optional or tensor in self.enabled

    @property
    def shape_text(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.shape)


def parse_shape(text: str, program: TileProgram) -> tuple[tuple[str, int], ...]:
    """``"M=4096,K=4096,N=4096"`` -> ``(("M", 4096), ("N", 4096), ("K", 4096))`` in the program's order."""
    values: dict[str, int] = {}
    if not text.strip():
        raise ProblemError(f"the shape is empty; {program.name} needs e.g. {example_shape(program)}")
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise ProblemError(f"shape entry {part!r} is not KEY=VALUE")
        key, _, raw = part.partition("=")
        key = key.strip()
        if key not in {d.name for d in program.dims}:
            raise ProblemError(
                f"shape key {key!r} is not a dimension of {program.name} "
                f"(dimensions: {', '.join(d.name for d in program.dims)})"
            )
        if key in values:
            raise ProblemError(f"shape key {key!r} given twice")
        values[key] = parse_whole(raw, f"shape {key}", ProblemError)
    for d in program.dims:  # a grouped index defaults to its parent (one group per index: no sharing)
        if d.group_of is not None and d.name not in values and d.group_of in values:
            values[d.name] = values[d.group_of]
        if d.group_of is not None and d.name in values and d.group_of in values and values[d.group_of] % values[d.name]:
            raise ProblemError(
                f"shape {d.name}={values[d.name]} must divide {d.group_of}={values[d.group_of]} "
                f"({d.name} groups consecutive {d.group_of} indices)"
            )
    for d in program.dims:  # a part of a dimension defaults to all of it (no slice, no pad)
        if d.part_of is not None and d.name not in values and d.part_of in values:
            values[d.name] = values[d.part_of]
        if d.part_of is not None and d.name in values and d.part_of in values and values[d.name] > values[d.part_of]:
            raise ProblemError(
                f"shape {d.name}={values[d.name]} exceeds {d.part_of}={values[d.part_of]} "
                f"({d.name} covers the leading elements of {d.part_of})"
            )
    missing = [d.name for d in program.dims if d.name not in values]
    if missing:
        raise ProblemError(f"shape of {program.name} lacks {', '.join(missing)} (e.g. {example_shape(program)})")
    return tuple((d.name, values[d.name]) for d in program.dims)


def example_shape(program: TileProgram) -> str:
    """The program's ``example_shape``, or a made-up one (1024 per tiled dimension, 4 otherwise)."""
    if program.example_shape:
        return program.example_shape
    return ",".join(
        f"{d.name}={1024 if d.tile > 1 else 4}" for d in program.dims if d.group_of is None and d.part_of is None
    )


def make_problem(
    program: TileProgram,
    shape: str | dict[str, int],
    dtype: DataFormat = DataFormat.bfloat16,
    fidelity: Fidelity = Fidelity.hifi2,
    *,
    formats: dict[str, DataFormat] | None = None,
    placements: dict[str, Placement] | None = None,
    fp32_acc: bool = False,
    enabled: frozenset[str] | set[str] = frozenset(),
    activation: str | None = None,
    options: frozenset[str] | set[str] = frozenset(),
    target: KernelTarget = KernelTarget.ttnn,
) -> Problem:
    """Build a :class:`Problem`, checking every tensor/option name against the program."""
    shape_text = shape if isinstance(shape, str) else ",".join(f"{k}={v}" for k, v in shape.items())
    shape_items = parse_shape(shape_text, program)
    names = [t.name for t in program.tensors]
    for label, mapping in (("format", formats or {}), ("placement", placements or {})):
        unknown = [k for k in mapping if k not in names]
        if unknown:
            raise ProblemError(f"{label} names unknown tensors {unknown}; tensors: {', '.join(names)}")
    optional = {t.name for t in program.tensors if t.optional}
    bad = sorted(set(enabled) - optional)
    if bad:
        raise ProblemError(f"{program.name} has no optional tensor {bad}; optional: {sorted(optional) or 'none'}")
    if activation is not None and not program.uses_activation:
        raise ProblemError(f"{program.name} has no activation op to apply {activation!r} to")
    unknown_options = sorted(set(options) - set(program.options))
    if unknown_options:
        raise ProblemError(
            f"{program.name} has no option {unknown_options}; options: {', '.join(program.options) or 'none'}"
        )
    fmt = {t.name: (formats or {}).get(t.name, dtype) for t in program.tensors}
    return Problem(
        program=program,
        shape=shape_items,
        formats=tuple(fmt.items()),
        fidelity=fidelity,
        fp32_acc=fp32_acc,
        placements=tuple((placements or {}).items()),
        enabled=frozenset(enabled),
        activation=activation,
        options=frozenset(options),
        target=KernelTarget(target),
    )
