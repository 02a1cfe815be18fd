"""DRAM capacity: what each split keeps in one chip's DRAM, and the constraint that it fits.

A chip's DRAM holds ``C = dram.channels * dram.channel_bytes`` bytes (the chip description's). Under a split
``s`` of op ``o`` a chip holds

* ``W(s)``, its **resident** bytes, there for the whole layer: a matmul's weights, its per-chip slice
  ``K/p_K x N/p_N`` (the ``in1`` of its per-chip problem), and in decode the attention's key/value cache,
  ``2 * B/p_B * Hkv/p_H * Skv * D`` elements (the ``k`` and ``v`` of its per-chip problem);
* ``A(s)``, its **activations** while it runs: its inputs' and its output's pieces in their states
  (``TensorSize.local_bytes``).

A resident tensor's bytes are its tiles (each dim tile-padded: ``bounds.tiled_bytes``, the formula the DRAM
floor counts too) times a tile of its format (the chip's ``tile_bytes``: bf16 2,048, bfloat8_b 1,088,
bfloat4_b 576; the graph's ``Precision``), and the graph's ``layers`` layers alike each hold
theirs (every layer of a model split the same way). Every op's resident tensors stay while any op runs, so
the assignment fits when, for every op ``o``,

    L * sum_{o'} sum_{s of o'} W(s) * x[o', s]  +  sum_{s of o} A(s) * x[o, s]  <=  C

(one linear constraint per op, the joint model's ``dram`` family; ``W`` below is already ``L`` times one
layer's). A split whose own ``W(s) + A(s)`` exceeds ``C`` cannot be in any assignment: its status is
``infeasible: DRAM``. ``C`` is the chip's DRAM less its share of what the model keeps outside the graph
(``OpGraph.reserved_bytes``, spread evenly over the mesh's chips: a model's embedding table and LM head, at
bf16). Not counted: norm scales and allocator fragmentation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mesh.bounds import tiled_bytes
from loom_explorer.mesh.graph import OpGraph, OpKind
from loom_explorer.mesh.splits import Split
from loom_explorer.mesh.states import MeshView
from loom_explorer.program import shipped_program


@dataclass(frozen=True, slots=True)
class SplitBytes:
    """One split's bytes in one chip's DRAM (module docstring)."""

    resident_bytes: int
    activation_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.resident_bytes + self.activation_bytes


def chip_dram_bytes(chip: HardwareSpec) -> int:
    """``C``: the chip's DRAM capacity, every channel's."""
    return chip.dram.channels * chip.dram.channel_bytes


def split_bytes(graph: OpGraph, view: MeshView, split: Split, chip: HardwareSpec) -> SplitBytes:
    """``W(s)`` (all ``graph.layers`` layers') and ``A(s)`` (module docstring); (0, 0) for the boundary
    pseudo-ops."""
    if split.problem is None:
        return SplitBytes(0, 0)
    op = graph.op(split.op)
    shape = dict(split.problem.shape)
    program = shipped_program(split.problem.kernel)  # its dims' tiles; no per-chip problem is built
    held: tuple[str, ...] = ()
    if op.kind is OpKind.matmul:
        held = ("in1",)
    elif op.kind is OpKind.attention and op.batch_split:  # decode: the cache is held between steps
        held = ("k", "v")
    resident = sum(tiled_bytes(chip, program, t, shape, op.format(t)) for t in held)
    resident *= graph.layers
    acts = sum(graph.op(t).output.local_bytes(view, st) for t, st in zip(op.inputs, split.inputs, strict=True))
    acts += op.output.local_bytes(view, split.output)
    return SplitBytes(resident, acts)


def held_bytes(per_op: Iterable[Sequence[SplitBytes]]) -> int:
    """A chip's DRAM at its fullest, given each op's splits' bytes: every op's heaviest resident bytes plus the
    largest activations (the ``dram`` family's left side at its tightest op, module docstring). With one
    split per op, exactly what that choice holds; with several, the most any choice among them can hold."""
    ops = [ss for ss in per_op if ss]
    resident = sum(max(b.resident_bytes for b in ss) for ss in ops)
    return resident + max((b.activation_bytes for ss in ops for b in ss), default=0)


def fits_alone(split_b: SplitBytes, capacity_bytes: int) -> bool:
    """Whether a split's own bytes fit; a split that does not is ``infeasible: DRAM``."""
    return split_b.total_bytes <= capacity_bytes
