"""The row-reduction family's work: the passes over a block with their cycles per tile, and the operations
and ideal cycles of the whole problem (the compute roofline)."""

from __future__ import annotations

from loom_explorer.families.row_reduction.program import RowReduction, analyse_row_reduction
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.latency import eltwise_op_cycles
from loom_explorer.problem import Problem


def passes(hw: HardwareSpec, problem: Problem, st: RowReduction) -> list[tuple[str, int]]:
    """``(tensor, cycles per tile)`` of each pass over a block (``RowReduction.passes``): a reduction over its
    operand's tiles at the FPU's cost and a pack of its output's; a run of ops over its tensor's tiles, each
    op at its cost, and one pack."""
    out: list[tuple[str, int]] = []
    for p in st.passes:
        if p.reduce is not None:
            out.append((p.reduce.operand, hw.compute.eltwise_tile_cycles))
        out += [(p.tensor, eltwise_op_cycles(hw, problem, op)) for op in p.ops]
        out.append((p.tensor, hw.compute.tile_pack_cycles))
    return out


def row_reduction_work(hw: HardwareSpec, problem: Problem) -> tuple[int, int]:
    """(operations, one core's cycles at the ideal rates) of the whole problem: each op once per element of
    its tensor (a reduction per element reduced); every pass over all the tiles, unsplit."""
    st = analyse_row_reduction(problem.program)
    rows, cols = st.dims
    tiles = {"rows": problem.tiles(rows) * problem.tiles(cols), "col": problem.tiles(rows)}
    elements = {"rows": problem.elements(rows) * problem.elements(cols), "col": problem.elements(rows)}
    operations = sum(
        elements[st.kind(p.reduce.operand if p.reduce else p.tensor)] * max(1, len(p.ops)) for p in st.passes
    )
    return operations, sum(tiles[st.kind(t)] * cycles for t, cycles in passes(hw, problem, st))
