"""``mesh solve``: the fastest split of an op, a block or a decoder layer over the chips of a mesh, proven
(``loom_explorer/mesh``), with ttnn's hand-written split costed beside it for a decoder layer. ``mesh export``:
the proven split as a ttnn script and the plan's JSON, in a new folder (``targets/ttnn/mesh_script.py``)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal

from loom_explorer.cli.common import Command, InputError, add_command, add_memory_args, seconds, whole
from loom_explorer.errors import EXIT_NO_SCHEDULE, EXIT_OK

if TYPE_CHECKING:
    from loom_explorer.hardware.mesh_schema import MeshSpec
    from loom_explorer.mesh.graph import OpGraph

Graph = Literal["layer", "mlp", "attention", "matmul"]


@dataclass(frozen=True, slots=True)
class MeshRequest:
    action: Literal["solve", "export"]
    hw: str
    graph: Graph
    model: str
    phase: str
    shape: str | None
    pins: tuple[str, ...]
    json: bool
    store: str | None
    no_cache: bool
    time_limit_seconds: float
    output: str | None = None
    force: bool = False
    precision: str = "performance"
    layers: int | None = None  # None: the model's


def parse_mesh(args: argparse.Namespace) -> MeshRequest:
    graph: Graph = "matmul" if args.op == "matmul" else args.graph
    if args.op is not None and args.op != "matmul":
        raise InputError(f"--op {args.op}: only matmul is a single op graph (or use --graph)")
    if graph == "matmul" and not args.shape:
        raise InputError("--op matmul needs --shape M=...,K=...,N=...")
    if args.action == "export" and not args.output:
        raise InputError("mesh export needs -o DIR (a new folder for the script and the plan's JSON)")
    return MeshRequest(
        args.action, args.hw, graph, args.model, args.phase, args.shape, tuple(args.pin), args.json, args.store,
        args.no_cache, args.time_limit, args.output, args.force, args.precision, args.layers,
    )  # fmt: skip


def _graph(req: MeshRequest) -> tuple[OpGraph, bool]:
    from loom_explorer.mesh.graph import matmul_graph, model_graph
    from loom_explorer.mesh.precision import precision
    from loom_explorer.problem import parse_shape
    from loom_explorer.program import load_program
    from loom_explorer.sweep.ops import DECODE_KV, MODELS, PHASES

    if req.graph == "matmul":
        assert req.shape is not None
        dims = dict(parse_shape(req.shape, load_program("gemm")))
        return matmul_graph(dims["M"], dims["K"], dims["N"]), False
    model = MODELS.get(req.model.lower())
    if model is None:
        raise InputError(f"--model {req.model}: known models are {', '.join(MODELS)}")
    phases = {name: (rows, prefill) for name, rows, prefill in PHASES}
    if req.phase not in phases:
        raise InputError(f"--phase {req.phase!r}: phases are {', '.join(repr(p) for p in phases)}")
    rows, prefill = phases[req.phase]
    layers = model.layers if req.layers is None else req.layers
    return model_graph(req.graph, model, rows, prefill, DECODE_KV, precision(req.precision), layers), prefill


def run_mesh(req: MeshRequest) -> int:
    from loom_explorer.hardware.mesh_load import load_mesh
    from loom_explorer.mesh.joint import JointSolution
    from loom_explorer.mesh.plan import MeshPlan, Planner
    from loom_explorer.mesh.ttnn_split import ttnn_layer_pins

    mesh = load_mesh(req.hw)
    graph, prefill = _graph(req)
    if req.action == "export":
        return _export(req, mesh, graph)
    planner = Planner(mesh, graph, req.store, not req.no_cache, req.time_limit_seconds)
    ours = planner.plan(req.pins)
    ttnn: MeshPlan | None = None
    ttnn_note = ""
    if req.graph == "layer":
        try:
            ttnn = planner.plan(ttnn_layer_pins(planner.graph, planner.views, prefill))
        except ValueError as exc:
            ttnn_note = str(exc)
    if req.json:
        out = {"ours": asdict(ours), "ttnn": asdict(ttnn) if ttnn else None, "ttnn_note": ttnn_note}
        print(json.dumps(out, default=_plain))
    else:
        _print(ours, ttnn, ttnn_note, planner.chip.clock_ghz, planner.tables.capacity_bytes)
    return EXIT_OK if isinstance(ours.result, JointSolution) else EXIT_NO_SCHEDULE


def _plain(value: object) -> object:
    """JSON for what ``json`` does not write itself: a set (a per-chip problem's options) as a sorted list."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


PLAN_SCRIPT = "plan_ttnn.py"
PLAN_JSON = "plan.json"


def _export(req: MeshRequest, mesh: MeshSpec, graph: OpGraph) -> int:
    """The proven plan as ``DIR/plan_ttnn.py`` and ``DIR/plan.json``, written whole or not at all."""
    import sys

    from loom_explorer.export.files import check_folder_target, write_new_folder
    from loom_explorer.mesh.joint import JointSolution
    from loom_explorer.mesh.plan import Planner
    from loom_explorer.targets.ttnn.mesh_calls import mesh_program
    from loom_explorer.targets.ttnn.mesh_script import mesh_source, plan_document

    assert req.output is not None
    check_folder_target(req.output, req.force)  # an unwritable -o fails before the solve
    planner = Planner(mesh, graph, req.store, not req.no_cache, req.time_limit_seconds)
    plan = planner.plan(req.pins)
    if not isinstance(plan.result, JointSolution):
        print(f"loom-explorer: no split to export: {plan.result.message}", file=sys.stderr)
        return EXIT_NO_SCHEDULE
    program = mesh_program(plan, mesh, planner.chip, graph, req.store, not req.no_cache, req.time_limit_seconds)
    files = {PLAN_SCRIPT: mesh_source(program), PLAN_JSON: plan_document(program)}
    write_new_folder(req.output, files, force=req.force)
    print(
        f"loom-explorer: wrote {req.output}/{PLAN_SCRIPT} and {PLAN_JSON}: {graph.name} on {mesh.name}, view "
        f"{program.view} (MeshShape{program.mesh_shape}), predicted {program.latency_us:,.1f} us per device",
        file=sys.stderr,
    )
    return EXIT_OK


def _us(cycles: int, ghz: float) -> str:
    return f"{cycles / ghz / 1000:,.1f} us"


def _print(ours: object, ttnn: object, note: str, ghz: float, capacity_bytes: int) -> None:
    from loom_explorer.mesh.joint import JointSolution
    from loom_explorer.mesh.plan import MeshPlan

    assert isinstance(ours, MeshPlan)
    held = f"{ours.layers} layers'" if ours.layers > 1 else "one layer's"
    print(
        f"{ours.graph} on {ours.mesh}, {ours.precision} precision, {held} weights per chip: every split of every op "
        "(on-chip cycles: proven optimum, or >= bound)"
    )
    print(f"  {'op':<14} {'split':<22} {'status':<10} {'on-chip':>12}  per-chip problem")
    for s in ours.splits:
        cyc = "-" if s.onchip_cycles is None else ("" if s.status == "solved" else ">=") + f"{s.onchip_cycles:,}"
        extra = f" (+{s.fixed_cycles:,} own collectives)" if s.fixed_cycles else ""
        print(f"  {s.op:<14} {s.split:<22} {s.status:<10} {cyc:>12}  {s.problem}{extra}")
    print(
        f"per-chip problems: {ours.problems_solved} solved ({ours.problems_from_store} from the store), "
        f"{ours.problems_pruned} pruned by their bound; {ours.rounds} joint solves; {ours.seconds:.2f} s "
        f"({ours.solve_seconds:.2f} s in per-chip solves)"
    )
    for title, plan in (("best (proven)", ours), ("ttnn's split (tt_transformers, T3000)", ttnn)):
        if plan is None:
            if note:
                print(f"{title}: not costed: {note}")
            continue
        assert isinstance(plan, MeshPlan)
        r = plan.result
        if not isinstance(r, JointSolution):
            print(f"{title}: no split: {r.message}")
            continue
        print(
            f"{title}: {r.latency_cycles:,} cycles = {_us(r.latency_cycles, ghz)} per device, view {r.view}; "
            f"DRAM per chip {r.dram_bytes / 1e9:.2f} GB of {capacity_bytes / 1e9:.2f}"
        )
        cycles = dict(r.split_cycles)
        for op, chosen in r.splits:
            if chosen.problem is not None:
                reads = ", ".join(i.label for i in chosen.inputs)
                print(f"  {op:<14} {chosen.name:<22} {cycles[op]:>12,}  reads {reads}")
        for e in r.edges:
            for c in e.cost.collectives:
                print(
                    f"  {e.tensor} -> {','.join(e.consumers)}: {c.kind.value} on {c.axis}, {c.slice_bytes:,} B per "
                    f"device, num_links={c.links}, {c.topology.value}: {c.latency_cycles:,} cycles"
                )


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "mesh", Command(parse_mesh, run_mesh))
    p.add_argument(
        "action",
        choices=["solve", "export"],
        help="solve: the proven fastest split; export: it as a ttnn script and the plan's JSON (-o DIR)",
    )
    p.add_argument("--hw", required=True, help="a mesh: shipped name (t3000) or a YAML path")
    p.add_argument("--graph", choices=["layer", "mlp", "attention"], default="layer", help="default: layer")
    p.add_argument("--op", default=None, help="a single op instead of a graph: matmul (with --shape)")
    p.add_argument("--shape", default=None, help="the matmul's M=...,K=...,N=...")
    p.add_argument("--model", default="llama-3-70b", help="llama-3-8b or llama-3-70b (default)")
    p.add_argument("--phase", default="prefill 2k", help="'prefill 2k', 'prefill 8k', 'decode b1', 'decode b32'")
    p.add_argument(
        "--precision",
        choices=["performance", "bf16"],
        default="performance",
        help="weight/cache formats and fidelities: tt-transformers' performance mode (bfp4 w1/w3 at LoFi, bfp8 "
        "other weights and the KV cache; the default) or bf16 throughout",
    )
    p.add_argument(
        "--layers",
        type=whole(1, 1000),
        default=None,
        help="layers whose weights every chip holds (default: the model's, 32 or 80; 1 for one layer alone)",
    )
    p.add_argument(
        "--pin", action="append", default=[], help="OP.split=NAME, TENSOR.num_links=L, TENSOR.topology=T, view=V"
    )
    p.add_argument("--json", action="store_true")
    p.add_argument("--time-limit", type=seconds, default=30.0, help="seconds per solve (default 30)")
    p.add_argument("-o", "--output", default=None, metavar="DIR", help="export: a new folder (never half-written)")
    p.add_argument("--force", action="store_true", help="export: replace DIR if it exists")
    add_memory_args(p)
