"""One mesh sweep task: a model's decoder layer in one phase, split over a mesh by the planner (ours, proven)
and by ttnn's hand-written split, recorded per op like a chip sweep's ops (runs on a worker).

A mesh sweep (``loom-explorer sweep --model llama-3-70b --hw t3000``) has one task per (mesh, phase): the
phase's decoder layer (``mesh/graph.py: model_graph``, the dims and layer count of ``sweep/ops.py: MODELS``, at
tt-transformers' performance precision, ``mesh/precision.py``, every layer's weights resident) is planned
twice by one ``mesh.plan.Planner`` (the per-chip problems both plans use are solved once): free (ours, proven
optimal) and under ttnn's split as pins (``ttnn_split_pins``: tt_transformers' 1 x 8 split on a T3000,
``mesh/ttnn_split.py``; llama3_70b_galaxy's 8 x 4 split on a Galaxy, ``mesh/ttnn_galaxy_split.py``; no other
mesh has one written, and its rows say so).

**Per op.** Every work op of the layer is one ``SweepRecord`` on the mesh (``hardware`` the mesh's name, the
op's full unsplit shape, ``dtype`` its activations' bfloat16 and ``precision`` the preset its weights ran at,
``LAYER_PRECISION``): ``best`` is our split (``candidate`` its name, ``params`` the per-chip problem's
dims, ``latency_cycles`` the op's share of the layer, ``collectives`` what that share contains);
``ttnn_default_ns`` is ttnn's split's share of the same op and ``ttnn_default_note`` its split and collectives,
so the report's speed-up is ttnn's over ours, per op and (summed) per layer. An op's share is its split's
charge (the proven on-chip optimum, plus the all-gathers it runs itself: the distributed norm's stats, a
``seq`` attention's two chunk gathers; or the fused all-gather + matmul's cost) plus the collectives
converting a tensor for it: each state change of a tensor is charged to the first work op reading the new
state (to the tensor's producer when only the layer's output reads it).
The shares of a layer add up to its latency per device (checked: a plan whose shares do not is a failure).
``utilisation`` is the per-chip problem's compute bound over the share; ``solve_seconds`` the whole phase's
(both plans), on every op of the phase.

Never raises: a plan that fails becomes ``failed`` records carrying the error; a ttnn split that cannot be
costed leaves ``ttnn_default_ns`` empty with the reason in the note.
"""

from __future__ import annotations

import hashlib
import time
import traceback
from dataclasses import dataclass, replace

from loom_explorer.hardware.mesh_load import load_mesh, mesh_chip
from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.hashing import hardware_sha256
from loom_explorer.mesh.graph import OpGraph, model_graph
from loom_explorer.mesh.joint import JointSolution
from loom_explorer.mesh.plan import Planner
from loom_explorer.mesh.precision import DEFAULT_PRECISION, precision
from loom_explorer.mesh.splits import split_gathers
from loom_explorer.mesh.states import MeshError, MeshView
from loom_explorer.mesh.ttnn_galaxy_split import galaxy_layer_pins
from loom_explorer.mesh.ttnn_split import ttnn_layer_pins
from loom_explorer.store import SweepChoice, SweepRecord, package_version
from loom_explorer.sweep.ops import DECODE_KV, MODELS, PHASES, OpsError, SweepOp, make_op
from loom_explorer.sweep.task import RecordPlace, SweepSettings, sweep_record


@dataclass(frozen=True, slots=True)
class MeshLayer:
    """A model's decoder layer in one phase (``sweep/ops.py: PHASES``)."""

    model: str
    phase: str

    @property
    def group(self) -> str:
        return f"{self.model} {self.phase}"


def mesh_layers(model: str) -> list[MeshLayer]:
    """Every phase's decoder layer of ``model`` (``sweep/ops.py: MODELS``)."""
    name = model.lower()
    if name not in MODELS:
        raise OpsError(f"--model {model}: known models are {', '.join(MODELS)}")
    return [MeshLayer(name, phase) for phase, _, _ in PHASES]


LAYER_PRECISION = DEFAULT_PRECISION  # the precision preset a mesh sweep plans every layer at, on its records


