"""The data-movement family's model: blocks of tiles per core, every source streamed with them and the output
written back (``quantities.py`` for the notation, ``latency.py`` for the maths; a tiled reshape's
``reshape.py``, a tiled HC transpose's ``transpose_hc.py``)."""

from __future__ import annotations

from functools import partial

from loom_explorer.families.data_movement.buffers import data_movement_buffers
from loom_explorer.families.data_movement.latency import data_movement_latency_terms
from loom_explorer.families.data_movement.program import DATA_MOVEMENT
from loom_explorer.families.data_movement.quantities import build_data_movement_quantities
from loom_explorer.families.data_movement.reshape import remaps, reshape_latency_terms
from loom_explorer.families.data_movement.traffic import data_movement_dram_read_bytes, data_movement_flows
from loom_explorer.families.data_movement.transpose_hc import scatters, transpose_hc_latency_terms
from loom_explorer.families.data_movement.work import data_movement_work
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.families.base import FamilyModel, ModelFamily
from loom_explorer.model.noc_bound import write_link_shares
from loom_explorer.problem import Problem


def build(hw: HardwareSpec, problem: Problem, candidate: Candidate, noc_bound: bool) -> FamilyModel:
    """The data-movement model of ``candidate``; the output writes' link shares bound the writes (when
    ``noc_bound``)."""
    q = build_data_movement_quantities(hw, problem, candidate)
    flows = data_movement_flows(q)
    return FamilyModel(
        quantities=q,
        flows=tuple(flows),
        step_tensors=q.streamed,
        latency=(
            partial(reshape_latency_terms, q)
            if remaps(problem.program)
            else partial(transpose_hc_latency_terms, q)
            if scatters(problem.program)
            else partial(data_movement_latency_terms, q, write_links=write_link_shares(q, flows) if noc_bound else [])
        ),
        dram_read_bytes=data_movement_dram_read_bytes(q),
        flops=0,
        work_cycles=data_movement_work(hw, problem),
        l1_buffers=tuple(data_movement_buffers(q)),
    )


FAMILY = ModelFamily(name=DATA_MOVEMENT.name, build=build, work_cycles=data_movement_work)
