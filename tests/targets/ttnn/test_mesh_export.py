"""``mesh export``'s text without ttnn: the mapper each uploaded tensor gets from its state or its split, the
collectives' arguments against the plan's edges, the fused all-gather + matmul, the plan's JSON, and the
command's folder (whole or not at all, never over an existing one without --force)."""

from __future__ import annotations

import ast
import json
from functools import cache
from pathlib import Path

import pytest

from loom_explorer.cli import main
from loom_explorer.export.files import OutputError, write_new_folder
from loom_explorer.hardware.mesh_load import load_mesh
from loom_explorer.mesh.graph import matmul_graph
from loom_explorer.mesh.joint import JointSolution
from loom_explorer.mesh.plan import MeshPlan, Planner
from loom_explorer.targets.ttnn.mesh_calls import MeshProgram, mesh_program
from loom_explorer.targets.ttnn.mesh_script import mesh_source, plan_document

SHAPE = (32, 512, 1024)  # M, K, N: small enough to plan in a second or two


@cache
def _planned(store: str, *pins: str) -> tuple[MeshPlan, MeshProgram, str]:
    mesh = load_mesh("t3000")
    planner = Planner(mesh, matmul_graph(*SHAPE), store=store)
    plan = planner.plan(list(pins))
    program = mesh_program(plan, mesh, planner.chip, planner.graph, store=store)
    return plan, program, mesh_source(program)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("mesh_export") / "results.db")


def _constant(source: str, name: str) -> object:
    tree = ast.parse(source)
    node = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == name)
    return ast.literal_eval(node)


def _run_calls(source: str) -> list[ast.Call]:
    tree = ast.parse(source)
    run = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run")
    return [n for n in ast.walk(run) if isinstance(n, ast.Call) and ast.unparse(n.func).startswith("ttnn.")]


def _kwargs(call: ast.Call) -> dict[str, str]:
    return {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}


def test_a_row_parallel_split_shards_the_input_on_its_columns_and_all_reduces(store: str) -> None:
    plan, program, source = _planned(store, "matmul.split=K")
    assert isinstance(plan.result, JointSolution) and program.view == "ring" and program.mesh_shape == (1, 8)
    host = _constant(source, "HOST_TENSORS")
    assert isinstance(host, dict)
    assert host["x"] == ([1, 1, 32, 512], [None, None], "bfloat16")  # arrives replicated (the boundary)
    assert host["matmul.weight"] == ([1, 1, 512, 1024], [None, -2], "bfloat16")  # K over the ring: cluster_axis 1
    calls = _run_calls(source)
    names = [ast.unparse(c.func) for c in calls]
    assert names == ["ttnn.mesh_partition", "ttnn.matmul", "ttnn.all_reduce"]
    assert ast.unparse(calls[0].args[1]) == "-1" and _kwargs(calls[0])["cluster_axis"] == "1"
    (edge,) = [e for e in plan.result.edges if e.tensor == "matmul"]
    (step,) = edge.cost.collectives
    reduce = _kwargs(calls[2])
    assert reduce["cluster_axis"] == "1" and reduce["num_links"] == str(step.links)
    assert reduce["topology"] == f"ttnn.Topology.{step.topology.value.capitalize()}"
    assert program.fabric_config == ("FABRIC_1D_RING" if step.topology.value == "ring" else "FABRIC_1D")


def test_the_fused_split_is_ttnns_all_gather_matmul_with_the_inputs_links(store: str) -> None:
    plan, program, source = _planned(store, "matmul.split=agN@ring")
    assert isinstance(plan.result, JointSolution)
    names = [ast.unparse(c.func) for c in _run_calls(source)]
    assert "ttnn.experimental.all_gather_matmul_async" in names and "ttnn.matmul" not in names
    fused = next(c for c in _run_calls(source) if ast.unparse(c.func).endswith("all_gather_matmul_async"))
    cfg = dict(plan.result.configs)["x"].axes[0]
    assert _kwargs(fused)["num_links"] == str(cfg.links)
    assert _kwargs(fused)["topology"] == f"ttnn.Topology.{cfg.topology.value.capitalize()}"
    assert _constant(source, "HOST_TENSORS")["matmul.weight"][1] == [None, -1]  # type: ignore[index]


