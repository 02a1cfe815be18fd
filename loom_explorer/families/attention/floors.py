"""The busiest core's floor of flash attention: a lower bound of every candidate's latency, building no model
(``ModelFamily.core_floor_cycles``; the multi-chip planner prunes per-chip problems with it, ``mesh/bounds.py``).

**Why the busiest-core floor holds.** ``C`` the chip's cores (``grid.cores``), ``L`` the launch, ``c_f`` a tile
matmul at the problem's fidelity, ``c_p`` a tile pack.

* flash_attention (``families/attention/latency.py``): ``T >= L + steps*step`` and
  ``step >= qk + sm + pv``; per step of ``qc x kc`` score tiles ``qk >= qc*kc*(D_t*c_f + c_p)``,
  ``pv >= qc*kc*D_t*c_f`` (each matmul's ``max(tile math, unpack)`` is at least its tile math) and ``sm`` at
  least its ops on the scores (``qc*kc`` tiles each, ``round(cost*f_kernel)``; the statistics and output
  ops left out). So ``T >= L + S*w`` with ``S = steps*qc*kc`` the score tiles the core computes and
  ``w = 2*D_t*c_f + c_p + sum_score_ops round(cost*f)`` (``c_f`` and ``f`` the smallest the kernels could
  take: HiFi4 for ttnn's accurate recipe, each ttnn kernel's softmax scale). Every (batch, head)'s score
  tiles on or below the causal diagonal (all of them when not causal: ``attention_work``'s tile pairs) are
  computed by some core's steps, so the busiest core has ``S >= ceil(pairs/C)``. Without the causal mask a
  (batch, key/value head) group's query heads may share tile rows (flash-decoding packs them, ``Sq`` of one
  query each): ``pairs`` is then at least ``G * ceil(R / 32) * Skv_t`` (``packed_score_tiles``: ``G`` groups
  of ``R`` query rows each, 32 the query dim's tile), the smaller count is taken.

Only ``flash_attention`` (checked against its proven optima in ``tests/mesh/test_mesh_bounds.py``); 0 for
the family's other programs.
"""

from __future__ import annotations

from math import prod

from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.families.attention.roofline import attention_work
from loom_explorer.hardware.schema import Fidelity, HardwareSpec
from loom_explorer.model.latency import eltwise_op_cycles
from loom_explorer.problem import Problem


def packed_score_tiles(problem: Problem) -> int:
    """The fewest score tiles any schedule computes without a causal mask: each (batch, key/value head)
    group's query rows (its query heads times ``Sq``) packed into tile rows of the query dim, times the key
    tiles (module docstring)."""
    st = analyse_attention(problem.program)
    rows = prod(problem.elements(d) for d in st.batch_dims) * problem.elements(st.q_dim)
    groups = prod(problem.elements(d) for d in st.kv_groups)
    return groups * problem.program.dim(st.q_dim).tiles(rows // groups) * problem.tiles(st.kv_dim)


def attention_core_cycles(hw: HardwareSpec, problem: Problem) -> int:
    """The busiest core's floor of flash attention (module docstring)."""
    if problem.program.name != "flash_attention":
        return 0
    st = analyse_attention(problem.program)
    c = hw.compute
    head_tiles = problem.tiles(st.head_dim)
    causal = problem.has_option("causal")
    pairs = attention_work(problem, causal)[1] // (2 * head_tiles)
    if not causal:  # query heads may share score tiles (flash-decoding packs a group's into tile rows)
        pairs = min(pairs, packed_score_tiles(problem))
    c_f = min(c.matmul_tile_cycles[problem.fidelity], c.matmul_tile_cycles[Fidelity.hifi4])
    scale = min([1.0, *c.sdpa_softmax_scale.values()])
    softmax = 0
    for op in st.step_ops("step"):
        dims = problem.program.tensor(op.tensor).dims
        if st.q_dim in dims and st.kv_dim in dims:  # a score tensor: qc*kc tiles a step (times D_t if it has it)
            per_score = head_tiles if st.head_dim in dims else 1
            softmax += per_score * round(eltwise_op_cycles(hw, problem, op) * scale)
    per_score_tile = 2 * head_tiles * c_f + c.tile_pack_cycles + softmax
    return c.kernel_launch_cycles + -(-pairs // hw.grid.cores) * per_score_tile
