"""The flash-decoding family's model (``FAMILY``): attention's online softmax over each core's run of a group's
key chunks, plus the gather and combine of the partials (``quantities.py``, ``latency.py``; L1 buffers in
``buffers.py``, each core's own work in ``work.py``). Its work is attention's."""

from __future__ import annotations

from functools import partial

from loom_explorer.families.attention.latency import attention_dram_read_bytes
from loom_explorer.families.attention.roofline import attention_work
from loom_explorer.families.flash_decoding.buffers import decode_l1_buffers
from loom_explorer.families.flash_decoding.latency import decode_flows, decode_latency_terms
from loom_explorer.families.flash_decoding.program import FLASH_DECODING
from loom_explorer.families.flash_decoding.quantities import (
    DecodeQuantities,
    build_decode_quantities,
    decode_coverage,
    ttnn_decode_constraints,
)
from loom_explorer.families.flash_decoding.work import core_flow_counts
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.families.base import FamilyModel, ModelFamily
from loom_explorer.model.schedule import Constraint
from loom_explorer.problem import KernelTarget, Problem


def build(hw: HardwareSpec, problem: Problem, candidate: Candidate, noc_bound: bool) -> FamilyModel:
    """The flash-decoding model of ``candidate``: attention's, with the gather and combine of the partials
    (``latency.py``); k and v stream per step."""
    flops, tile_matmuls = attention_work(problem, problem.has_option("causal"))
    d = build_decode_quantities(hw, problem, candidate)
    return FamilyModel(
        quantities=d,
        flows=tuple(decode_flows(d)),
        step_tensors=d.st.streamed[1:],
        latency=partial(decode_latency_terms, d),
        dram_read_bytes=attention_dram_read_bytes(d),
        flops=flops,
        work_cycles=tile_matmuls * hw.compute.matmul_tile_cycles[problem.fidelity],
        l1_buffers=tuple(decode_l1_buffers(d)),
        constraints=tuple(decode_constraints(d)),
    )


def decode_constraints(q: DecodeQuantities) -> list[Constraint]:
    """Flash-decoding's coverage of each group's key chunks (``quantities.py``), and ttnn's own rules on its
    split for that target; nothing else beyond the shared constraint families."""
    return decode_coverage(q) + (ttnn_decode_constraints(q) if q.problem.target is KernelTarget.ttnn else [])


FAMILY = ModelFamily(
    name=FLASH_DECODING.name,
    build=build,
    work_cycles=lambda hw, problem: (
        attention_work(problem, problem.has_option("causal"))[1] * hw.compute.matmul_tile_cycles[problem.fidelity]
    ),
    core_flow_counts=core_flow_counts,
)
