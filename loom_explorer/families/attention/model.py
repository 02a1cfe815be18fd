"""The attention family's model: FlashAttention-2 over query chunks (``quantities.py``, ``latency.py``,
``traffic.py``; L1 buffers in ``buffers.py``, the TT-Lang writer's rules in ``ttlang_rules.py``, each core's own
work in ``work.py``)."""

from __future__ import annotations

from functools import partial

from loom_explorer.families.attention.buffers import attention_l1_buffers
from loom_explorer.families.attention.latency import attention_dram_read_bytes, attention_latency_terms
from loom_explorer.families.attention.program import ATTENTION, analyse_attention
from loom_explorer.families.attention.quantities import build_attention_quantities
from loom_explorer.families.attention.traffic import attention_flows
from loom_explorer.families.attention.ttlang_rules import ttlang_rules
from loom_explorer.families.attention.work import core_flow_counts
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.families.base import FamilyModel, ModelFamily
from loom_explorer.problem import Problem


def build(hw: HardwareSpec, problem: Problem, candidate: Candidate, noc_bound: bool) -> FamilyModel:
    """The attention model of ``candidate``: k and v stream per step (q per query chunk); its writes cost
    one core's write time per chunk, so no write link shares (``noc_bound`` changes nothing here)."""
    flops, tile_matmuls = attention_work(problem, problem.has_option("causal"))
    q = build_attention_quantities(hw, problem, candidate)
    return FamilyModel(
        quantities=q,
        flows=tuple(attention_flows(q)),
        step_tensors=q.st.streamed[1:],
        latency=partial(attention_latency_terms, q),
        dram_read_bytes=attention_dram_read_bytes(q),
        flops=flops,
        work_cycles=tile_matmuls * hw.compute.matmul_tile_cycles[problem.fidelity],
        l1_buffers=tuple(attention_l1_buffers(q)),
        constraints=tuple(ttlang_rules(q)),
    )


def attention_work(p: Problem, causal: bool) -> tuple[int, int]:
    """(FLOPs, tile matmuls) of attention: ``4*B*H*Sq*Skv*D`` (two matmuls), and for causal attention only
    the pairs on or below the diagonal, ``Sq*(Sq+1)/2`` instead of ``Sq*Skv`` (tiles: ``Sq_t*(Sq_t+1)/2``)."""
    st = analyse_attention(p.program)
    batch = 1
    for d in st.batch_dims:
        batch *= p.elements(d)
    sq, skv, sq_t, skv_t = (p.elements(st.q_dim), p.elements(st.kv_dim), p.tiles(st.q_dim), p.tiles(st.kv_dim))
    pairs, tile_pairs = (sq * (sq + 1) // 2, sq_t * (sq_t + 1) // 2) if causal else (sq * skv, sq_t * skv_t)
    return 4 * batch * pairs * p.elements(st.head_dim), 2 * batch * tile_pairs * p.tiles(st.head_dim)


FAMILY = ModelFamily(
    name=ATTENTION.name,
    build=build,
    work_cycles=lambda hw, problem: (
        attention_work(problem, problem.has_option("causal"))[1] * hw.compute.matmul_tile_cycles[problem.fidelity]
    ),
    core_flow_counts=core_flow_counts,
)
