"""A model's graph at a precision with all its layers resident: the ops' formats and fidelities, the per-chip
problems they make, the DRAM each split holds, and a whole model that fits no chip explained."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_explorer import cli
from loom_explorer.hardware.mesh_load import load_mesh, mesh_chip
from loom_explorer.hardware.schema import DataFormat, Fidelity
from loom_explorer.mesh.bounds import tensor_bytes, tiled_bytes
from loom_explorer.mesh.capacity import SplitBytes, chip_dram_bytes, held_bytes, split_bytes
from loom_explorer.mesh.graph import matmul_graph, model_graph
from loom_explorer.mesh.joint import JointConflict, JointSolution
from loom_explorer.mesh.onchip import chip_problem
from loom_explorer.mesh.plan import Planner
from loom_explorer.mesh.precision import PRECISIONS, precision
from loom_explorer.mesh.splits import ChipProblem
from loom_explorer.mesh.states import MeshError
from loom_explorer.sweep.ops import DECODE_KV, MODELS

LLAMA_70B = MODELS["llama-3-70b"]


def _graph(prefill: bool, name: str = "performance", layers: int = 80, graph: str = "layer"):
    rows = 2048 if prefill else 32
    return model_graph(graph, LLAMA_70B, rows, prefill, DECODE_KV, precision(name), layers)


def test_performance_precision_is_tt_transformers() -> None:
    prefill, decode = _graph(True), _graph(False)
    fmt = {op.name: op.format("in1") for op in prefill.ops if op.kernel == "gemm"}
    assert fmt == {"qkv": DataFormat.bfloat8_b, "wo": DataFormat.bfloat8_b, "w1": DataFormat.bfloat4_b,
                   "w3": DataFormat.bfloat4_b, "w2": DataFormat.bfloat8_b}  # fmt: skip
    assert {op.name for op in prefill.ops if op.fidelity is Fidelity.lofi} == {"w1", "w3"}
    assert prefill.op("attention").fidelity is Fidelity.hifi4 and prefill.op("attention").formats == ()
    assert decode.op("attention").fidelity is Fidelity.hifi2
    assert dict(decode.op("attention").formats) == {"k": DataFormat.bfloat8_b, "v": DataFormat.bfloat8_b}
    assert prefill.layers == 80 and prefill.precision == "performance"
    assert prefill.reserved_bytes == 2 * 128256 * 8192 * 2  # embedding and LM head, bf16
    bf16 = _graph(True, "bf16")
    assert all(op.formats == () and op.fidelity is Fidelity.hifi2 for op in bf16.ops)


def test_the_chip_problem_is_solved_at_the_ops_format_and_fidelity() -> None:
    planner = Planner(load_mesh("t3000"), _graph(True))
    (w1,) = [s for s in planner.tables.splits["w1"] if s.name == "N@ring"]
    assert w1.problem is not None and w1.problem.label == "gemm M=2048,K=8192,N=3584 in1=bfloat4_b lofi"
    made = chip_problem(w1.problem)
    assert made.data_format("in1") is DataFormat.bfloat4_b and made.fidelity is Fidelity.lofi
    assert made.data_format("in0") is DataFormat.bfloat16


def test_resident_bytes_count_every_layer_in_its_format() -> None:
    mesh = load_mesh("t3000")
    chip = mesh_chip(mesh)
    for name, layers, tile in (("performance", 80, 576), ("bf16", 1, 2048)):
        planner = Planner(mesh, _graph(True, name, layers))
        (rep,) = [s for s in planner.tables.splits["w1"] if s.name == "rep@ring"]
        view = planner.tables.view("ring")
        held = split_bytes(planner.graph, view, rep, chip)
        assert held.resident_bytes == layers * (8192 * 28672 // 1024) * tile
    planner = Planner(mesh, _graph(True))
    assert planner.tables.capacity_bytes == chip_dram_bytes(chip) - 2 * 128256 * 8192 * 2 // 8


def test_resident_bytes_are_the_dram_floor_s_tiles_of_the_built_problem() -> None:
    """Capacity and the DRAM floor count a tensor alike (``bounds.tiled_bytes``, every dim tile-padded): each
    split's resident bytes are its built problem's ``tensor_bytes``; K=100 x N=70 is 4 x 3 tiles, not
    ceil(7000 / 1024) = 7."""
    mesh = load_mesh("t3000")
    chip = mesh_chip(mesh)
    for graph, op, tensors in (
        (_graph(False, layers=1), "attention", ("k", "v")),
        (_graph(True, layers=1), "w1", ("in1",)),
    ):
        tables = Planner(mesh, graph, use_memory=False).tables
        for s in tables.splits[op]:
            assert s.problem is not None
            built = chip_problem(s.problem)
            assert tables.memory[(op, s.name)].resident_bytes == sum(tensor_bytes(chip, built, t) for t in tensors)
    odd = ChipProblem("gemm", (("M", 32), ("K", 100), ("N", 70)))
    built = chip_problem(odd)
    assert tiled_bytes(chip, built.program, "in1", dict(odd.shape), DataFormat.bfloat16) == 4 * 3 * 2048
    assert tensor_bytes(chip, built, "in1") == 4 * 3 * 2048


def test_a_solution_s_dram_is_its_splits_resident_bytes_and_the_largest_activations(tmp_path: Path) -> None:
    planner = Planner(load_mesh("t3000"), matmul_graph(32, 256, 256), tmp_path / "r.sqlite", use_memory=False)
    tables = planner.tables
    by_op = tables.op_bytes()
    assert set(by_op) == set(tables.splits) and all(len(by_op[o]) == len(ss) for o, ss in tables.splits.items())
    sol = planner.plan(["matmul.split=N@ring"]).result
    assert isinstance(sol, JointSolution)
    chosen = [tables.memory[(op, s.name)] for op, s in sol.splits]
    assert sol.dram_bytes == sum(b.resident_bytes for b in chosen) + max(b.activation_bytes for b in chosen) > 0
    picked = tables.op_bytes([("matmul", "N@ring")])
    assert picked == {"matmul": [tables.memory[("matmul", "N@ring")]]}
    a, b, c = SplitBytes(3, 5), SplitBytes(4, 1), SplitBytes(1, 9)
    assert held_bytes([[a], [b]]) == 3 + 4 + 5 and held_bytes([]) == 0
    assert held_bytes([[a, c], [b]]) == 3 + 4 + 9  # the heaviest resident and the largest activations apart


def test_the_whole_model_in_bf16_fits_no_t3000_and_says_why() -> None:
    planner = Planner(load_mesh("t3000"), _graph(False, "bf16"), use_memory=False)
    plan = planner.plan()
    assert isinstance(plan.result, JointConflict)
    assert "80 layer(s) at bf16 precision" in plan.result.message and "--layers" in plan.result.message
    assert all(s.status in ("infeasible: DRAM", "pruned") for s in plan.splits)
    one = Planner(load_mesh("t3000"), _graph(False, "bf16", layers=1), use_memory=False).plan()
    assert isinstance(one.result, JointSolution) and one.result.dram_bytes <= chip_dram_bytes(
        mesh_chip(load_mesh("t3000"))
    )


def test_unknown_precision_graph_and_layers_are_refused() -> None:
    with pytest.raises(MeshError, match="--precision fp8: known presets are performance, bf16"):
        precision("fp8")
    with pytest.raises(MeshError, match="--layers 0"):
        _graph(True, layers=0)
    with pytest.raises(MeshError, match="graph 'ffn'"):
        _graph(True, graph="ffn")
    assert set(PRECISIONS) == {"performance", "bf16"}


def test_the_command_line_names_the_precision_and_the_dram_per_chip(capsys) -> None:
    code = cli.main(["mesh", "solve", "--hw", "t3000", "--graph", "mlp", "--phase", "decode b1", "--layers", "2",
                     "--no-cache"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "performance precision, 2 layers' weights per chip" in out
    assert "DRAM per chip" in out and "gemm M=1,K=8192,N=" in out and "in1=bfloat4_b lofi" in out
    assert cli.main(["mesh", "solve", "--hw", "t3000", "--layers", "0"]) == 2
    assert "--layers" in capsys.readouterr().err
