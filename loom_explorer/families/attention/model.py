"""The attention family's model: FlashAttention-2 over query chunks (``quantities.py``, ``latency.py``,
``traffic.py``; L1 buffers in ``buffers.py``, the TT-Lang writer's rules in ``ttlang_rules.py``, each core's own
work in ``work.py``)."""

from __future__ import annotations

from functools import partial

from loom_explorer.families.attention.buffers import attention_l1_buffers
from loom_explorer.families.attention.floors import attention_core_cycles
from loom_explorer.families.attention.latency import attention_dram_read_bytes, attention_latency_terms
from loom_explorer.families.attention.program import ATTENTION
from loom_explorer.families.attention.quantities import build_attention_quantities
from loom_explorer.families.attention.roofline import attention_work
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


FAMILY = ModelFamily(
    name=ATTENTION.name,
    build=build,
    work_cycles=lambda hw, problem: (
        attention_work(problem, problem.has_option("causal"))[1] * hw.compute.matmul_tile_cycles[problem.fidelity]
    ),
    core_flow_counts=core_flow_counts,
    core_floor_cycles=attention_core_cycles,
)