def layer_graph(layer: MeshLayer) -> tuple[OpGraph, bool]:
    """(the layer's op graph, whether it is a prefill)."""
    rows, prefill = {p: (r, pf) for p, r, pf in PHASES}[layer.phase]
    model = MODELS[layer.model]
    prec = precision(LAYER_PRECISION)
    return model_graph("layer", model, rows, prefill, DECODE_KV, prec, model.layers), prefill


def layer_ops(layer: MeshLayer) -> tuple[SweepOp, ...]:
    """The layer's work ops as sweep ops (full shapes; labels ``<model> <phase>: <op>``)."""
    graph, _ = layer_graph(layer)
    return tuple(
        make_op(
            op.kernel,
            ",".join(f"{d}={v}" for d, v in op.dims),
            fidelity=op.fidelity.value,
            options={"causal"} if op.causal else (),
            label=f"{layer.group}: {op.name}",
        )
        for op in graph.work_ops
    )


def mesh_sha256(mesh: MeshSpec) -> str:
    """The SHA-256 of the mesh's validated contents and its chip's (``hashing.hardware_sha256``)."""
    return hashlib.sha256((mesh.model_dump_json() + hardware_sha256(mesh_chip(mesh))).encode()).hexdigest()


def mesh_op_key(mesh: MeshSpec, op: SweepOp) -> str:
    """A mesh record's skip key: as a chip's (``task.op_key``), with the mesh's hash and the precision preset
    the layer is planned at (a store swept at another preset plans its layers again)."""
    return f"{mesh_sha256(mesh)}|{package_version('loom-explorer')}|{op.key}|{op.label}|{LAYER_PRECISION}"


def ttnn_split_pins(mesh: MeshSpec, graph: OpGraph, views: tuple[MeshView, ...], prefill: bool) -> tuple[str, ...]:
    """ttnn's hand-written split of a decoder layer on ``mesh`` as pins (module docstring); MeshError when
    none is written for it."""
    if mesh.name == "t3000":
        return ttnn_layer_pins(graph, views, prefill)
    if mesh.name == "galaxy":
        return galaxy_layer_pins(graph, views, prefill)
    raise MeshError(f"no hand-written ttnn split of a Llama layer is written for mesh {mesh.name} (t3000, galaxy)")


@dataclass(frozen=True, slots=True)
class OpShare:
    """One op's share of a planned layer (module docstring)."""

    split: str
    chip_dims: tuple[tuple[str, int], ...]
    cycles: int
    bound_cycles: int | None
    collectives: tuple[str, ...]


def _collective_text(tensor: str, src: str, dst: str, c: object) -> str:
    from loom_explorer.mesh.transitions import Collective

    assert isinstance(c, Collective)
    return (
        f"{tensor} {src} -> {dst}: {c.kind.value} on {c.axis}, {c.slice_bytes:,} B per device, "
        f"num_links={c.links}, {c.topology.value}: {c.latency_cycles:,} cycles"
    )


def op_shares(planner: Planner, solution: JointSolution) -> dict[str, OpShare]:
    """Every work op's share of ``solution`` (module docstring); MeshError when they do not add up to it."""
    graph = planner.graph
    chosen = dict(solution.splits)
    charged = dict(solution.split_cycles)
    work = {op.name for op in graph.work_ops}
    extra: dict[str, int] = {name: 0 for name in work}
    texts: dict[str, list[str]] = {name: [] for name in work}
    for name in work:
        s = chosen[name]
        own = split_gathers(graph.op(name), planner.tables.view(s.view), s.roles, s.output)
        if own:
            whats = ", ".join(f"{g.what} on {g.axis.name}" for g in own)
            texts[name].append(f"its own all-gathers ({whats}): {s.fixed_cycles:,} cycles")
        if s.fused_axis is not None:
            texts[name].append(f"its input all-gathered inside the matmul (fused): {charged[name]:,} cycles in all")
    for e in solution.edges:
        readers = [r for r in e.consumers if r in work]
        owner = readers[0] if readers else e.tensor
        if owner not in work:
            raise MeshError(f"the collectives of tensor {e.tensor} have no op to be charged to")
        extra[owner] += e.cost.latency_cycles
        texts[owner] += [_collective_text(e.tensor, e.src.label, e.dst.label, c) for c in e.cost.collectives]
    shares = {}
    for name in work:
        s = chosen[name]
        assert s.problem is not None  # a work op's split has a per-chip problem
        shares[name] = OpShare(
            s.name,
            s.problem.shape,
            charged[name] + extra[name],
            planner.bounds.get(s.problem),
            tuple(texts[name]),
        )
    total = sum(x.cycles for x in shares.values())
    if total != solution.latency_cycles:
        raise MeshError(
            f"the ops' shares add up to {total:,} cycles, the layer's latency is {solution.latency_cycles:,}"
        )
    return shares


