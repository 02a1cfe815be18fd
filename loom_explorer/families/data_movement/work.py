"""The data-movement family's work: the compute core's cycles per tile, and the roofline.

A move whose tiles the compute core re-lays (``program.py``: tilize, untilize, transpose-WH) or converts (a
source in another data format than the output: a typecast) passes each tile through the compute core: unpack
it (re-laid on the way), copy it through Dst, pack it. That costs, per tile,

    c_tile = compute.eltwise_tile_cycles + compute.tile_pack_cycles

an uncalibrated estimate: no published measurement isolates a tilize, untilize, transpose or typecast tile, so
the FPU's element-wise tile (a copy through Dst costs as an add) plus one pack stands in for it (docs/
data_movement.md says so). A plain copy, reshape, slice or concatenation never reaches the compute core
(ttnn's reader and writer kernels move its pages): ``c_tile = 0``.
"""

from __future__ import annotations

from loom_explorer.families.data_movement.program import DataMovement, analyse_data_movement
from loom_explorer.families.data_movement.quantities import tiles_of
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.problem import Problem


def computed(problem: Problem, st: DataMovement) -> tuple[str, ...]:
    """What the compute core does to the tiles: each source's re-layout, and ``typecast`` when a source's
    data format is not the output's (empty: the data-movement cores copy the pages)."""
    out = {kind for t in st.streamed if (kind := st.relayout(t)) is not None}
    if any(problem.data_format(t) != problem.data_format(st.output) for t in st.streamed):
        out.add("typecast")
    return tuple(sorted(out))


def tile_cycles(hw: HardwareSpec, problem: Problem, st: DataMovement) -> int:
    """``c_tile`` (module docstring)."""
    if not computed(problem, st):
        return 0
    return hw.compute.eltwise_tile_cycles + hw.compute.tile_pack_cycles


def data_movement_work(hw: HardwareSpec, problem: Problem) -> int:
    """One core's cycles at the ideal rates of the whole problem: every tile of the iteration at ``c_tile``."""
    st = analyse_data_movement(problem.program)
    return tiles_of(problem, list(st.dims)) * tile_cycles(hw, problem, st)
