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
from loom_explorer.families.flash_decoding.buffers import decode_l1_buffers
from loom_explorer.families.flash_decoding.latency import decode_flows, decode_latency_terms
from loom_explorer.families.flash_decoding.quantities import (
    DecodeQuantities,
    build_decode_quantities,
    decode_coverage,
    ttnn_decode_constraints,
)
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.families.base import FamilyModel, ModelFamily
from loom_explorer.model.schedule import Constraint
from loom_explorer.problem import KernelTarget, Problem


def build(hw: HardwareSpec, problem: Problem, candidate: Candidate, noc_bound: bool) -> FamilyModel:
    """The attention model of ``candidate``: k and v stream per step (q per query chunk); its writes cost
    one core's write time per chunk, so no write link shares (``noc_bound`` changes nothing here).
    Flash-decoding (``kv_split``) adds the gather and combine of the partials
    (``families/flash_decoding/latency.py``)."""
    flops, tile_matmuls = attention_work(problem, problem.has_option("causal"))
    if candidate.kv_split:
        d = build_decode_quantities(hw, problem, candidate)
        return FamilyModel(
            quantities=d, flows=tuple(decode_flows(d)), step_tensors=d.st.streamed[1:],
            latency=partial(decode_latency_terms, d), dram_read_bytes=attention_dram_read_bytes(d), flops=flops,
            work_cycles=tile_matmuls * hw.compute.matmul_tile_cycles[problem.fidelity],
            l1_buffers=tuple(decode_l1_buffers(d)), constraints=tuple(decode_constraints(d)),
        )
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


def decode_constraints(q: DecodeQuantities) -> list[Constraint]:
    """Flash-decoding's coverage of each group's key chunks (``families/flash_decoding/quantities.py``), and
    ttnn's own rules on its split for that target; nothing else beyond the shared constraint families."""
    return decode_coverage(q) + (ttnn_decode_constraints(q) if q.problem.target is KernelTarget.ttnn else [])


FAMILY = ModelFamily(
    name=ATTENTION.name,
    build=build,
    work_cycles=lambda hw, problem: attention_work(problem, problem.has_option("causal"))[1]
    * hw.compute.matmul_tile_cycles[problem.fidelity],
    core_flow_counts=core_flow_counts,
)
