"""The gather family's work: the compute of one output row, and the operations and ideal cycles of the whole
problem (the compute roofline)."""

from __future__ import annotations

from loom_explorer.families.gather.program import analyse_gather
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.problem import Problem


def row_cycles(hw: HardwareSpec, problem: Problem) -> int:
    """``c_row``: compute cycles of one output row. A copy (``k = 1``) has none (the reader's pages are the
    writer's). A weighted sum of ``k > 1`` rows is, as ttnn's pool compute kernel runs a grid sample
    (``ttnn/cpp/ttnn/operations/pool/grid_sample/device/grid_sample_program_factory.cpp`` @0150c910: the
    ``k = 4`` rows reduced as the rows of one tile per 32 channels, ``compute_pool_2d.cpp``), one FPU op and
    one pack per tile of the row: ``tiles(C) * (c_eltwise + c_pack)``."""
    st = analyse_gather(problem.program)
    if st.rows == 1:
        return 0
    c = hw.compute
    return problem.tiles(st.width_dim) * (c.eltwise_tile_cycles + c.tile_pack_cycles)


def gather_work(hw: HardwareSpec, problem: Problem) -> tuple[int, int]:
    """(operations, one core's cycles at the ideal rates): ``k`` multiply-adds per output element (a copy's
    ``k = 1`` counts its element moved); every output row at ``c_row``."""
    st = analyse_gather(problem.program)
    rows = problem.elements(st.rows_dim)
    return rows * problem.elements(st.width_dim) * st.rows, rows * row_cycles(hw, problem)
