"""The contraction's TTNN op: ``ttnn.matmul`` with the 2-D or 1-D multicast matmul program config of a
candidate (``ttnn_mapping.py``, the table both this export and ``predict --ttnn-config`` read; e.g.
``M@y,N@x|in0=mcast_x,in1=mcast_y`` is ``MatmulMultiCoreReuseMultiCastProgramConfig(transpose_mcast=False)``);
what every TTNN export file holds: ``targets/ttnn/exporter.py``; its program configs read and costed
(``predict``, ``ingest``, ``improve``): ``ttnn_config.py``.

Memory placements are realised, not dropped: an L1-sharded operand becomes a sharded ``ttnn.MemoryConfig``
on the cores the schedule uses (``targets/ttnn/sharding.py``), so the card runs the schedule that was
predicted:

- ``in0=l1_block`` / ``out=l1_block``, candidate ``M@y,N@x|in0=mcast_x,in1=mcast_y``: ``BLOCK_SHARDED``,
  shards ``[per_core_M, ceil(Kt/grid_x)]`` / ``[per_core_M, per_core_N]`` tiles, row-major over the
  ``grid_x x grid_y`` cores;
- ``in0=l1_height`` / ``out=l1_height``, candidate ``M@xy|in0=local,in1=mcast_xy`` (1-D,
  ``mcast_in0=False``): ``HEIGHT_SHARDED``, shards ``[per_core_M, Kt]`` / ``[per_core_M, Nt]`` tiles on the
  ``ceil(Mt/per_core_M)`` cores, rows filled first;
- ``out=l1_width``, candidate ``N@xy|in0=mcast_xy,in1=dram``: ``WIDTH_SHARDED``, shards ``[Mt, per_core_N]``
  tiles on the ``ceil(Nt/per_core_N)`` cores.

Every other L1 placement is refused with the reason (``in1`` in L1: TTNN's multicast matmuls read
``in1`` interleaved; ``l1``: a what-if with no TTNN layout). The call written is C = A @ B (no bias, no
activation); the program config would be the same with them.
"""

from __future__ import annotations

import math

from loom_explorer.export.exporter import ExportError
from loom_explorer.families.contraction.program import Contraction, analyse_contraction
from loom_explorer.families.contraction.ttnn_config import (
    captured_matmul,
    evaluate_matmul_config,
    exported_matmul_config,
    logical_matmul,
    parse_config,
    ttnn_default_evaluated,
    unpredicted_matmul,
)
from loom_explorer.families.contraction.ttnn_mapping import config_args, layout_of_candidate, ttnn_buffer_blocks
from loom_explorer.mapping.candidate import Candidate, Comm
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Placement, Problem
from loom_explorer.targets.ttnn.op import ProgramConfigs, TtnnOp, ttnn_memory
from loom_explorer.targets.ttnn.sharding import DRAM, interleaved, ranges_filling_rows, sharded


def _matmul_runs(problem: Problem, cand: Candidate) -> bool:
    structure = analyse_contraction(problem.program)
    return (
        not structure.batch_dims
        and layout_of_candidate(cand, structure.m_dim, structure.n_dim, structure.matmul.a, structure.matmul.b)
        is not None
    )


