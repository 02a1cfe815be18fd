"""One device's ring-joint SDPA predicted from the attention family's SDPA model (``ring.py`` says what each
device computes) and the K/V all-gather from the collective model.

**Step costs.** One full ring step of a device is the family's ttnn SDPA (``ttnn_config.evaluate_sdpa_config``)
of its local problem ``B, H, Hkv, Sq = Skv = N_l, D`` without the causal mask (every Q chunk against every
K/V chunk of one device's block), at the call's chunk sizes and grid. Its slowest core runs ``c`` Q chunks
(``sdpa_split``) and ``s = c * n_k`` SDPA steps, so one SDPA step costs ``term / s`` of each of the terms
``qk_matmul``, ``softmax``, ``pv_matmul``, ``kv_streaming``, and one Q chunk ``term / c`` of ``q_load``,
``normalize`` and ``write_back``; ``launch`` and ``fill`` are paid once.

MLA (V's head dim ``Dv`` below Q/K's ``D``, V with its own ``Hv`` heads): ``q @ k^T`` is ``D`` wide but
``s @ v``, the output and the softmax's rescale of the output are ``Dv`` wide. The step then takes
``qk_matmul``, ``q_load`` and ``fill`` from the problem at ``D`` and ``softmax``, ``pv_matmul``,
``kv_streaming``, ``normalize`` and ``write_back`` from the same problem at ``D = Dv`` with ``Hkv = Hv``.
(Approximate: K's reads enter the streaming term at V's width; the family's kernel has one head dim.)

**K/V arrivals.** Device ``j``'s K and V slices (``Hkv * N_l * D`` and ``Hv * N_l * Dv`` elements in their
formats) reach a device ``k = |j - r|`` hops away along the line after ``fixed + k * (hop + link)`` cycles,
``fixed``, ``hop`` and ``link`` the collective model's terms of a 2-device all-gather of one such slice
(``model/collective.py``) on the mesh's links: the link into a device carries the slices behind it one
after another. Without a mesh description of the run (``hw/meshes``) the arrivals are not costed (0).

**Ring index.** ttnn's ``ring_index`` is the device's position along ``cluster_axis`` (``ring.ring_index_of``).
A profiler report prints neither the mesh shape nor ``cluster_axis``: the mesh is a shipped mesh of the
run's chip and device count when there is one (the axis with ``ring_size`` chips; axis 0 when both have),
else ``ring_size x devices / ring_size`` with the ring on axis 0, device ids row by row (an assumption).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.families.attention.ring import (
    RingError,
    RingJointShape,
    RingLatency,
    StepCosts,
    ring_index_of,
    ring_joint_latency,
    ring_joint_shape,
)
from loom_explorer.families.attention.ttnn_config import (
    TtnnSdpaConfig,
    captured_sdpa,
    captured_sdpa_config,
    evaluate_sdpa_config,
    sdpa_split,
)
from loom_explorer.hardware.mesh_load import list_meshes, load_mesh
from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.collective import CollectiveKind, CollectiveOp, FabricTopology, collective_model
from loom_explorer.problem import Problem
from loom_explorer.targets.ttnn.config import TtnnConfig
from loom_explorer.targets.ttnn.evaluate import Evaluated
from loom_explorer.targets.ttnn.op import CapturedCall, RingAttentionCall

STEP_TERMS = ("qk_matmul", "softmax", "pv_matmul", "kv_streaming")
CHUNK_TERMS = ("q_load", "normalize", "write_back")
FIXED_TERMS = ("launch", "fill")
FROM_V = frozenset({"softmax", "pv_matmul", "kv_streaming", "normalize", "write_back"})  # Dv-wide under MLA


@dataclass(frozen=True, slots=True)
class RingMesh:
    """The mesh a ring runs on: ``rows x columns`` devices, the ring along ``cluster_axis``, and how it was
    told (``ring_predict`` module docstring); ``mesh`` the shipped description when there is one."""

    rows: int
    columns: int
    cluster_axis: int
    how: str
    mesh: MeshSpec | None = None


def ring_mesh(chip: str, devices: int, ring_size: int) -> RingMesh:
    """The mesh of a run on ``devices`` chips ``chip`` with a ring of ``ring_size`` (module docstring)."""
    if devices < ring_size or devices % ring_size:
        raise RingError(f"a ring of {ring_size} devices does not divide the run's {devices} devices")
    for name in list_meshes():
        mesh = load_mesh(name)
        if mesh.chip != chip or mesh.rows.chips * mesh.columns.chips != devices:
            continue
        axes = [a for a, ax in enumerate((mesh.rows, mesh.columns)) if ax.chips == ring_size]
        if axes:
            return RingMesh(mesh.rows.chips, mesh.columns.chips, axes[0], f"mesh {name}", mesh)
    how = f"assumed {ring_size}x{devices // ring_size} mesh, ring on cluster_axis 0, device ids row by row"
    return RingMesh(ring_size, devices // ring_size, 0, how)


def _terms(ev: Evaluated) -> dict[str, int]:
    solution = ev.result.solution
    if solution is None:
        conflict = ev.result.conflict
        raise RingError(f"the local SDPA step is illegal: {conflict.message if conflict else 'no schedule'}")
    return dict(solution.breakdown)


def step_costs(
    hw: HardwareSpec, problem: Problem, cfg: TtnnSdpaConfig, v_heads: int, v_head_dim: int
) -> tuple[StepCosts, Evaluated]:
    """One SDPA step's, one Q chunk's and the fixed costs of a full ring step (module docstring), and the
    family's evaluation of the full step at ``D``."""
    st = analyse_attention(problem.program)
    full = replace(problem, options=problem.options - {"causal"})
    at_d = evaluate_sdpa_config(hw, full, cfg)
    terms_d = _terms(at_d)
    terms_v = terms_d
    if v_head_dim != problem.elements(st.head_dim) or v_heads != problem.elements("Hkv"):
        shape = dict(full.shape) | {st.head_dim: v_head_dim, "Hkv": v_heads}
        terms_v = _terms(evaluate_sdpa_config(hw, replace(full, shape=tuple(shape.items())), cfg))
    _, chunks, _ = sdpa_split(full, cfg.q_chunk_size, math.prod(cfg.compute_with_storage_grid_size))
    steps = chunks * -(-problem.tiles(st.kv_dim) // (cfg.k_chunk_size // 32))

    def term(name: str) -> int:
        return (terms_v if name in FROM_V else terms_d)[name]

    costs = StepCosts(
        step=tuple((n, term(n) / steps) for n in STEP_TERMS),
        chunk=tuple((n, term(n) / chunks) for n in CHUNK_TERMS),
        merge_cycles=term("write_back") / chunks,
        fixed=tuple((n, float(term(n))) for n in FIXED_TERMS),
    )
    return costs, at_d


def kv_arrivals(
    hw: HardwareSpec, problem: Problem, call: RingAttentionCall, ring_index: int, mesh: RingMesh
) -> dict[int, int]:
    """Cycles until each ring device's K and V are in device ``ring_index``'s DRAM (module docstring); {}
    without a mesh description."""
    if mesh.mesh is None:
        return {}
    st = analyse_attention(problem.program)
    q, k, v = st.streamed
    n_l = problem.elements(st.q_dim)
    tiles_k = problem.elements("Hkv") * -(-n_l // 32) * problem.tiles(st.head_dim)
    tiles_v = call.v_heads * -(-n_l // 32) * -(-call.v_head_dim // 32)
    k_tile, v_tile = hw.tile_bytes[problem.data_format(k)], hw.tile_bytes[problem.data_format(v)]
    axis = (mesh.mesh.rows, mesh.mesh.columns)[mesh.cluster_axis]
    one = collective_model().latency(
        CollectiveOp(
            CollectiveKind.all_gather,
            2,
            FabricTopology.linear,
            max(1, axis.links),
            tiles_k * k_tile + tiles_v * v_tile,
            max(k_tile, v_tile),
        ),
        mesh.mesh,
        hw,
    )
    per_hop = one.hop_cycles + max(one.link_cycles, one.local_cycles)
    return {j: one.fixed_cycles + abs(j - ring_index) * per_hop for j in range(call.ring_size) if j != ring_index}


@dataclass(frozen=True, slots=True)
class RingPrediction:
    """One device's prediction: the ring's shape in chunks, the device's place, its latency, the mesh."""

    shape: RingJointShape
    ring_index: int
    latency: RingLatency
    mesh: RingMesh
    costs: StepCosts


def predict_ring_joint(
    hw: HardwareSpec, problem: Problem, cfg: TtnnSdpaConfig, call: RingAttentionCall
) -> tuple[RingPrediction, Evaluated]:
    """Device ``call.device_id``'s ring-joint SDPA (module docstrings of this module and ``ring.py``)."""
    if call.device_id is None or call.devices is None:
        raise RingError("a ring-joint SDPA row needs its DEVICE ID and the run's devices to place it in the ring")
    st = analyse_attention(problem.program)
    mesh = ring_mesh(hw.name, call.devices, call.ring_size)
    ring_index = ring_index_of(call.device_id, mesh.rows, mesh.columns, mesh.cluster_axis)
    shape = ring_joint_shape(
        batch_heads=math.prod(problem.elements(d) for d in ("B", "H")),
        local_tokens=problem.elements(st.q_dim),
        joint_tokens=call.joint_tokens,
        q_chunk_size=cfg.q_chunk_size,
        k_chunk_size=cfg.k_chunk_size,
        ring_size=call.ring_size,
        logical_n=call.logical_n,
        causal=problem.has_option("causal"),
        balanced=call.is_balanced,
    )
    costs, evaluated = step_costs(hw, problem, cfg, call.v_heads, call.v_head_dim)
    cores = math.prod(cfg.compute_with_storage_grid_size)
    latency = ring_joint_latency(shape, ring_index, cores, costs, kv_arrivals(hw, problem, call, ring_index, mesh))
    return RingPrediction(shape, ring_index, latency, mesh, costs), evaluated


def evaluate_ring_joint(hw: HardwareSpec, problem: Problem, cfg: TtnnSdpaConfig, call: RingAttentionCall) -> Evaluated:
    """``predict_ring_joint`` as the family's evaluation of the local SDPA with the device's time and terms
    (what ``ingest`` records for the row)."""
    prediction, evaluated = predict_ring_joint(hw, problem, cfg, call)
    solution = evaluated.result.solution
    assert solution is not None, "step_costs refuses an illegal step"
    lat = prediction.latency
    ringed = replace(solution, latency_cycles=lat.total_cycles, breakdown=lat.terms)
    return replace(evaluated, result=replace(evaluated.result, solution=ringed))


def captured_attention(hw: HardwareSpec, problem: Problem, call: CapturedCall) -> tuple[TtnnConfig | None, Evaluated]:
    """``TtnnOp.captured`` of the attention op: a ring op's device (``evaluate_ring_joint``) at the config it
    named, any other call ``ttnn_config.captured_sdpa``."""
    if call.ring is None:
        return captured_sdpa(hw, problem, call)
    cfg = captured_sdpa_config(hw, call)
    return cfg, evaluate_ring_joint(hw, problem, cfg, call.ring)
