"""The sequence split of causal attention (ttnn's ring-distributed SDPA): where it exists, its states and
per-chip problem, the planner pricing and choosing it, ttnn's Galaxy prefill split pinning it, its export."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from loom_explorer.hardware.mesh_load import load_mesh, mesh_chip
from loom_explorer.mesh.graph import attention_graph, decoder_layer_graph
from loom_explorer.mesh.joint import JointSolution
from loom_explorer.mesh.onchip import solve_chip
from loom_explorer.mesh.plan import MeshPlan, Planner
from loom_explorer.mesh.splits import Split, op_splits, seq_gathers, seq_keys, seq_legal, split_gathers
from loom_explorer.mesh.states import AxisState, mesh_views
from loom_explorer.mesh.transitions import AxisConfig
from loom_explorer.mesh.ttnn_galaxy_split import galaxy_layer_pins
from loom_explorer.model.collective import FabricTopology
from loom_explorer.sweep.ops import DECODE_KV, MODELS, Transformer
from loom_explorer.targets.ttnn.mesh_calls import mesh_program, ring_dim
from loom_explorer.targets.ttnn.mesh_script import mesh_source

R, Sc = AxisState.replicated, AxisState.cols


TINY = Transformer(hidden=512, ffn=1024, heads=8, kv_heads=2, head_dim=64, vocab=1000, layers=1)  # an attention block


def _attention_splits(hw: str, rows: int, prefill: bool = True) -> dict[str, Split]:
    mesh = load_mesh(hw)
    op = attention_graph(TINY, rows, prefill, 256).op("attention")
    return {s.name: s for v in mesh_views(mesh) for s in op_splits(op, v, mesh, mesh_chip(mesh))}


def test_the_seq_split_exists_only_where_ttnn_runs_it() -> None:
    names = set(_attention_splits("t3000", 512))
    assert {"seq@ring", "seq@rows", "seq@columns", "heads@rows,seq@columns"} <= names
    assert "seq@rows,seq@columns" not in names  # one sequence axis
    # 256 tokens: 8 tiles; 2 x 8 chips need 16 whole-tile chunks, 2 x 4 need 8
    short = set(_attention_splits("t3000", 256))
    assert "seq@ring" not in short and "seq@columns" in short
    assert not [n for n in _attention_splits("t3000", 32, prefill=False) if "seq" in n]  # decode: users, no causal
    op = attention_graph(TINY, 768, True, 256).op("attention")
    assert seq_legal(op, 2) and seq_legal(op, 4)  # 24 tiles: 4 and 8 whole-tile chunks
    assert not seq_legal(op, 3) and not seq_legal(op, 8)  # an odd ring; 16 chunks of 24 tiles


def test_its_states_and_per_chip_problem() -> None:
    splits = _attention_splits("t3000", 2048)
    ring = splits["seq@ring"]
    assert ring.inputs[0].axes == (R,) and ring.output.axes == (R,)  # the order restored: gathered back
    both = splits["heads@rows,seq@columns"]
    assert both.inputs[0].axes == (Sc, R) and both.output.axes == (Sc, R)
    assert both.problem is not None and both.problem.options == frozenset()  # priced non-causal
    assert dict(both.problem.shape) == {"B": 1, "H": 4, "Hkv": 1, "Sq": 512, "Skv": 1056, "D": 64}
    # chip i's query tile rows r of chunks i and 7 - i need r + 1 key tiles: 2c_t (p c_t + 1/2) in all, c_t = 8
    assert seq_keys(2048, 4) == 1056 and seq_keys(2048, 8) == 1056 and seq_keys(8192, 4) == 4128
    q_tiles, k_tiles, whole = 512 // 32, 1056 // 32, 64 * 65 // 2  # the whole causal problem's score tiles
    assert q_tiles * k_tiles == whole // 4 + 8  # 1/p of the causal score tiles and c_t more


def test_the_order_is_restored_by_two_chunk_gathers_in_the_splits_cost() -> None:
    mesh = load_mesh("t3000")
    chip = mesh_chip(mesh)
    op = attention_graph(TINY, 2048, True, 256).op("attention")
    view = next(v for v in mesh_views(mesh) if v.name == "mesh")
    both = {s.name: s for s in op_splits(op, view, mesh, chip)}["heads@rows,seq@columns"]
    gathers = seq_gathers(op, view, both.roles, both.output)
    # each chip's two chunks of 2048 / 8 rows, 4 of the 8 heads' 64 columns (the rows' heads split), bf16
    assert [(g.axis.name, g.slice_bytes, g.what) for g in gathers] == [
        ("columns", 256 * 256 * 2, "chunks i"),
        ("columns", 256 * 256 * 2, "chunks 7-i"),
    ]
    assert all(g.config == AxisConfig(2, FabricTopology.linear) for g in gathers)  # every link; the line
    assert both.fixed_cycles == sum(g.cycles(mesh, chip) for g in gathers) > 0
    assert split_gathers(op, view, both.roles, both.output) == gathers
    plain = {s.name: s for s in op_splits(op, view, mesh, chip)}["heads@rows"]
    assert plain.fixed_cycles == 0 and not seq_gathers(op, view, plain.roles, plain.output)


@pytest.fixture(scope="module")
def tiny_plan(tmp_path_factory: pytest.TempPathFactory) -> tuple[Planner, MeshPlan, Path]:
    store = tmp_path_factory.mktemp("seq_split") / "s.sqlite"
    planner = Planner(load_mesh("t3000"), attention_graph(TINY, 1024, True, 256), store=store)
    return planner, planner.plan(["attention.split=seq@ring"]), store


@pytest.mark.slow
def test_the_planner_prices_and_chooses_the_seq_split(tiny_plan: tuple[Planner, MeshPlan, Path]) -> None:
    planner, pinned, store = tiny_plan
    assert isinstance(pinned.result, JointSolution)
    split = dict(pinned.result.splits)["attention"]
    assert split.name == "seq@ring" and split.problem is not None
    solved = solve_chip(planner.chip, split.problem, store, True, 30.0)
    assert solved.latency_cycles is not None and split.fixed_cycles > 0  # the chunk gathers
    assert dict(pinned.result.split_cycles)["attention"] == solved.latency_cycles + split.fixed_cycles
    best = planner.plan()
    assert isinstance(best.result, JointSolution)
    assert best.result.latency_cycles <= pinned.result.latency_cycles
    # at 1k tokens a quarter of the causal work beats heads alone, its chunk gathers included (at 512 it does not)
    assert dict(best.result.splits)["attention"].name == "heads@rows,seq@columns"


def test_ttnns_galaxy_prefill_pins_the_ring_above_1k_tokens() -> None:
    mesh = load_mesh("galaxy")
    for rows, attention in ((2048, "heads@rows,seq@columns"), (1024, "heads@rows")):
        planner = Planner(mesh, decoder_layer_graph(MODELS["llama-3-70b"], rows, True, DECODE_KV))
        pins = planner.pins(galaxy_layer_pins(planner.graph, planner.views, True))
        splits = {p.target: p.value for p in pins if p.field == "split"}
        links = {p.target: p.value for p in pins if p.field == "num_links"}
        assert splits["attention"] == attention and links["attention"] == "3"
        view = next(v for v in planner.views if v.name == "mesh")
        ring = {s.name: s for s in planner.tables.splits["attention"]}["heads@rows,seq@columns"]
        gathers = seq_gathers(planner.graph.op("attention"), view, ring.roles, ring.output)
        # its order-restoring gathers are llama_ccl's ring_all_gather: 4 links, a ring on the Galaxy's columns
        assert [g.config for g in gathers] == [AxisConfig(4, FabricTopology.ring)] * 2


@pytest.mark.slow
def test_the_export_calls_ring_distributed_sdpa_and_restores_the_order(
    tiny_plan: tuple[Planner, MeshPlan, Path],
) -> None:
    planner, plan, store = tiny_plan
    program = mesh_program(plan, planner.mesh, planner.chip, planner.graph, store=store)
    (op,) = [o for o in program.ops if o.op == "attention"]
    assert op.seq is not None and (op.seq.ring_size, op.seq.cluster_axis, op.seq.chunk_rows) == (8, 1, 64)
    source = mesh_source(program)
    run = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "run")
    calls = [ast.unparse(n) for n in ast.walk(run) if isinstance(n, ast.Call)]
    ring = [c for c in calls if "ring_distributed_scaled_dot_product_attention" in c]
    assert len(ring) == 1 and ", 8, program_config=" in ring[0]
    gathers = [c for c in calls if c.startswith("ttnn.all_gather(first") or c.startswith("ttnn.all_gather(second")]
    # the split's own gathers as priced (splits.seq_gathers: the ring's one link, a ring), then a concat: replicated
    assert len(gathers) == 2 and all("cluster_axis=1, num_links=1, topology=ttnn.Topology.Ring" in c for c in gathers)
    assert not any(c.startswith("ttnn.mesh_partition(o") for c in calls)
    assert ring_dim((2, 4), 4) == 1 and ring_dim((2, 4), 2) == 0 and ring_dim((4, 4), 4) == 0
    assert ring_dim((2, 4), 8) is None


@pytest.mark.parametrize("hw", ["t3000", "galaxy"])
def test_a_layers_seq_splits_keep_whole_tiles(hw: str) -> None:
    mesh = load_mesh(hw)
    op = decoder_layer_graph(MODELS["llama-3-70b"], 2048, True, DECODE_KV).op("attention")
    for view in mesh_views(mesh):
        for s in op_splits(op, view, mesh, mesh_chip(mesh)):
            if "seq" in s.roles and s.problem is not None:
                dims = dict(s.problem.shape)
                assert dims["Sq"] % 32 == 0 and dims["Skv"] == 1056 and "causal" not in s.problem.options
