"""DRAM capacity: what each split keeps in one chip's DRAM, and the constraint that it fits.

A chip's DRAM holds ``C = dram.channels * dram.channel_bytes`` bytes (the chip description's). Under a split
``s`` of op ``o`` a chip holds

* ``W(s)``, its **resident** bytes, there for the whole layer: a matmul's weights, its per-chip slice
  ``K/p_K x N/p_N`` (the ``in1`` of its per-chip problem), and in decode the attention's key/value cache,
  ``2 * B/p_B * Hkv/p_H * Skv * D`` elements (the ``k`` and ``v`` of its per-chip problem);
* ``A(s)``, its **activations** while it runs: its inputs' and its output's pieces in their states
  (``TensorSize.local_bytes``).

Every op's weights stay resident while any op runs, so the assignment fits when, for every op ``o``,

    sum_{o'} sum_{s of o'} W(s) * x[o', s]  +  sum_{s of o} A(s) * x[o, s]  <=  C

(one linear constraint per op, the joint model's ``dram`` family). A split whose own ``W(s) + A(s)``
exceeds ``C`` cannot be in any assignment: its status is ``infeasible: DRAM``. Counted: the layer's own
weights and, in decode, its own KV cache, at the element size of the graph's tensors (bf16). Not counted:
the other layers' weights and caches (a model of ``n`` layers split alike holds ``n`` times ``W``: 70B's
bf16 weights do not fit a T3000's eight 12 GiB chips even sharded eight ways), norm scales, and
allocator fragmentation.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mesh.graph import OpGraph, OpKind
from loom_explorer.mesh.splits import Split
from loom_explorer.mesh.states import MeshView


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


def split_bytes(graph: OpGraph, view: MeshView, split: Split) -> SplitBytes:
    """``W(s)`` and ``A(s)`` (module docstring); (0, 0) for the boundary pseudo-ops."""
    if split.problem is None:
        return SplitBytes(0, 0)
    op = graph.op(split.op)
    element = op.output.element_bytes
    shape = dict(split.problem.shape)
    resident = 0
    if op.kind is OpKind.matmul:
        resident = shape["K"] * shape["N"] * element
    elif op.kind is OpKind.attention and op.batch_split:  # decode: the cache is held between steps
        resident = 2 * prod(shape[d] for d in ("B", "Hkv", "Skv", "D")) * element
    acts = sum(graph.op(t).output.local_bytes(view, st) for t, st in zip(op.inputs, split.inputs, strict=True))
    acts += op.output.local_bytes(view, split.output)
    return SplitBytes(resident, acts)


def fits_alone(split_b: SplitBytes, capacity_bytes: int) -> bool:
    """Whether a split's own bytes fit; a split that does not is ``infeasible: DRAM``."""
    return split_b.total_bytes <= capacity_bytes
