"""The gather family's model: each core reads the scattered table rows of its output rows, a small page each,
step by step (``quantities.py``, ``latency.py``, ``traffic.py``, ``buffers.py``, ``work.py``)."""

from __future__ import annotations

from functools import partial

from loom_explorer.families.gather.buffers import gather_buffers
from loom_explorer.families.gather.latency import gather_latency_terms
from loom_explorer.families.gather.program import GATHER
from loom_explorer.families.gather.quantities import build_gather_quantities
from loom_explorer.families.gather.traffic import gather_dram_read_bytes, gather_flows
from loom_explorer.families.gather.work import gather_work
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.families.base import FamilyModel, ModelFamily
from loom_explorer.problem import Problem


def build(hw: HardwareSpec, problem: Problem, candidate: Candidate, noc_bound: bool) -> FamilyModel:
    """The gather model of ``candidate`` (the table's read flow may bind a step when ``noc_bound``)."""
    q = build_gather_quantities(hw, problem, candidate)
    operations, work_cycles = gather_work(hw, problem)
    return FamilyModel(
        quantities=q,
        flows=tuple(gather_flows(q)),
        step_tensors=(q.st.table,),
        latency=partial(gather_latency_terms, q),
        dram_read_bytes=gather_dram_read_bytes(q),
        flops=operations,
        work_cycles=work_cycles,
        l1_buffers=tuple(gather_buffers(q)),
    )


FAMILY = ModelFamily(name=GATHER.name, build=build, work_cycles=lambda hw, problem: gather_work(hw, problem)[1])
