"""Dominated collective configs (``mesh/joint.py``): leaving them out of the joint model keeps its optimum,
a config pin keeps every config of its tensor, and of equal configs the first is kept; ties between
assignments go to the fewest collectives; and the plan (``mesh/plan.py``) against an oracle that solves
every per-chip problem."""

from __future__ import annotations

from ortools.sat.python import cp_model

from loom_explorer.hardware.mesh_load import load_mesh
from loom_explorer.mesh.graph import decoder_layer_graph, matmul_graph, model_graph
from loom_explorer.mesh.joint import JointModel, JointSolution, _dominated, round_model, solve_joint
from loom_explorer.mesh.plan import Planner
from loom_explorer.mesh.precision import precision
from loom_explorer.model.collective import FabricTopology
from loom_explorer.sweep.ops import DECODE_KV, MODELS


def _optimum_with_every_config(planner: Planner, view: str) -> int:
    onchip, fused = planner.costs()
    jm = round_model(planner.tables, onchip, fused, [], view, every_config=True)
    assert all(jm.kept[k] == planner.tables.configs[k[1]] for k in jm.kept)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 8
    solver.parameters.max_time_in_seconds = 120
    assert solver.solve(jm.model) == cp_model.OPTIMAL
    return int(solver.value(jm.objective))


def test_leaving_dominated_configs_out_keeps_every_views_optimum() -> None:
    mesh = load_mesh("bh_galaxy")  # 8 configs per tensor on its 8 x 4 view
    planner = Planner(mesh, decoder_layer_graph(MODELS["llama-3-8b"], 32, False, DECODE_KV), use_memory=False)
    onchip, fused = planner.costs()  # every split at its bound: nothing is solved
    for view in planner.views:
        found = solve_joint(planner.tables, onchip, fused, [], view.name)
        assert isinstance(found, JointSolution)
        assert found.latency_cycles == _optimum_with_every_config(planner, view.name)
        pruned = JointModel(planner.tables, onchip, fused, only=view.name)
        assert any(len(k) < len(planner.tables.configs[view.name]) for k in pruned.kept.values())


def test_more_links_and_a_ring_dominate_on_a_galaxy() -> None:
    graph = decoder_layer_graph(MODELS["llama-3-8b"], 32, False, DECODE_KV)
    planner = Planner(load_mesh("galaxy"), graph, use_memory=False)
    onchip, fused = planner.costs()
    (view,) = [v.name for v in planner.views if len(planner.tables.configs[v.name]) == 64]
    kept = JointModel(planner.tables, onchip, fused, only=view).kept
    for configs in kept.values():
        assert 1 <= len(configs) < 64
        # the config with every axis at its most links on a ring is among those kept
        assert any(all(a.links == 4 and a.topology is FabricTopology.ring for a in c.axes) for c in configs)


def test_a_num_links_pin_keeps_every_config_of_its_tensor() -> None:
    planner = Planner(load_mesh("bh_galaxy"), matmul_graph(32, 1024, 4096), use_memory=False)
    free, pinned = planner.plan(), planner.plan(["matmul.num_links=1"])
    assert isinstance(free.result, JointSolution) and isinstance(pinned.result, JointSolution)
    assert all(a.links == 2 for a in dict(free.result.configs)["matmul"].axes)  # the dominant config
    assert all(a.links == 1 for a in dict(pinned.result.configs)["matmul"].axes)
    assert pinned.result.latency_cycles >= free.result.latency_cycles


def test_of_equal_configs_the_first_is_kept_and_a_cheaper_one_dominates() -> None:
    costs = [(5, 7), (5, 7), (4, 9), (4, 7)]
    assert [_dominated(i, costs) for i in range(4)] == [True, True, True, False]
    assert [_dominated(i, [(1, 2), (1, 2)]) for i in range(2)] == [False, True]
    assert [_dominated(i, [(1, 2), (2, 1)]) for i in range(2)] == [False, False]


def test_the_plan_equals_the_joint_optimum_with_every_problem_solved() -> None:
    """The oracle: every per-chip problem solved (no bound left), the joint model of each view solved once
    with every config; the plan, which leaves configs out, solves some problems only and stops a round
    early once its assignment cannot win, must find the same latency."""
    graph = model_graph("mlp", MODELS["llama-3-8b"], 1, False, DECODE_KV, precision("performance"), 1)
    plan = Planner(load_mesh("t3000"), graph, use_memory=False).plan()  # both views, fused splits among them
    assert isinstance(plan.result, JointSolution) and plan.problems_pruned > 0
    oracle = Planner(load_mesh("t3000"), graph, use_memory=False)
    oracle._solve(sorted(oracle.bounds, key=lambda p: p.label))
    assert plan.result.latency_cycles == min(_optimum_with_every_config(oracle, v.name) for v in oracle.views)


def test_of_equally_fast_assignments_the_one_with_fewer_collectives_wins() -> None:
    planner = Planner(load_mesh("t3000"), matmul_graph(32, 2048, 8192), use_memory=False)
    plain, fused = planner.plan(["matmul.split=N@ring"]), planner.plan(["matmul.split=agN@ring"])
    best = planner.plan()
    assert isinstance(best.result, JointSolution) and isinstance(plain.result, JointSolution)
    assert isinstance(fused.result, JointSolution)
    # x is replicated: gathering it in the fused op is free, so both are proven equally fast
    assert plain.result.latency_cycles == fused.result.latency_cycles == best.result.latency_cycles
    assert dict(best.result.splits)["matmul"].name == "N@ring"
