"""Build the symbolic schedule of a candidate: parameters, every constraint family, latency terms.

The program's structure picks the model: a blocked contraction (``model/quantities.py``,
``model/latency.py``) or attention (``model/attention.py``, ``model/attention_latency.py``); the
constraint families, the traffic flows (``model/traffic.py``) and their NoC link times
(``model/noc_bound.py``, a further argument of each step's max) are shared.
"""

from __future__ import annotations

from functools import partial

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.attention import (
    AttentionQuantities,
    build_attention_quantities,
)
from loom_explorer.model.attention_latency import (
    attention_dram_read_bytes,
    attention_latency_terms,
)
from loom_explorer.model.constraints import FAMILIES, l1_buffers
from loom_explorer.model.expr import total
from loom_explorer.model.latency import dram_read_bytes, latency_terms
from loom_explorer.model.noc_bound import (
    noc_bound_cycles,
    step_link_shares,
    write_link_shares,
)
from loom_explorer.model.quantities import GridQuantities, build_quantities
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.model.traffic import attention_flows, contraction_flows
from loom_explorer.problem import Problem
from loom_explorer.program.attention import analyse_attention, is_attention
from loom_explorer.program.contraction import analyse_contraction


def build_schedule(hw: HardwareSpec, problem: Problem, candidate: Candidate,
                   noc_bound: bool = True) -> SymbolicSchedule:
    """``noc_bound=False`` leaves the NoC link times out of the steps (``model/noc_bound.py``), to see what
    they change."""
    q: GridQuantities
    if is_attention(problem.program):
        q = build_attention_quantities(hw, problem, candidate)
        flows = attention_flows(q)
        step_tensors = q.st.streamed[1:]  # k and v stream per step; q per query chunk
        latency = partial(attention_latency_terms, q)  # its writes cost one core's write time per chunk: no write links
        read_bytes = attention_dram_read_bytes(q)
        flops, tile_matmuls = attention_work(q)
    else:
        q = build_quantities(hw, problem, candidate)
        flows = contraction_flows(q)
        step_tensors = q.inputs
        latency = partial(latency_terms, q, write_links=write_link_shares(q, flows) if noc_bound else [])
        read_bytes = dram_read_bytes(q)
        flops, tile_matmuls = contraction_work(problem)
    step_links = step_link_shares(q, flows, step_tensors) if noc_bound else []
    objective, terms, lower_bound = latency(step_links)
    constraints = tuple(c for family in FAMILIES for c in family(q))
    buffers = tuple(l1_buffers(q))
    cycles_per_tile = hw.compute.matmul_tile_cycles[problem.fidelity]
    return SymbolicSchedule(
        hardware=hw,
        problem=problem,
        candidate=candidate,
        params=q.params,
        constraints=constraints,
        latency=objective,
        latency_lower_bound=lower_bound,
        terms=tuple(terms),
        l1_buffers=buffers,
        l1_bytes=total(b.bytes_expr for b in buffers),
        dram_read_bytes=read_bytes,
        flops=flops,
        ideal_cycles=-(-tile_matmuls * cycles_per_tile // hw.grid.cores),
        traffic=tuple(flows),
        noc_bound_cycles=noc_bound_cycles(q, flows),
        cores_used=q.cores,
    )


def problem_ideal_cycles(hw: HardwareSpec, problem: Problem) -> int:
    """The compute roofline of the problem on ``hw`` (every candidate's ``ideal_cycles``), from the problem
    alone: no candidate's model is built, so it is bounded work for any shape."""
    if is_attention(problem.program):
        st = analyse_attention(problem.program)
        _, tile_matmuls = _attention_work(problem, st.batch_dims, st.q_dim, st.kv_dim, st.head_dim,
                                          problem.has_option("causal"))
    else:
        _, tile_matmuls = contraction_work(problem)
    return -(-tile_matmuls * hw.compute.matmul_tile_cycles[problem.fidelity] // hw.grid.cores)


def contraction_work(problem: Problem) -> tuple[int, int]:
    """(FLOPs, tile matmuls) of a contraction: 2*prod(extents), prod(tile counts)."""
    con = analyse_contraction(problem.program)
    flops, tile_matmuls = 2, 1
    for d in (*con.batch_dims, con.m_dim, con.n_dim, con.k_dim):
        flops *= problem.elements(d)
        tile_matmuls *= problem.tiles(d)
    return flops, tile_matmuls


def attention_work(q: AttentionQuantities) -> tuple[int, int]:
    """(FLOPs, tile matmuls) of attention: ``4*B*H*Sq*Skv*D`` (two matmuls), and for causal attention only
    the pairs on or below the diagonal, ``Sq*(Sq+1)/2`` instead of ``Sq*Skv`` (tiles: ``Sq_t*(Sq_t+1)/2``)."""
    return _attention_work(q.problem, q.st.batch_dims, q.st.q_dim, q.st.kv_dim, q.st.head_dim, q.causal)


def _attention_work(p: Problem, batch_dims: tuple[str, ...], q_dim: str, kv_dim: str, head_dim: str,
                    causal: bool) -> tuple[int, int]:
    batch = 1
    for d in batch_dims:
        batch *= p.elements(d)
    sq, skv, sq_t, skv_t = (p.elements(q_dim), p.elements(kv_dim), p.tiles(q_dim), p.tiles(kv_dim))
    pairs, tile_pairs = (sq * (sq + 1) // 2, sq_t * (sq_t + 1) // 2) if causal else (sq * skv, sq_t * skv_t)
    return 4 * batch * pairs * p.elements(head_dim), 2 * batch * tile_pairs * p.tiles(head_dim)