def _matmul_equivalent(schedule: SymbolicSchedule, v: dict[str, int]) -> tuple[str, dict[str, object], list[str]]:
    cand, problem = schedule.candidate, schedule.problem
    structure = _plain_contraction(problem)
    a, b = structure.matmul.a, structure.matmul.b
    layout = layout_of_candidate(cand, structure.m_dim, structure.n_dim, a, b)
    if layout is None:
        if Comm.local in (cand.comm(a), cand.comm(b)):  # an operand sharded in L1: can TTNN hold it that way?
            ttnn_memory(schedule, v)
        why = (
            "splits K over cores (TTNN's matmul has no split-K)"
            if cand.gather_axis
            else "reads an input from DRAM on every core of a 2-D grid (TTNN's 2-D config multicasts both inputs)"
            if not cand.is_1d
            else "does not multicast exactly one input to every core (TTNN's 1-D config does)"
        )
        raise ExportError(f"candidate {cand.name} has no TTNN program config: it {why}")
    ttnn_memory(schedule, v)
    notes = []
    ttnn_depth = ttnn_buffer_blocks(v[f"per_core_{structure.k_dim}"] // v["in0_block_w"])
    for tensor, param in ((a, "in0_buffer_depth"), (b, "in1_buffer_depth")):
        if v.get(param, ttnn_depth) != ttnn_depth:
            notes.append(f"{tensor}: TTNN buffers {ttnn_depth} block(s); this schedule chose {v[param]}")
    args = config_args(v, structure.m_dim, structure.n_dim).constructor_args(layout)
    return layout.config_class, args, notes


def _matmul_memory(schedule: SymbolicSchedule, v: dict[str, int]) -> dict[str, object]:
    cand, problem = schedule.candidate, schedule.problem
    structure = analyse_contraction(problem.program)
    mm = structure.matmul
    mt, nt, kt = (problem.tiles(d) for d in (structure.m_dim, structure.n_dim, structure.k_dim))
    pm, pn = v[f"per_core_{structure.m_dim}"], v[f"per_core_{structure.n_dim}"]
    gx, gy = v["grid_x"], v["grid_y"]
    m_axis, n_axis = cand.axis_of(structure.m_dim), cand.axis_of(structure.n_dim)
    block_grid = [[[0, 0], [gx - 1, gy - 1]]]
    memory: dict[str, object] = {}
    for tensor in (mm.a, mm.b, mm.out):
        placement = problem.placement(tensor)
        if placement.interleaved:
            memory[tensor] = interleaved(placement) or DRAM
            continue
        spec: dict[str, object] | None = None
        if placement is Placement.l1_block and (m_axis, n_axis) == ("y", "x"):
            if tensor == mm.a and cand.comm(mm.a) is Comm.mcast_x:
                spec = sharded("BLOCK_SHARDED", block_grid, (pm, math.ceil(kt / gx)))
            elif tensor == mm.out:
                spec = sharded("BLOCK_SHARDED", block_grid, (pm, pn))
        elif placement is Placement.l1_height and m_axis == "xy" and tensor in (mm.a, mm.out):
            ranges = ranges_filling_rows(math.ceil(mt / pm), gx)
            spec = sharded("HEIGHT_SHARDED", ranges, (pm, kt if tensor == mm.a else nt))
        elif placement is Placement.l1_width and n_axis == "xy" and tensor == mm.out:
            spec = sharded("WIDTH_SHARDED", ranges_filling_rows(math.ceil(nt / pn), gx), (mt, pn))
        if spec is None:
            why = (
                "TTNN's multicast matmuls read in1 interleaved"
                if tensor == mm.b
                else "a what-if placement (sharded as each candidate needs) with no TTNN layout"
                if placement is Placement.l1
                else f"TTNN has no {placement.value} layout for it on {cand.name}"
            )
            raise ExportError(
                f"{tensor}={placement.value}: {why}; exporting it DRAM-interleaved would measure "
                "another schedule, so it is refused"
            )
        memory[tensor] = spec
    return memory


def _plain_contraction(problem: Problem) -> Contraction:
    """The contraction of a GEMM without batch dimensions (what TTNN's matmul configs cover)."""
    structure = analyse_contraction(problem.program)
    if structure.batch_dims:
        raise ExportError(f"TTNN export covers GEMM and SDPA so far; {problem.program.name} is neither")
    return structure


def _matmul_call(schedule: SymbolicSchedule) -> str:
    """The ``ttnn.matmul`` call of the exported file; its program config (``_matmul_equivalent``) is the
    same with a bias or a fused activation, but the call written here is C = A @ B."""
    problem = schedule.problem
    structure = analyse_contraction(problem.program)
    if (
        any(
            problem.is_enabled(t.name)
            for t in problem.program.inputs
            if t.name not in (structure.matmul.a, structure.matmul.b)
        )
        or problem.activation
    ):
        raise ExportError("TTNN export covers C = A @ B so far (no bias, no activation)")
    mm = structure.matmul
    return _MATMUL_CALL.format(a=mm.a, b=mm.b, out=mm.out, m=structure.m_dim, k=structure.k_dim, n=structure.n_dim)


OP = TtnnOp(
    "contraction",
    _matmul_runs,
    _matmul_equivalent,
    _matmul_memory,
    _matmul_call,
    function="ttnn.matmul",
    default=ttnn_default_evaluated,
    captured=captured_matmul,
    configs=ProgramConfigs(parse=parse_config, evaluate=evaluate_matmul_config, exported=exported_matmul_config),
    unpredicted_candidate=unpredicted_matmul,
    logical_shape=logical_matmul,
)


_MATMUL_CALL = '''\
def host_inputs():
    """The host tensors (torch, bfloat16) the call uploads."""
    return {{"{a}": torch.randn((SHAPE["{m}"], SHAPE["{k}"]), dtype=torch.bfloat16),
            "{b}": torch.randn((SHAPE["{k}"], SHAPE["{n}"]), dtype=torch.bfloat16)}}


def op(tensors, configs):
    """The TTNN call once, on uploaded ``tensors``; returns its device output."""
    return ttnn.matmul(tensors["{a}"], tensors["{b}"], program_config=configs["program"],
                       compute_kernel_config=configs["compute"], memory_config=configs["memory"]["{out}"],
                       dtype=getattr(ttnn, DTYPES["{out}"]))


def expected(inputs):
    return inputs["{a}"].float() @ inputs["{b}"].float()
'''
