"""The element-wise family's work: the cycles of one output tile, and the operations and ideal cycles of the
whole problem (the compute roofline)."""

from __future__ import annotations

import math

from loom_explorer.families.elementwise.program import Elementwise, analyse_elementwise
from loom_explorer.families.elementwise.quantities import tiles_of
from loom_explorer.families.elementwise.sfpu import sfpu_tile_cycles
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.latency import eltwise_op_cycles
from loom_explorer.problem import Problem, ProblemError
from loom_explorer.program.dsl import Eltwise


def tile_cycles(hw: HardwareSpec, problem: Problem, st: Elementwise) -> int:
    """``c_tile``: cycles per output tile, every op's cost, the staging of its operands between L1 and Dst
    (``staging_cycles``) and one pack per output. An ``activation`` op needs ``--activation`` here (in an
    element-wise program it is the work, not an optional epilogue)."""
    if problem.activation is None and problem.program.uses_activation:
        raise ProblemError(
            f"{problem.program.name} applies the activation --activation names; give one of "
            f"{', '.join(sorted(hw.compute.sfpu_tile_cycles))}"
        )
    return (
        sum(op_cycles(hw, problem, op) for op in st.ops)
        + staging_cycles(hw, problem, st)
        + len(st.outputs) * hw.compute.tile_pack_cycles
    )


def op_cycles(hw: HardwareSpec, problem: Problem, op: Eltwise) -> int:
    """Cycles of ``op`` on one tile: an FPU op's (or an op that is off) as ``model/latency.py::
    eltwise_op_cycles`` gives it; an SFPU op's (or ``+``-chain's) from the LLK functions ttnn runs
    (``sfpu.py``)."""
    if op.unit == "fpu" or (op.operand is not None and not problem.is_enabled(op.operand)):
        return eltwise_op_cycles(hw, problem, op)
    if op.when == "diagonal" and not problem.has_option("causal"):
        return 0
    name = problem.activation if op.op == "activation" else op.op
    return 0 if name is None else sfpu_tile_cycles(hw, name)


def staging_cycles(hw: HardwareSpec, problem: Problem, st: Elementwise) -> int:
    """Cycles per output tile moving the running value between L1 and Dst around the ops, as ttnn's compute
    kernels do. The SFPU works on Dst, and the FPU's binary ops read both operands from L1 through the
    unpackers and leave their result in Dst. So, over the ops in order (an op that costs nothing, being
    off, is skipped):

    * an SFPU op on a tile in L1 (the chain's first op, or an op on its own ``operand``) first copies it into
      Dst: ``copy_tile``, an unpack and a datacopy through the FPU, costed as one FPU element-wise op
      (``compute.eltwise_tile_cycles``; an estimate: the datacopy passes the tile through the FPU once).
      ttnn's unary kernel: ``eltwise/unary/device/kernels/compute/eltwise_sfpu.cpp`` @0364ed2a
      (``CopyTile<cb_input>`` then the SFPU chain, per tile); ``binary_ng``'s operand activations
      (``PREPROCESS``, ``kernels_ng/compute/eltwise_binary_row_bcast.cpp`` @0063e996 and the no-broadcast
      kernel alike) copy the operand in, apply the SFPU ops and pack it to an intermediate buffer;
    * an FPU op after another op (the running value in Dst) needs that value packed back to L1 first: one
      ``compute.tile_pack_cycles`` (``binary_ng``'s ``PREPROCESS`` pack; the rotary kernel's intermediate
      packs, ``rotary_embedding_llama.cpp``).

    A post-activation (an SFPU op after an FPU op, ``y = f(a + b)``) runs on the FPU's result in Dst and costs
    no staging."""
    c = hw.compute
    copies = packs = 0
    in_dst = False
    for op in st.ops:
        if op_cycles(hw, problem, op) == 0:
            continue
        if op.unit == "sfpu":
            copies += int(op.operand is not None or not in_dst)
        else:
            packs += int(in_dst)
        in_dst = True
    return copies * c.eltwise_tile_cycles + packs * c.tile_pack_cycles


def elementwise_work(hw: HardwareSpec, problem: Problem) -> tuple[int, int]:
    """(operations, one core's cycles at the ideal rates) of the whole problem: every element of every
    output once per op; every output tile at ``c_tile`` cycles."""
    st = analyse_elementwise(problem.program)
    elements = math.prod(problem.elements(d) for d in st.dims)
    return elements * len(st.ops), tiles_of(problem, st.dims) * tile_cycles(hw, problem, st)
