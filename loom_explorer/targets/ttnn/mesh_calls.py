"""A proven multi-chip plan (``mesh/plan.py``) as the ttnn calls that run it: the records the script writer
(``mesh_script.py``) and the plan's JSON read. No ttnn here: everything is plain data.

**The mesh device.** The plan's view is the ``MeshShape`` ttnn opens: the ``ring`` view as ``(1, chips)``
(tt-transformers opens a T3000 so; its one axis is ``cluster_axis`` 1), any other view as ``(rows,
columns)`` of the mesh (``rows`` is ``cluster_axis`` 0, ``columns`` 1: ``hardware/mesh_schema.py``). The
fabric is ``FABRIC_1D_RING`` when a collective of the plan runs as a ring, else ``FABRIC_1D``: ttnn 0.81.1's
``FabricConfig`` members, paired with ``Topology.Ring`` and ``Topology.Linear`` as tt-metal's own all-gather
sweeps pair them (a test importing ``tests/nightly/t3000/ccl/test_minimal_all_gather_async.py``).

**Tensors.** Every tensor between ops is ``[1, 1, rows, cols]`` (``mesh/states.py``); on each mesh dim it is
replicated (``PlacementReplicate``), sharded on its rows (``PlacementShard(-2)``) or its columns
(``PlacementShard(-1)``). A tensor the script uploads (the graph's input in its planned state, each op's
weights) carries one placement per mesh dim: a matmul's ``[1, 1, K, N]`` weight is sharded on ``N`` (-1)
along an axis of role ``N``, on ``K`` (-2) along one of role ``K``, replicated elsewhere; a norm's
``[1, 1, 1, W]`` weight is sharded (-1) along a ``cols`` (distributed) axis; decode attention's K/V caches
``[B, Hkv, Skv, D]`` on heads (1) or users (0).

**Transitions.** A plan's edge (``joint.Edge``) moves a tensor from its producer's state to a reader's, one
axis after the other: first every free step (replicated to sharded: ``ttnn.mesh_partition``, a per-device
slice without the fabric), then the plan's collectives in its order: an all-gather concatenates the axis'
slices (``dim`` -2 for ``Sr``, -1 for ``Sc``; a change of sharded dim is the gather then a partition on the
new dim), a reduce-scatter scatters the partial sums on the reader's sharded dim, an all-reduce keeps the
shape. Each carries the plan's ``num_links`` and ``topology`` and the piece each device holds before it
(``piece_bytes``: the plan's ``slice_bytes`` for a gather, ``n`` times it for a reduction).

**Sequence split** (``seq``, ``splits.py``): ``ttnn.transformer.ring_distributed_scaled_dot_product_attention``
with ``ring_size`` the axis' chips, each chip's ``ring_id`` left to ttnn, which infers it from the device's
coordinate on the mesh dim whose size is ``ring_size`` (dim 0 first: ``ring_distributed_sdpa_program_factory.cpp``
@ 00fca5923584fcfa5a069593b010f93f449d3be3), so the axis must be that dim. The op writes chip ``i``'s query
chunks ``i`` and ``2p - 1 - i``; the script restores the sequence order as llama3_70b_galaxy does
(``llama_attention.py`` @ 00d4c974a4ed4a272e1d09e533f530841ae79ad1) and the plan prices it (``splits.seq_gathers``,
whose ``num_links``/``topology`` it passes): an all-gather of every chip's first chunk and one of its second
(gathered in chip order, so reversed chunk by chunk) and a concat, replicated on the axis. ttnn requires the
chunk (``S / 2p`` rows) to be a multiple of ``q_chunk_size``; a solved schedule whose query chunk is not runs
ttnn's default config.

**Per-chip configs.** Each op's per-chip problem is solved again through the results store (read back when
the plan proved it) and its best schedule exported as the single-chip ttnn export does (``ttnn_equivalent``,
``compute_config_args``). Between collectives tensors are DRAM-interleaved (``mesh/transitions.py``), so a
schedule ttnn cannot run on DRAM-interleaved operands (element-wise and norm ops pin theirs only with L1
shards) runs ttnn's own default, and the record says why (``ChipConfig.notes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod
from pathlib import Path
from typing import Literal

from loom_explorer.export.exporter import ExportError
from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mesh.graph import OpGraph, OpKind, OpSpec
from loom_explorer.mesh.joint import Edge, JointSolution
from loom_explorer.mesh.onchip import chip_problem
from loom_explorer.mesh.plan import MeshPlan
from loom_explorer.mesh.splits import ChipProblem, Split, seq_gathers, stats_gathers
from loom_explorer.mesh.states import AxisState, MeshView, TensorState, mesh_views
from loom_explorer.mesh.transitions import AxisConfig, TensorSize
from loom_explorer.model.collective import CollectiveKind, FabricTopology
from loom_explorer.solve.memory import solve_with_memory
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttnn.exporter import compute_config_args
from loom_explorer.targets.ttnn.op import ttnn_equivalent, ttnn_memory
from loom_explorer.targets.ttnn.sharding import DRAM

MESH_PLAN_SCHEMA_VERSION = 1
SHARD_DIM = {AxisState.rows: -2, AxisState.cols: -1}
TOPOLOGY = {FabricTopology.linear: "Linear", FabricTopology.ring: "Ring"}

CollectiveName = Literal["all_gather", "reduce_scatter", "all_reduce", "mesh_partition"]


@dataclass(frozen=True, slots=True)
class HostTensor:
    """A tensor the script makes on the host and uploads: ``shape`` (elements), per mesh dim the tensor dim
    it is sharded on (None: replicated), and its ttnn data type (the plan's precision: ``mesh/precision.py``)."""

    name: str
    shape: tuple[int, ...]
    placements: tuple[int | None, ...]
    dtype: str = "bfloat16"


@dataclass(frozen=True, slots=True)
class CollectiveCall:
    """One ttnn collective of a transition (module docstring): reads ``source``, writes ``target`` (tensor keys
    ``NAME@STATE``). ``dim`` None for an all-reduce; ``num_links``/``topology`` None for ``mesh_partition``."""

    tensor: str
    consumers: tuple[str, ...]
    kind: CollectiveName
    source: str
    target: str
    axis: str
    cluster_axis: int
    dim: int | None
    num_links: int | None
    topology: str | None
    piece_bytes: int  # what each device holds before the step
    latency_cycles: int  # the plan's cost of this step (0: free)


@dataclass(frozen=True, slots=True)
class ChipConfig:
    """The per-chip schedule an op runs with: its problem, the schedule's candidate and latency, the ttnn
    program config (class None: ttnn's default runs) and compute config, and notes (why the default runs,
    what ttnn fixes differently)."""

    problem: str
    candidate: str
    latency_cycles: int
    config_class: str | None
    config_args: dict[str, object]
    compute_args: dict[str, object]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StatsGather:
    """The distributed norm's all-gather of its per-row statistics along one axis (``splits.py``)."""

    axis: str
    cluster_axis: int
    num_links: int
    topology: str


@dataclass(frozen=True, slots=True)
class FusedGather:
    """The all-gather a fused split (``agN``, one-axis views only: ``splits.py``) gathers its input with
    inside ``all_gather_matmul_async``: along ``axis``, the input tensor's planned links and topology."""

    axis: str
    cluster_axis: int
    num_links: int
    topology: str


@dataclass(frozen=True, slots=True)
class SeqRing:
    """A ``seq`` split's ring (module docstring): along ``axis`` (``cluster_axis``) of ``ring_size`` chips, each
    chip's two chunks of ``chunk_rows`` rows restored to sequence order by gathers at ``num_links``/``topology``
    (``splits.seq_gathers``', as the plan prices them)."""

    axis: str
    cluster_axis: int
    ring_size: int
    chunk_rows: int
    num_links: int
    topology: str


@dataclass(frozen=True, slots=True)
class OpCall:
    """One op of the plan as ttnn runs it on every chip: its split, the tensors it reads and writes (keys
    ``NAME@STATE``), its weights, its per-chip local dims and schedule, and the plan's cycles for it."""

    op: str
    kernel: str
    split: str
    roles: tuple[str, ...]
    inputs: tuple[str, ...]
    output: str
    weights: tuple[HostTensor, ...]
    local_dims: tuple[tuple[str, int], ...]
    chip: ChipConfig
    predicted_cycles: int
    causal: bool = False
    decode: bool = False
    stats_gathers: tuple[StatsGather, ...] = ()
    fused: FusedGather | None = None
    seq: SeqRing | None = None


@dataclass(frozen=True, slots=True)
class MeshProgram:
    """A whole plan as ttnn calls, in the order every chip runs them (``steps``)."""

    graph: str
    mesh: str
    chip: str
    view: str
    mesh_shape: tuple[int, int]
    fabric_config: str
    pins: tuple[str, ...]
    latency_cycles: int
    latency_us: float
    input: HostTensor
    input_key: str
    output_key: str
    steps: tuple[OpCall | CollectiveCall, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def ops(self) -> tuple[OpCall, ...]:
        return tuple(s for s in self.steps if isinstance(s, OpCall))

    @property
    def collectives(self) -> tuple[CollectiveCall, ...]:
        return tuple(s for s in self.steps if isinstance(s, CollectiveCall))


def key(tensor: str, state: TensorState) -> str:
    return f"{tensor}@{state.label}"


def mesh_layout(mesh: MeshSpec, view: MeshView) -> tuple[tuple[int, int], dict[str, int]]:
    """The ``MeshShape`` ``view`` opens as and each of its axes' ``cluster_axis`` (module docstring)."""
    if view.name == "ring":
        return (1, view.chips), {view.axes[0].name: 1}
    return (mesh.rows.chips, mesh.columns.chips), {"rows": 0, "columns": 1}


def placements(cluster: dict[str, int], view: MeshView, per_axis: dict[str, int | None]) -> tuple[int | None, ...]:
    """One placement per mesh dim: the tensor dim sharded along the view axis on that dim (None: replicated)."""
    out: list[int | None] = [None, None]
    for a in view.axes:
        out[cluster[a.name]] = per_axis.get(a.name)
    return tuple(out)


def _state_dims(view: MeshView, state: TensorState) -> dict[str, int | None]:
    dims: dict[str, int | None] = {}
    for a, s in zip(view.axes, state.axes, strict=True):
        if s is AxisState.partial:
            raise ExportError(f"tensor state {state.label}: partial sums are never uploaded")
        dims[a.name] = SHARD_DIM.get(s)
    return dims


def chip_config(
    hw: HardwareSpec, problem: ChipProblem, store: str | Path | None, use_memory: bool, time_limit_seconds: float
) -> ChipConfig:
    """The best schedule of ``problem`` (through the results store, as the planner solved it) as ttnn configs
    (module docstring)."""
    session = Session(hw, chip_problem(problem))
    options = SolveOptions(time_limit_seconds=time_limit_seconds, fastest=1, explain=False)
    found = solve_with_memory(session, {}, options, store=store, use_memory=use_memory)
    solved = [r for r in found.results if r.solution is not None]
    if not solved:
        raise ExportError(f"per-chip problem {problem.label}: no schedule")
    best = min(solved, key=lambda r: r.solution.latency_cycles if r.solution else 0)
    assert best.solution is not None
    schedule, values = session.schedule(best.candidate_name), best.solution.values()
    compute = compute_config_args(schedule.problem)
    try:
        name, args, notes = ttnn_equivalent(schedule, values)
        memory = ttnn_memory(schedule, values)
    except ExportError as exc:
        return ChipConfig(
            problem.label, best.candidate_name, best.solution.latency_cycles, None, {}, compute,
            (f"ttnn's default runs: no ttnn config runs this schedule on DRAM-interleaved tensors ({exc})",),
        )  # fmt: skip
    in_l1 = [t for t, m in memory.items() if m != DRAM]
    if in_l1:
        why = f"ttnn's default runs: the schedule keeps {', '.join(in_l1)} in L1; the plan's tensors are in DRAM"
        return ChipConfig(problem.label, best.candidate_name, best.solution.latency_cycles, None, {}, compute, (why,))
    return ChipConfig(
        problem.label, best.candidate_name, best.solution.latency_cycles, name, args, compute, tuple(notes)
    )


def _transition_calls(edge: Edge, view: MeshView, cluster: dict[str, int], size: TensorSize) -> list[CollectiveCall]:
    """The calls of one state change (module docstring)."""
    current = list(edge.src.axes)
    calls: list[CollectiveCall] = []

    def step(
        kind: CollectiveName, i: int, new: AxisState, dim: int | None, cfg: AxisConfig | None, cycles: int
    ) -> None:
        before = TensorState(view.name, tuple(current))
        current[i] = new
        after = TensorState(view.name, tuple(current))
        calls.append(
            CollectiveCall(
                edge.tensor, edge.consumers, kind, key(edge.tensor, before), key(edge.tensor, after),
                view.axes[i].name, cluster[view.axes[i].name], dim,
                None if cfg is None else cfg.links, None if cfg is None else TOPOLOGY[cfg.topology],
                size.local_bytes(view, before), cycles,
            )
        )  # fmt: skip

    for i, (a, b) in enumerate(zip(edge.src.axes, edge.dst.axes, strict=True)):
        if a is AxisState.replicated and b in SHARD_DIM:
            step("mesh_partition", i, b, SHARD_DIM[b], None, 0)
    for c in edge.cost.collectives:
        i = next(j for j, a in enumerate(view.axes) if a.name == c.axis)
        a, b = current[i], edge.dst.axes[i]
        cfg = AxisConfig(c.links, c.topology)
        if c.kind is CollectiveKind.all_gather:
            step("all_gather", i, AxisState.replicated, SHARD_DIM[a], cfg, c.latency_cycles)
            if b in SHARD_DIM:
                step("mesh_partition", i, b, SHARD_DIM[b], None, 0)
        elif c.kind is CollectiveKind.reduce_scatter:
            step("reduce_scatter", i, b, SHARD_DIM[b], cfg, c.latency_cycles)
        else:
            step("all_reduce", i, b, None, cfg, c.latency_cycles)
    if tuple(current) != edge.dst.axes:
        raise ExportError(f"tensor {edge.tensor}: no ttnn calls take {edge.src.label} to {edge.dst.label}")
    return calls


def _weights(op: OpSpec, s: Split, view: MeshView, cluster: dict[str, int]) -> tuple[HostTensor, ...]:
    roles = dict(zip((a.name for a in view.axes), s.roles, strict=True))
    if op.kind is OpKind.matmul:
        dims = {a: {"N": -1, "K": -2}.get(r) for a, r in roles.items()}
        shape = (1, 1, op.dim("K"), op.dim("N"))
        return (HostTensor(f"{op.name}.weight", shape, placements(cluster, view, dims), op.format("in1").value),)
    if op.kind is OpKind.norm:
        dims = {a: (-1 if r == "cols" else None) for a, r in roles.items()}
        return (HostTensor(f"{op.name}.weight", (1, 1, 1, op.dim("W")), placements(cluster, view, dims)),)
    if op.kind is OpKind.attention and op.dim("Sq") == 1:  # decode: the K/V caches the query reads
        dims = {a: {"heads": 1, "batch": 0}.get(r) for a, r in roles.items()}
        shape = (op.dim("B"), op.dim("Hkv"), op.dim("Skv"), op.dim("D"))
        p = placements(cluster, view, dims)
        return (
            HostTensor(f"{op.name}.k_cache", shape, p, op.format("k").value),
            HostTensor(f"{op.name}.v_cache", shape, p, op.format("v").value),
        )
    return ()


def _axis_config(sol: JointSolution, tensor: str, index: int) -> AxisConfig:
    return dict(sol.configs)[tensor].axes[index]


def _stats_gathers(op: OpSpec, s: Split, view: MeshView, cluster: dict[str, int]) -> tuple[StatsGather, ...]:
    """The norm's stats all-gathers as ``splits.stats_gathers`` costs them."""
    return tuple(
        StatsGather(g.axis.name, cluster[g.axis.name], g.config.links, TOPOLOGY[g.config.topology])
        for g in stats_gathers(op, view, s.roles, s.output)
    )


def ring_dim(mesh_shape: tuple[int, int], ring_size: int) -> int | None:
    """The mesh dim ttnn's ring-distributed SDPA infers its ring on (module docstring): dim 0 when it has
    ``ring_size`` devices, else dim 1 when it has, else None (ttnn refuses)."""
    return 0 if mesh_shape[0] == ring_size else 1 if mesh_shape[1] == ring_size else None


def _seq_ring(op: OpSpec, s: Split, view: MeshView, shape: tuple[int, int], cluster: dict[str, int]) -> SeqRing | None:
    """The ring of a ``seq`` split (module docstring); ExportError where ttnn cannot infer each chip's ring id."""
    if "seq" not in s.roles:
        return None
    i = s.roles.index("seq")
    axis = view.axes[i]
    dim = cluster[axis.name]
    if ring_dim(shape, axis.chips) != dim:
        raise ExportError(
            f"op {op.name}: split {s.name}: ttnn infers the ring id on the mesh dim of {axis.chips} chips (dim 0 "
            f"first); on mesh shape {shape} that is not the {axis.name} axis (dim {dim})"
        )
    cfg = seq_gathers(op, view, s.roles, s.output)[0].config
    chunk = op.dim("Sq") // (2 * axis.chips)
    return SeqRing(axis.name, dim, axis.chips, chunk, cfg.links, TOPOLOGY[cfg.topology])


def _ring_config(config: ChipConfig, ring: SeqRing) -> ChipConfig:
    """``config`` as the ring-distributed SDPA can take it (module docstring): ttnn's default when its query
    chunk does not divide a ring chunk."""
    q_chunk = config.config_args.get("q_chunk_size")
    if config.config_class is None or (isinstance(q_chunk, int) and ring.chunk_rows % q_chunk == 0):
        return config
    why = (
        f"ttnn's default runs: ring-distributed SDPA needs q_chunk_size ({q_chunk}) to divide each chip's chunk "
        f"of {ring.chunk_rows} rows"
    )
    return replace(config, config_class=None, config_args={}, notes=(*config.notes, why))


def mesh_program(
    plan: MeshPlan,
    mesh: MeshSpec,
    chip: HardwareSpec,
    graph: OpGraph,
    store: str | Path | None = None,
    use_memory: bool = True,
    time_limit_seconds: float = 30.0,
) -> MeshProgram:
    """``plan``'s answer as ttnn calls (module docstring); ExportError when the plan has no answer."""
    sol = plan.result
    if not isinstance(sol, JointSolution):
        raise ExportError(f"the plan has no split to export: {sol.message}")
    view = next(v for v in mesh_views(mesh) if v.name == sol.view)
    graph_ops = graph.ops
    shape, cluster = mesh_layout(mesh, view)
    chosen = dict(sol.splits)
    cycles = dict(sol.split_cycles)
    ops = {o.name: o for o in graph_ops}
    configs: dict[ChipProblem, ChipConfig] = {}
    steps: list[OpCall | CollectiveCall] = []
    edges_of: dict[str, list[Edge]] = {}
    for e in sol.edges:
        edges_of.setdefault(e.tensor, []).append(e)
    x = chosen["x"]
    topologies: set[str] = set()
    for e in edges_of.get("x", []):
        steps += _transition_calls(e, view, cluster, ops["x"].output)
    for op in graph_ops:
        if op.kind.value == "boundary":
            continue
        s = chosen[op.name]
        assert s.problem is not None
        if s.problem not in configs:
            configs[s.problem] = chip_config(chip, s.problem, store, use_memory, time_limit_seconds)
        fused = None
        if s.fused_axis is not None:
            cfg = _axis_config(sol, op.inputs[0], s.fused_axis)
            axis = view.axes[s.fused_axis]
            fused = FusedGather(axis.name, cluster[axis.name], cfg.links, TOPOLOGY[cfg.topology])
            topologies.add(TOPOLOGY[cfg.topology])
        gathers = _stats_gathers(op, s, view, cluster)
        topologies |= {g.topology for g in gathers}
        ring = _seq_ring(op, s, view, shape, cluster)
        chip_cfg = configs[s.problem]
        if ring is not None:
            chip_cfg = _ring_config(chip_cfg, ring)
            topologies.add(ring.topology)
        steps.append(
            OpCall(
                op.name, op.kernel, s.name, s.roles,
                tuple(key(name, state) for name, state in zip(op.inputs, s.inputs, strict=True)),
                key(op.name, s.output), _weights(op, s, view, cluster), s.problem.shape, chip_cfg,
                cycles[op.name], op.causal, op.kind is OpKind.attention and op.dim("Sq") == 1, gathers, fused, ring,
            )
        )  # fmt: skip
        for e in edges_of.get(op.name, []):
            steps += _transition_calls(e, view, cluster, op.output)
    topologies |= {c.topology for c in steps if isinstance(c, CollectiveCall) and c.topology}
    out_split = chosen["out"]
    final = ops["out"].inputs[0]
    notes = []
    plain = [c for c in steps if isinstance(c, CollectiveCall) and c.kind == "all_gather"]
    if plain or any(isinstance(o, OpCall) and o.stats_gathers for o in steps):
        notes.append(
            "ttnn 0.81.1's all_gather documents num_links and topology as deprecated and ignored: the calls pass "
            "the plan's values, the fabric chooses its own"
        )
    return MeshProgram(
        plan.graph, plan.mesh, chip.name, view.name, shape,
        "FABRIC_1D_RING" if "Ring" in topologies else "FABRIC_1D", plan.pins, sol.latency_cycles,
        chip.cycles_to_us(sol.latency_cycles),
        HostTensor("x", (1, 1, ops["x"].output.rows, ops["x"].output.cols),
                   placements(cluster, view, _state_dims(view, x.output))),
        key("x", x.output), key(final, out_split.inputs[0]), tuple(steps), tuple(notes),
    )  # fmt: skip


def local_shape_of(program: MeshProgram, tensor: HostTensor) -> tuple[int, ...]:
    """A chip's piece of a host tensor under its placements (whole slices: the plan's shapes divide)."""
    out = list(tensor.shape)
    for dim, chips in zip(tensor.placements, program.mesh_shape, strict=True):
        if dim is not None:
            out[dim] //= chips
    return tuple(out)


def chips(program: MeshProgram) -> int:
    return prod(program.mesh_shape)
