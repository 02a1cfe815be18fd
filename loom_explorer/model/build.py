"""Build the symbolic schedule of a candidate: parameters, every constraint family, latency terms.

The program's kernel family (``model/families/``) supplies the model of the candidate: its quantities,
traffic flows, latency terms, DRAM reads and work; the constraint families (``model/constraints/``), the
NoC link times of the flows (``model/noc_bound.py``, a further argument of each step's max) and the
schedule's assembly are shared.
"""

from __future__ import annotations

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.constraints import constraints
from loom_explorer.model.expr import total
from loom_explorer.model.families import model_family
from loom_explorer.model.noc_bound import noc_bound_cycles, step_link_shares
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Problem


def build_schedule(
    hw: HardwareSpec, problem: Problem, candidate: Candidate, noc_bound: bool = True
) -> SymbolicSchedule:
    """``noc_bound=False`` leaves the NoC link times out of the steps (``model/noc_bound.py``), to see what
    they change."""
    family = model_family(problem.program, candidate)
    model = family.build(hw, problem, candidate, noc_bound)
    q, flows = model.quantities, list(model.flows)
    step_links = step_link_shares(q, flows, model.step_tensors) if noc_bound else []
    objective, terms, lower_bound = model.latency(step_links)
    buffers = model.l1_buffers
    return SymbolicSchedule(
        hardware=hw,
        problem=problem,
        candidate=candidate,
        params=q.params,
        constraints=constraints(q, buffers, list(model.constraints)),
        latency=objective,
        latency_lower_bound=lower_bound,
        terms=tuple(terms),
        l1_buffers=buffers,
        l1_bytes=total(b.bytes_expr for b in buffers),
        dram_read_bytes=model.dram_read_bytes,
        flops=model.flops,
        ideal_cycles=-(-model.work_cycles // hw.grid.cores),
        traffic=tuple(flows),
        noc_bound_cycles=noc_bound_cycles(q, flows),
        cores_used=q.cores,
    )


def problem_ideal_cycles(hw: HardwareSpec, problem: Problem) -> int:
    """The compute roofline of the problem on ``hw`` (every candidate's ``ideal_cycles``), from the problem
    alone: no candidate's model is built, so it is bounded work for any shape."""
    return -(-model_family(problem.program).work_cycles(hw, problem) // hw.grid.cores)
