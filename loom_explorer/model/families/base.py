"""The model-level contract of a kernel family: how a candidate of its programs becomes a symbolic schedule.

``model/build.py`` is generic: it asks the program's :class:`ModelFamily` (``model/families/__init__.py``)
for a :class:`FamilyModel` of the candidate and assembles the schedule from it and the shared constraint
families (``model/constraints/``), traffic link times (``model/noc_bound.py``) and L1 buffers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.expr import Expr
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.model.noc_bound import LinkShare
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import Constraint, L1Buffer, LatencyTerm, SymbolicSchedule
from loom_explorer.problem import Problem

Latency = Callable[[Sequence[LinkShare]], tuple[Expr, list[LatencyTerm], Expr]]
"""Given each step's NoC link shares: (objective, its breakdown into named terms, a redundant lower bound)."""


@dataclass(frozen=True, eq=False)
class FamilyModel:
    """What a family's model of one candidate supplies to the generic builder.

    ``quantities``: parameters and shared per-core quantities (the constraint families read them);
    ``flows``: the traffic flows; ``step_tensors``: the inputs that travel every step (their link shares
    bound the step); ``latency``: the latency terms given the step link shares; ``dram_read_bytes``;
    ``flops`` and ``work_cycles``: the work of the candidate, the latter in one core's cycles at the ideal
    rates (tile matmuls at the fidelity's cycles per tile, element-wise ops at theirs); the compute roofline
    ``ideal_cycles`` is it spread over every core of the chip; ``l1_buffers``: one core's L1 buffers for
    ``problem.target`` (the L1 capacity constraint sums them); ``constraints``: the family's own constraints
    beyond the shared constraint families, each naming the constraint family it belongs to
    (``Constraint.family``), added after that family's. The family computes both from its own quantities."""

    quantities: GridQuantities
    flows: tuple[TrafficFlow, ...]
    step_tensors: tuple[str, ...]
    latency: Latency
    dram_read_bytes: Expr
    flops: int
    work_cycles: int
    l1_buffers: tuple[L1Buffer, ...]
    constraints: tuple[Constraint, ...] = ()


@dataclass(frozen=True, slots=True)
class ModelFamily:
    """A kernel family at the model layer, keyed by the program family's ``name`` (``program/structure.py``).

    ``build(hw, problem, candidate, noc_bound)``: the candidate's :class:`FamilyModel` (``noc_bound=False``
    leaves NoC link times out of the latency); ``work_cycles(hw, problem)``: the ``work_cycles`` of the whole
    problem (the compute roofline, from the problem alone, bounded work for any shape);
    ``core_flow_counts(schedule, values)``: for the tiles a schedule moves (``traffic/tiles.py``), each working
    core's own repetitions (in core order) of the flows whose count differs between cores, by flow name ({}:
    every core at the slowest core's counts, as the latency takes them; None: the family has no such flows);
    ``core_floor_cycles(hw, problem)``: a lower bound of every candidate's latency from the work its busiest core
    must do, building no candidate's model (0 where the family states none; None: no such floor).
    """

    name: str
    build: Callable[[HardwareSpec, Problem, Candidate, bool], FamilyModel]
    work_cycles: Callable[[HardwareSpec, Problem], int]
    core_flow_counts: Callable[[SymbolicSchedule, Mapping[str, int]], dict[str, tuple[int, ...]]] | None = None
    core_floor_cycles: Callable[[HardwareSpec, Problem], int] | None = None
