"""What the explorer's mesh section shows (``ui/mesh_scene.py``, ``ui/mesh_links.py``, ``ui/mesh_request.py``):
the lanes and chips of a solved plan, the ops table and its totals, the plan's collectives, and the query's
names-only rule."""

from __future__ import annotations

from math import ceil
from pathlib import Path

import pytest

from loom_explorer.mesh.joint import JointSolution
from loom_explorer.mesh.plan import Planner
from loom_explorer.mesh.ttnn_split import ttnn_layer_pins
from loom_explorer.ui.app import mesh_query
from loom_explorer.ui.catalog import InputError
from loom_explorer.ui.mesh_links import link_loads, plan_collectives
from loom_explorer.ui.mesh_request import MeshChoice, build, checked
from loom_explorer.ui.mesh_scene import IDLE_COLOUR, MAX_WIDTH, TOTAL, mesh_scene, op_costs, ops_frame


def _planner(tmp_path: Path, choice: MeshChoice) -> tuple[Planner, bool]:
    mesh, graph, prefill = build(choice)
    return Planner(mesh, graph, tmp_path / "results.sqlite", use_memory=False), prefill


def test_a_ring_gather_is_drawn_on_the_perimeter_and_tabled(tmp_path: Path) -> None:
    planner, _ = _planner(tmp_path, MeshChoice(shape="M=32,K=256,N=256"))
    plan = planner.plan(["matmul.split=N@ring"])
    sol = plan.result
    assert isinstance(sol, JointSolution)
    colls = plan_collectives(planner.tables, sol)
    assert [(c.collective.kind.value, c.view, c.collective.axis, c.slice_bytes) for c in colls] == [
        ("all_gather", "ring", "ring", 2048)
    ]
    assert colls[0].collective == sol.edges[0].cost.collectives[0]  # the transition's own, not a copy of its fields
    scene = mesh_scene(planner.mesh, planner.chip, link_loads(planner.mesh, planner.chip, colls), "gemm")
    assert len(scene.chips) == 8 and scene.chips.data["label"] == [str(i) for i in range(8)]
    lanes = scene.links.data
    assert len(scene.links) == 20
    loaded = [i for i, b in enumerate(lanes["bytes"]) if b]
    assert len(loaded) == 16 and scene.max_link_bytes == 3.5 * 2048
    assert all(lanes["width"][i] == MAX_WIDTH and lanes["share"][i] == 1.0 for i in loaded)
    assert all(lanes["colour"][i] == IDLE_COLOUR for i in range(20) if i not in loaded)
    assert all("all_gather on ring" in str(lanes["collectives"][i]) for i in loaded)
    assert all(float(str(lanes["busy_us"][i])) > 0 for i in loaded)

    frame = ops_frame(plan, None, planner.chip)
    assert list(frame["op"]) == ["matmul", TOTAL]
    status = next(s for s in plan.splits if s.op == "matmul" and s.split == "N@ring")
    row = frame.iloc[0]
    assert row["split"] == "N@ring" and row["per-chip problem"] == "gemm M=32,K=256,N=32"
    assert row["on-chip cycles"] == f"{status.onchip_cycles:,}"
    assert "all_gather on ring -> out" in row["collectives after it"]
    assert frame.iloc[1]["op us"] == f"{planner.chip.cycles_to_us(sol.latency_cycles):,.2f}"
    assert sum(c.total_cycles for c in op_costs(sol)) == sol.latency_cycles
    assert not {"nan", "NaN", "None", "<NA>"} & {str(v) for v in frame.to_numpy().ravel()}


@pytest.mark.slow
def test_ttnn_s_layer_split_fused_gather_and_norm_stats(tmp_path: Path) -> None:
    """tt-transformers' prefill layer: the fused gather of wo (as the planner charges it) and the distributed
    norms' stats gathers (their splits' own cycles) are among the drawn collectives; the table's ttnn column."""
    planner, prefill = _planner(tmp_path, MeshChoice(graph="layer", model="llama-3-8b", phase="decode b1"))
    pins = ttnn_layer_pins(planner.graph, planner.views, prefill)
    plan = planner.plan(pins)
    sol = plan.result
    assert isinstance(sol, JointSolution)
    colls = plan_collectives(planner.tables, sol)
    fused = [c for c in colls if c.why == "fused into wo"]
    assert len(fused) == 1 and fused[0].tensor == "attention"
    wo = dict(sol.splits)["wo"]
    mm = next(s.onchip_cycles for s in plan.splits if s.op == "wo" and s.split == wo.name)
    assert mm is not None
    assert dict(sol.split_cycles)["wo"] == max(mm, fused[0].collective.latency_cycles + ceil(mm / 8))
    assert sum(c.total_cycles for c in op_costs(sol)) == sol.latency_cycles
    frame = ops_frame(plan, plan, planner.chip)  # ttnn beside itself: the same split and time per op
    assert list(frame["split"][:-1]) == list(frame["ttnn split"][:-1])
    assert list(frame["op us"]) == list(frame["ttnn us"])

    prefill_planner, prefill = _planner(tmp_path, MeshChoice(graph="layer", model="llama-3-8b", phase="prefill 2k"))
    prefill_plan = prefill_planner.plan(ttnn_layer_pins(prefill_planner.graph, prefill_planner.views, prefill))
    psol = prefill_plan.result
    assert isinstance(psol, JointSolution)
    stats = {c.tensor: c for c in plan_collectives(prefill_planner.tables, psol) if c.why.startswith("stats of")}
    assert set(stats) == {"attn_norm", "ffn_norm"}
    for name, c in stats.items():
        assert c.collective.latency_cycles == dict(psol.splits)[name].fixed_cycles


def test_choices_are_names_only() -> None:
    good = MeshChoice(mesh="galaxy", graph="layer", model="llama-3-8b", phase="decode b32")
    assert checked(good) == good
    for bad, field in (
        (MeshChoice(mesh="../hw/meshes/t3000.yaml"), "mesh"),
        (MeshChoice(mesh="/etc/passwd"), "mesh"),
        (MeshChoice(graph="conv"), "graph"),
        (MeshChoice(graph="layer", model="gpt-5"), "model"),
        (MeshChoice(graph="mlp", phase="prefill 1m"), "phase"),
        (MeshChoice(shape="M=32,K=256"), "mesh_shape"),
        (MeshChoice(shape="M=32," * 100), "mesh_shape"),
        (MeshChoice(shape="M=4194304,K=32,N=32"), "mesh_shape"),
    ):
        with pytest.raises(InputError) as exc:
            checked(bad)
        assert exc.value.field == field
        assert "/etc" not in str(exc.value) and ".." not in str(exc.value)
    choice, notes = mesh_query({"mesh": [b"t3000"], "graph": [b"mlp"], "phase": [b"decode b1"]})
    assert choice == MeshChoice(mesh="t3000", graph="mlp", phase="decode b1") and not notes
    choice, notes = mesh_query({"mesh": [b"/etc/passwd"]})
    assert choice is None and notes and "passwd" not in notes[0]
    assert mesh_query({"hw": [b"wormhole_n150"]}) == (None, [])