def test_a_2d_split_gets_2d_placements_and_gathers_on_each_axis(store: str) -> None:
    plan, program, source = _planned(store, "view=mesh", "matmul.split=M@rows,N@columns")
    assert isinstance(plan.result, JointSolution) and program.mesh_shape == (2, 4)
    host = _constant(source, "HOST_TENSORS")
    assert host["matmul.weight"][1] == [None, -1]  # type: ignore[index]  # N along columns (cluster_axis 1)
    gathers = [c for c in program.collectives if c.kind == "all_gather"]
    (edge,) = [e for e in plan.result.edges if e.tensor == "matmul"]
    planned = [(c.axis, c.links, c.topology.value, c.slice_bytes) for c in edge.cost.collectives]
    assert [(g.axis, g.num_links, str(g.topology).lower(), g.piece_bytes) for g in gathers] == planned
    axes = {"rows": 0, "columns": 1}
    dims = {"rows": -2, "columns": -1}  # out of the split: Sr on rows (M), Sc on columns (N)
    assert [(g.cluster_axis, g.dim) for g in gathers] == [(axes[g.axis], dims[g.axis]) for g in gathers]
    texts = [ast.unparse(c) for c in _run_calls(source) if ast.unparse(c.func) == "ttnn.all_gather"]
    for g, text in zip(gathers, texts, strict=True):
        assert f"cluster_axis={g.cluster_axis}" in text and f"num_links={g.num_links}" in text


def test_the_plans_json_has_every_op_and_collective_with_its_cycles(store: str) -> None:
    plan, program, _ = _planned(store, "matmul.split=K")
    doc = json.loads(plan_document(program))
    assert isinstance(plan.result, JointSolution)
    assert doc["schema_version"] == 1 and doc["latency_cycles"] == plan.result.latency_cycles
    ops = [s for s in doc["steps"] if s["step"] == "op"]
    assert [(o["op"], o["split"], o["predicted_cycles"]) for o in ops] == [
        ("matmul", "K@ring", dict(plan.result.split_cycles)["matmul"])
    ]
    reductions = [s for s in doc["steps"] if s["step"] == "collective" and s["kind"] != "mesh_partition"]
    assert sum(s["latency_cycles"] for s in reductions) == sum(
        c.latency_cycles for e in plan.result.edges for c in e.cost.collectives
    )
    assert plan.result.latency_cycles == ops[0]["predicted_cycles"] + sum(s["latency_cycles"] for s in reductions)


def test_a_folder_is_written_whole_and_never_over_one_without_force(tmp_path: Path) -> None:
    target = tmp_path / "out"
    write_new_folder(target, {"a.py": "1\n", "b.json": "{}\n"})
    assert sorted(p.name for p in target.iterdir()) == ["a.py", "b.json"]
    with pytest.raises(OutputError, match="exists; pass --force"):
        write_new_folder(target, {"a.py": "2\n"})
    write_new_folder(target, {"c.py": "3\n"}, force=True)
    assert sorted(p.name for p in target.iterdir()) == ["c.py"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="not a folder"):
        write_new_folder(tmp_path / "file", {"a.py": ""}, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "out"]  # no temporary folder left


def test_the_command_writes_the_script_and_json_and_refuses_an_existing_folder(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan"
    base = ["mesh", "export", "--hw", "t3000", "--op", "matmul", "--shape", "M=32,K=512,N=1024"]
    args = [*base, "--pin", "matmul.split=K", "--store", store, "-o", str(out)]
    assert main(args) == 0
    assert sorted(p.name for p in out.iterdir()) == ["plan.json", "plan_ttnn.py"]
    ast.parse((out / "plan_ttnn.py").read_text())
    assert json.loads((out / "plan.json").read_text())["view"] == "ring"
    assert main(args) == 2 and "exists; pass --force" in capsys.readouterr().err
    assert main(base) == 2 and "needs -o DIR" in capsys.readouterr().err
