"""The mesh layer: states and transitions (hand-computed collectives), splits, the joint model proven with
real CP-SAT and real per-chip solves, pins and their errors, infeasible pins explained, ttnn's split."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_explorer.hardware.mesh_load import load_mesh, mesh_chip
from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.mesh.graph import decoder_layer_graph, matmul_graph
from loom_explorer.mesh.joint import JointConflict, JointSolution
from loom_explorer.mesh.plan import Planner
from loom_explorer.mesh.splits import fused_gather
from loom_explorer.mesh.states import AxisState, MeshError, TensorState, mesh_views
from loom_explorer.mesh.transitions import TensorSize, collective_configs, collective_cycles, transition_cost
from loom_explorer.mesh.ttnn_split import ttnn_layer_pins
from loom_explorer.model.collective import CollectiveKind, CollectiveOp, FabricTopology, collective_model
from loom_explorer.sweep.ops import DECODE_KV, MODELS


def _line_mesh(tmp_path: Path, chips: int, wraps: bool) -> MeshSpec:
    eth = load_mesh("t3000").ethernet.model_dump()
    lines = [
        "schema_version: 1",
        f"name: line{chips}",
        "description: test mesh",
        "chip: wormhole_n300",
        "rows: {chips: 1, links: 0, wraps: false}",
        f"columns: {{chips: {chips}, links: 2, wraps: {'true' if wraps else 'false'}}}",
        "ethernet:",
        *(f"  {k}: {v}" for k, v in eth.items()),
    ]
    path = tmp_path / f"line{chips}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return load_mesh(path)


def _state(view: str, *axes: AxisState) -> TensorState:
    return TensorState(view, axes)


def test_transition_table_on_a_ring_of_eight(tmp_path: Path) -> None:
    mesh = _line_mesh(tmp_path, 8, wraps=True)
    chip = mesh_chip(mesh)
    (view,) = mesh_views(mesh)
    assert view.name == "columns" and view.chips == 8
    configs = collective_configs(view)  # links 1..2 x linear/ring
    assert {(c.axes[0].links, c.axes[0].topology) for c in configs} == {
        (links, topo) for links in (1, 2) for topo in FabricTopology
    }
    size = TensorSize(64, 1024)  # bf16: a chip's column slice is 64 x 128 x 2 = 16,384 B
    R, Sc, Sr, P = AxisState.replicated, AxisState.cols, AxisState.rows, AxisState.partial
    model = collective_model()
    by = {(c.axes[0].links, c.axes[0].topology): c for c in configs}
    ring2 = by[(2, FabricTopology.ring)]
    gather = transition_cost(mesh, chip, view, size, _state("columns", Sc), _state("columns", R), ring2)
    assert gather is not None and [c.kind for c in gather.collectives] == [CollectiveKind.all_gather]
    hand = CollectiveOp(CollectiveKind.all_gather, 8, FabricTopology.ring, 2, 16_384, 2048)
    assert gather.latency_cycles == model.latency(hand, mesh, chip).total_cycles
    # partial sums: the whole 64 x 1024 tensor on every chip; a reduce-scatter's share is an eighth of it
    rs = transition_cost(mesh, chip, view, size, _state("columns", P), _state("columns", Sc), ring2)
    assert rs is not None and rs.collectives[0].kind is CollectiveKind.reduce_scatter
    assert rs.collectives[0].slice_bytes == 64 * 1024 * 2 // 8
    ar = transition_cost(mesh, chip, view, size, _state("columns", P), _state("columns", R), ring2)
    assert ar is not None and ar.collectives[0].kind is CollectiveKind.all_reduce
    assert transition_cost(mesh, chip, view, size, _state("columns", R), _state("columns", Sc), ring2) == (
        type(gather)(0, ())
    )  # replicated -> sharded: each chip keeps its slice
    assert transition_cost(mesh, chip, view, size, _state("columns", R), _state("columns", P), ring2) is None
    swap = transition_cost(mesh, chip, view, size, _state("columns", Sr), _state("columns", Sc), ring2)
    assert swap is not None and [c.kind for c in swap.collectives] == [CollectiveKind.all_gather]
    # a ring beats a line, two links beat one
    line1 = transition_cost(
        mesh, chip, view, size, _state("columns", Sc), _state("columns", R), by[(1, FabricTopology.linear)]
    )
    assert line1 is not None and gather.latency_cycles < line1.latency_cycles


def test_transition_table_on_a_pair(tmp_path: Path) -> None:
    mesh = _line_mesh(tmp_path, 2, wraps=False)
    chip = mesh_chip(mesh)
    (view,) = mesh_views(mesh)
    configs = collective_configs(view)
    assert {c.axes[0].topology for c in configs} == {FabricTopology.linear}  # two chips: no ring
    size = TensorSize(32, 64)
    one = next(c for c in configs if c.axes[0].links == 1)
    cost = transition_cost(
        mesh, chip, view, size, _state("columns", AxisState.partial), _state("columns", AxisState.replicated), one
    )
    assert cost is not None
    # a 32 x 64 tensor's half is one tile (2,048 B): the all-reduce's slice is that tile
    hand = CollectiveOp(CollectiveKind.all_reduce, 2, FabricTopology.linear, 1, 2048, 2048)
    assert cost.latency_cycles == collective_model().latency(hand, mesh, chip).total_cycles


def test_a_wide_short_matmul_splits_its_columns(tmp_path: Path) -> None:
    mesh = _line_mesh(tmp_path, 2, wraps=False)
    planner = Planner(mesh, matmul_graph(32, 4096, 16384), store=tmp_path / "store.sqlite")
    best = planner.plan()
    assert isinstance(best.result, JointSolution)
    chosen = dict(best.result.splits)["matmul"]
    assert chosen.roles == ("N",)  # column parallel (gathered after, or fused)
    for other in ("K@columns", "M@columns", "rep@columns"):
        pinned = planner.plan([f"matmul.split={other}"])
        assert isinstance(pinned.result, JointSolution)
        assert pinned.result.latency_cycles > best.result.latency_cycles
    assert {s.status for s in best.splits} <= {"solved", "pruned"}
    again = Planner(mesh, matmul_graph(32, 4096, 16384), store=tmp_path / "store.sqlite").plan()
    assert isinstance(again.result, JointSolution) and again.result.latency_cycles == best.result.latency_cycles
    assert again.problems_from_store == again.problems_solved  # the second run solves nothing


@pytest.mark.parametrize(
    ("pin", "words"),
    [
        ("w9.split=N", "is not an op or tensor"),
        ("matmul.split=Q", "no split 'Q'"),
        ("matmul.num_links=0", "num_links must be a whole number 1..2"),
        ("matmul.topology=torus", "topology must be one of"),
        ("matmul.colour=red", "expected OP.split"),
        ("view=cube", "no view 'cube'"),
        ("matmul.split", "expected NAME=VALUE"),
    ],
)
def test_pin_errors_name_the_pin(pin: str, words: str) -> None:
    planner = Planner(load_mesh("t3000"), matmul_graph(32, 256, 1024))
    with pytest.raises(MeshError, match=words) as info:
        planner.pins([pin])
    assert repr(pin) in str(info.value)


def test_the_fused_gather_matmul_is_a_split_of_one_axis_views_only() -> None:
    """ttnn's all_gather_matmul_async takes no cluster_axis: on the 2 x 4 view a gather before the N split is
    a transition, not a fused split; on the ring of 8 the fused split exists, its gather priced by the model."""
    planner = Planner(load_mesh("t3000"), matmul_graph(32, 256, 1024))
    fused = [s for s in planner.tables.splits["matmul"] if s.fused_axis is not None]
    assert {s.view for s in fused} == {"ring"} and [s.name for s in fused] == ["agN@ring"]
    assert any(s.roles == ("N", "-") or s.roles == ("-", "N") for s in planner.tables.splits["matmul"])
    ring = planner.tables.view("ring")
    cfg = planner.tables.configs["ring"][0].axes[0]
    gather = fused_gather(planner.mesh, planner.chip, planner.graph, fused[0], ring, cfg)
    alone = collective_cycles(planner.mesh, planner.chip, CollectiveKind.all_gather, 8, cfg, 32 * 256 // 8 * 2, 2048)
    assert gather.latency_cycles == alone and gather.split_cycles(8_000) == max(8_000, alone + 1_000)


def test_a_joint_model_out_of_time_is_an_error_naming_the_time_limit() -> None:
    planner = Planner(load_mesh("t3000"), decoder_layer_graph(MODELS["llama-3-70b"], 32, False, DECODE_KV))
    planner.time_limit_seconds = 1e-6
    planner.use_memory = False
    with pytest.raises(MeshError, match=r"joint model of view mesh .*\(--time-limit\)"):
        planner.plan()


def test_a_bare_role_names_the_ring_split() -> None:
    planner = Planner(load_mesh("t3000"), matmul_graph(32, 256, 1024))
    assert planner.pins(["matmul.split=N"])[0].value == "N@ring"


def test_infeasible_pins_are_explained() -> None:
    planner = Planner(load_mesh("t3000"), matmul_graph(32, 256, 1024))
    plan = planner.plan(["view=mesh", "matmul.split=N@ring", "matmul.num_links=1"])
    assert isinstance(plan.result, JointConflict)
    assert set(plan.result.pins) == {"view=mesh", "matmul.split=N@ring"}  # the links pin is not needed
    assert "runs on view ring" in plan.result.message
    # num_links pins every axis of the view: the ring's hops and the 2 x 4 view's rows have one link each
    links = planner.plan(["matmul.split=N@ring", "x.num_links=2"])
    assert isinstance(links.result, JointConflict) and links.result.pins == ("x.num_links=2",)
    assert links.result.message.startswith("pin x.num_links=2 cannot hold") and "view ring: 1" in links.result.message


def test_ttnn_split_pins_are_valid_splits() -> None:
    mesh = load_mesh("t3000")
    for prefill, rows in ((True, 2048), (False, 32)):
        planner = Planner(mesh, decoder_layer_graph(MODELS["llama-3-70b"], rows, prefill, DECODE_KV))
        pins = planner.pins(ttnn_layer_pins(planner.graph, planner.views, prefill))
        assert {p.target for p in pins if p.field == "split"} == {o.name for o in planner.graph.ops} - {"out"}


@pytest.mark.slow
def test_ttnn_split_is_costed_and_no_faster_than_the_best(tmp_path: Path) -> None:
    mesh = load_mesh("t3000")
    planner = Planner(mesh, decoder_layer_graph(MODELS["llama-3-70b"], 32, False, DECODE_KV), tmp_path / "s.sqlite")
    ttnn = planner.plan(ttnn_layer_pins(planner.graph, planner.views, False))
    assert isinstance(ttnn.result, JointSolution)
    kinds = [c.kind for e in ttnn.result.edges for c in e.cost.collectives]
    assert CollectiveKind.reduce_scatter in kinds and CollectiveKind.all_gather in kinds  # w2's, the norms'
    best = planner.plan()
    assert isinstance(best.result, JointSolution)
    assert best.result.latency_cycles <= ttnn.result.latency_cycles


def test_the_command_line_prints_json_and_exits_3_on_a_conflict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from loom_explorer.cli.entry import main

    base = ["mesh", "solve", "--hw", "t3000", "--op", "matmul", "--shape", "M=32,K=256,N=1024"]
    store = ["--store", str(tmp_path / "s.sqlite")]
    assert main([*base, *store, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ours"]["result"]["latency_cycles"] > 0 and out["ttnn"] is None
    assert main([*base, *store, "--pin", "view=mesh", "--pin", "matmul.split=N"]) == 3
    assert "cannot hold together" in capsys.readouterr().out
