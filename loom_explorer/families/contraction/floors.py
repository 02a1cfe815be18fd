"""The busiest core's floor of a gemm: a lower bound of every candidate's latency, building no model
(``ModelFamily.core_floor_cycles``; the multi-chip planner prunes per-chip problems with it, ``mesh/bounds.py``).

**Why the busiest-core floor holds.** ``C`` the chip's cores (``grid.cores``), ``L`` the launch, ``c_f`` a tile
matmul at the problem's fidelity, ``c_p`` a tile pack.

* gemm (``families/contraction/latency.py``), ``W = B*Mt*Nt*Kt`` tile matmuls, ``O = B*Mt*Nt`` output tiles,
  the output in DRAM: a core with ``o = pb*pm*pn`` output tiles (partial ones under split-K) and ``pk`` K
  tiles takes ``T >= L + n_out*n_k*mm + write(o)``: ``T = L + fill + n_out*(n_k*step + epilogue + write_back)``
  with ``n_out`` blocks of ``out_block_h*out_block_w`` tiles (``n_out*out_block_h*out_block_w = o``) each
  written at ``write_back >= ceil(bytes / w_core) + L_write``, or under split-K the reducing core's
  ``write_back`` of its ``o`` tiles in the tail; ``step >= mm >= out_block_h*out_block_w*(in0_block_w*c_f
  + c_p)``, ``n_k >= 1``, so ``n_out*n_k*mm >= o*pk*c_f + o*c_p``, and ``n*ceil(x/w) >= ceil(n*x/w)``. Every
  tile matmul and every output tile is some core's, so the busiest core has ``o*pk >= ceil(W/C)`` and
  ``o >= ceil(O/C)``: ``T >= L + ceil(W/C)*c_f + ceil(O/C)*c_p + ceil(ceil(O/C)*b_out/w_core) + L_write``.

Only ``gemm`` (the floor is checked against its proven optima in ``tests/mesh/test_mesh_bounds.py``) with
its output in DRAM; 0 otherwise.
"""

from __future__ import annotations

from fractions import Fraction
from math import ceil, prod

from loom_explorer.families.contraction.program import analyse_contraction
from loom_explorer.families.contraction.roofline import contraction_work
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.problem import Placement, Problem


def gemm_core_cycles(hw: HardwareSpec, problem: Problem) -> int:
    """The busiest core's floor of a gemm whose output is in DRAM (module docstring); 0 otherwise."""
    if problem.program.name != "gemm":
        return 0
    out = analyse_contraction(problem.program).matmul.out
    if problem.placement(out) is not Placement.dram:
        return 0
    c, cores = hw.compute, hw.grid.cores
    tile_matmuls = contraction_work(problem)[1]
    out_tiles = -(-prod(problem.tiles(d) for d in problem.program.tensor(out).dims) // cores)
    write_rate = Fraction(hw.dram.core_write_bytes_per_cycle).limit_denominator(1000)  # as ``ceil_rate`` takes it
    write = ceil(out_tiles * hw.tile_bytes[problem.data_format(out)] / write_rate)
    matmuls = -(-tile_matmuls // cores) * c.matmul_tile_cycles[problem.fidelity]
    return c.kernel_launch_cycles + matmuls + out_tiles * c.tile_pack_cycles + write + hw.dram.write_latency_cycles
