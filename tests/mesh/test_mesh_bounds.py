"""Per-chip lower bounds (compute roofline, DRAM floor) against proven optima, and the DRAM capacity rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_explorer.hardware.load import shipped_hardware_dir
from loom_explorer.hardware.mesh_load import load_mesh, mesh_chip
from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.hardware.schema import DataFormat, Fidelity
from loom_explorer.mesh.bounds import charged_tensors, chip_bound
from loom_explorer.mesh.graph import matmul_graph
from loom_explorer.mesh.joint import JointConflict, JointSolution
from loom_explorer.mesh.onchip import chip_problem, solve_chip
from loom_explorer.mesh.plan import Planner
from loom_explorer.mesh.splits import ChipProblem

PROBLEMS = [
    ChipProblem("gemm", (("M", 32), ("K", 4096), ("N", 1024))),  # decode: DRAM bound
    ChipProblem("gemm", (("M", 512), ("K", 1024), ("N", 1024))),  # prefill: compute bound
    ChipProblem("flash_attention", (("B", 8), ("H", 8), ("Hkv", 1), ("Sq", 1), ("Skv", 1024), ("D", 128))),
    ChipProblem("rmsnorm", (("H", 32), ("W", 4096))),
    ChipProblem("binary", (("H", 64), ("W", 2048))),
    ChipProblem("swiglu", (("H", 32), ("W", 3584))),
    ChipProblem("gemm", (("M", 64), ("K", 1024), ("N", 512))),  # 32 output tiles: fewer than the cores
    ChipProblem("gemm", (("M", 2048), ("K", 1024), ("N", 1024))),
    ChipProblem(
        "flash_attention",
        (("B", 1), ("H", 8), ("Hkv", 1), ("Sq", 512), ("Skv", 512), ("D", 128)),
        frozenset({"causal"}),
    ),
    ChipProblem("flash_attention", (("B", 1), ("H", 4), ("Hkv", 1), ("Sq", 256), ("Skv", 256), ("D", 64))),
    # tt-transformers' performance precision (mesh/precision.py): bfp4 weights at LoFi, bfp8 weights, a bfp8 cache
    ChipProblem("gemm", (("M", 32), ("K", 4096), ("N", 1024)), formats=(("in1", DataFormat.bfloat4_b),),
                fidelity=Fidelity.lofi),
    ChipProblem("gemm", (("M", 512), ("K", 1024), ("N", 1024)), formats=(("in1", DataFormat.bfloat8_b),)),
    ChipProblem("flash_attention", (("B", 8), ("H", 8), ("Hkv", 1), ("Sq", 1), ("Skv", 1024), ("D", 128)),
                formats=(("k", DataFormat.bfloat8_b), ("v", DataFormat.bfloat8_b))),
    ChipProblem("flash_attention", (("B", 1), ("H", 8), ("Hkv", 1), ("Sq", 512), ("Skv", 512), ("D", 128)),
                frozenset({"causal"}), fidelity=Fidelity.hifi4),
    # the sequence split's per-chip problems (splits.py seq): a Galaxy row-chip's quarter of 2k tokens, and an
    # eighth of 2k over a T3000's ring at performance precision's HiFi4
    ChipProblem("flash_attention", (("B", 1), ("H", 8), ("Hkv", 1), ("Sq", 512), ("Skv", 1056), ("D", 128))),
    ChipProblem("flash_attention", (("B", 1), ("H", 64), ("Hkv", 8), ("Sq", 256), ("Skv", 1056), ("D", 128)),
                fidelity=Fidelity.hifi4),
]  # fmt: skip


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.label)
def test_bounds_are_below_the_proven_optimum(problem: ChipProblem) -> None:
    chip = mesh_chip(load_mesh("t3000"))
    bound = chip_bound(chip, chip_problem(problem))
    assert charged_tensors(chip_problem(problem))  # every kernel a split uses has a DRAM floor
    solved = solve_chip(chip, problem, None, False, 30.0)
    assert solved.proven and solved.latency_cycles is not None
    assert bound.compute_cycles <= solved.latency_cycles
    assert bound.dram_cycles <= solved.latency_cycles
    assert bound.core_cycles <= solved.latency_cycles
    if problem.formats or problem.fidelity is not Fidelity.hifi2:
        return  # sound above; how tight the floors are is checked at bf16, HiFi2
    decode = dict(problem.shape).get("Sq") == 1  # its query heads share score tiles: fewer than the roofline counts
    if problem.kernel in ("gemm", "flash_attention") and not decode:  # the busiest core's adds launch, packs (...)
        assert bound.core_cycles > bound.compute_cycles
    if problem.kernel == "flash_attention" and not decode:  # the softmax and the packs: more than the matmuls
        assert bound.core_cycles >= 2 * bound.compute_cycles
    if problem.kernel == "gemm" and dict(problem.shape)["M"] == 32:  # weights streamed once: the floor is tight
        assert bound.dram_cycles >= 0.9 * solved.latency_cycles > bound.compute_cycles


def test_attention_core_floor_prices_every_score_tile() -> None:
    chip = mesh_chip(load_mesh("t3000"))
    problem = chip_problem(
        ChipProblem(
            "flash_attention",
            (("B", 1), ("H", 8), ("Hkv", 1), ("Sq", 512), ("Skv", 512), ("D", 128)),
            frozenset({"causal"}),
        )
    )
    c = chip.compute
    assert set(c.sdpa_softmax_scale.values()) == {1.0}  # the shipped chip's factors: each op at its cost
    # 16 query tiles: 16*17/2 = 136 causal score tiles per head, 8 heads, over the chip's cores; per score tile
    # the two matmuls over D_t = 4 tiles, a pack, and the softmax's ops on the scores (scale, max and sum on
    # the FPU, exp on the SFPU)
    per_tile = 2 * 4 * c.matmul_tile_cycles[problem.fidelity] + c.tile_pack_cycles
    per_tile += 3 * c.eltwise_tile_cycles + c.sfpu_tile_cycles["exp"]
    expected = c.kernel_launch_cycles + -(-8 * 136 // chip.grid.cores) * per_tile
    assert chip_bound(chip, problem).core_cycles == expected


def test_gemm_core_floor_counts_the_busiest_cores_output_tiles() -> None:
    chip = mesh_chip(load_mesh("t3000"))
    problem = chip_problem(ChipProblem("gemm", (("M", 32), ("K", 1024), ("N", 512))))
    c, cores = chip.compute, chip.grid.cores
    # 1 x 16 output tiles over 32 K tiles: 512 tile matmuls; a core holds at least one output tile
    assert cores > 16
    write = -(-2048 * 1000 // round(chip.dram.core_write_bytes_per_cycle * 1000)) + chip.dram.write_latency_cycles
    matmuls = -(-512 // cores) * c.matmul_tile_cycles[problem.fidelity]
    expected = c.kernel_launch_cycles + matmuls + c.tile_pack_cycles + write
    assert chip_bound(chip, problem).core_cycles == expected


def test_dram_floor_counts_both_operands_once() -> None:
    chip = mesh_chip(load_mesh("t3000"))
    bound = chip_bound(chip, chip_problem(ChipProblem("gemm", (("M", 8), ("K", 1024), ("N", 2048)))))
    # in0 pads M=8 to one tile row: 1 x 32 tiles; in1 32 x 64 tiles; bf16 tiles of 2,048 B
    assert bound.dram_bytes == (32 + 32 * 64) * 2048
    rate = chip.dram.chip_read_bytes_per_cycle
    assert bound.dram_cycles == chip.compute.kernel_launch_cycles + -(-bound.dram_bytes * 1000 // round(rate * 1000))


def _small_dram_mesh(tmp_path: Path, channel_bytes: int, monkeypatch: pytest.MonkeyPatch) -> MeshSpec:
    monkeypatch.chdir(tmp_path)  # the mesh names its chip file by a short relative path
    chip = (shipped_hardware_dir() / "wormhole_n300.yaml").read_text()
    chip = chip.replace("channel_bytes: 1073741824", f"channel_bytes: {channel_bytes}")
    (tmp_path / "small.yaml").write_text(chip)
    mesh = (shipped_hardware_dir() / "meshes" / "t3000.yaml").read_text()
    mesh = mesh.replace("chip: wormhole_n300", "chip: small.yaml")
    (tmp_path / "mesh.yaml").write_text(mesh)
    return load_mesh(tmp_path / "mesh.yaml")


def test_a_split_whose_weights_exceed_a_chips_dram_is_infeasible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 12 channels of 2 MiB: 24 MiB per chip; the 4096 x 4096 bf16 weights are 32 MiB, half of them 16 MiB
    mesh = _small_dram_mesh(tmp_path, 2 * 1024 * 1024, monkeypatch)
    planner = Planner(mesh, matmul_graph(32, 4096, 4096), store=tmp_path / "s.sqlite")
    assert planner.tables.capacity_bytes == 24 * 1024 * 1024
    plan = planner.plan()
    status = {(s.split, s.view): s.status for s in plan.splits}
    assert status[("rep@ring", "ring")] == status[("rep@mesh", "mesh")] == "infeasible: DRAM"
    assert status[("N@ring", "ring")] != "infeasible: DRAM"
    assert isinstance(plan.result, JointSolution)
    assert dict(plan.result.splits)["matmul"].name not in ("rep@ring", "rep@mesh")
    pinned = planner.plan(["matmul.split=rep@ring"])
    assert isinstance(pinned.result, JointConflict)
    assert pinned.result.pins == ("matmul.split=rep@ring",)
    assert "infeasible: DRAM" in pinned.result.message
    # with the shipped 12 GiB the replicated split is only slower, not refused
    roomy = Planner(load_mesh("t3000"), matmul_graph(32, 4096, 4096), store=tmp_path / "s.sqlite")
    assert isinstance(roomy.plan(["matmul.split=rep@ring"]).result, JointSolution)