def _choice(chip: HardwareSpec, share: OpShare) -> SweepChoice:
    ns = chip.cycles_to_us(share.cycles) * 1e3
    util = (share.bound_cycles or 0) / share.cycles if share.cycles else 0.0
    return SweepChoice(share.split, share.chip_dims, share.cycles, ns, util, share.collectives)


def _note(share: OpShare) -> str:
    return "; ".join((f"split {share.split}", *share.collectives))


def _base(mesh: MeshSpec | None, mesh_name: str, op: SweepOp, seconds: float) -> SweepRecord:
    key = mesh_op_key(mesh, op) if mesh is not None else f"{mesh_name}|{op.key}|{op.label}"
    place = RecordPlace(key, mesh.name if mesh is not None else mesh_name, mesh_sha256(mesh) if mesh else "")
    return replace(sweep_record(op, place, "failed", "", seconds), precision=LAYER_PRECISION)


def failed_layer(mesh_name: str, layer: MeshLayer, error: str, seconds: float = 0.0) -> list[SweepRecord]:
    """A ``failed`` record per op of ``layer`` on ``mesh_name`` carrying ``error``."""
    try:
        mesh: MeshSpec | None = load_mesh(mesh_name)
    except Exception:  # the mesh itself is what failed
        mesh = None
    return [replace(_base(mesh, mesh_name, op, seconds), error=error) for op in layer_ops(layer)]


def solve_mesh_layer(mesh_name: str, layer: MeshLayer, settings: SweepSettings | None = None) -> list[SweepRecord]:
    """Plan ``layer`` on ``mesh_name``, ours and ttnn's (module docstring); never raises."""
    settings = settings or SweepSettings()

    start = time.perf_counter()
    try:
        mesh = load_mesh(mesh_name)
        graph, prefill = layer_graph(layer)
        planner = Planner(mesh, graph, use_memory=settings.use_memory, time_limit_seconds=settings.time_limit_seconds)
        ours = planner.plan()
        if not isinstance(ours.result, JointSolution):
            return failed_layer(mesh_name, layer, f"no split: {ours.result.message}", time.perf_counter() - start)
        mine = op_shares(planner, ours.result)
        theirs: dict[str, OpShare] = {}
        why = ""
        try:
            plan = planner.plan(ttnn_split_pins(mesh, graph, planner.views, prefill))
            if isinstance(plan.result, JointSolution):
                theirs = op_shares(planner, plan.result)
            else:
                why = f"ttnn's split cannot be costed: {plan.result.message}"
        except MeshError as exc:
            why = str(exc)
        seconds = time.perf_counter() - start
        chip = planner.chip
        out = []
        for op in layer_ops(layer):
            name = op.label.split(": ", 1)[1]
            share = mine[name]
            ttnn = theirs.get(name)
            out.append(
                replace(
                    _base(mesh, mesh_name, op, seconds),
                    status="ok",
                    best=_choice(chip, share),
                    ideal_ns=chip.cycles_to_us(share.bound_cycles) * 1e3 if share.bound_cycles else None,
                    ttnn_default_ns=chip.cycles_to_us(ttnn.cycles) * 1e3 if ttnn else None,
                    ttnn_default_note=_note(ttnn) if ttnn else why,
                )
            )
        return out
    except Exception as exc:  # recorded, the sweep goes on
        detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return failed_layer(mesh_name, layer, detail, time.perf_counter() - start)
