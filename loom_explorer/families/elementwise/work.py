"""The element-wise family's work: the cycles of one output tile, and the operations and ideal cycles of the
whole problem (the compute roofline)."""

from __future__ import annotations

import math

from loom_explorer.families.elementwise.program import Elementwise, analyse_elementwise
from loom_explorer.families.elementwise.quantities import tiles_of
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.latency import eltwise_op_cycles
from loom_explorer.problem import Problem, ProblemError


def tile_cycles(hw: HardwareSpec, problem: Problem, st: Elementwise) -> int:
    """``c_tile``: cycles per output tile, every op's cost plus one pack per output. An ``activation`` op
    needs ``--activation`` here (in an element-wise program it is the work, not an optional epilogue)."""
    if problem.activation is None and problem.program.uses_activation:
        raise ProblemError(
            f"{problem.program.name} applies the activation --activation names; give one of "
            f"{', '.join(sorted(hw.compute.sfpu_tile_cycles))}"
        )
    return sum(eltwise_op_cycles(hw, problem, op) for op in st.ops) + len(st.outputs) * hw.compute.tile_pack_cycles


def elementwise_work(hw: HardwareSpec, problem: Problem) -> tuple[int, int]:
    """(operations, one core's cycles at the ideal rates) of the whole problem: every element of every
    output once per op; every output tile at ``c_tile`` cycles."""
    st = analyse_elementwise(problem.program)
    elements = math.prod(problem.elements(d) for d in st.dims)
    return elements * len(st.ops), tiles_of(problem, st.dims) * tile_cycles(hw, problem, st)
