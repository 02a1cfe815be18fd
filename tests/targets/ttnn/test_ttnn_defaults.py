"""ttnn's default for element-wise ops and row reductions (``targets/ttnn/defaults.py``): the work split of
the interleaved program factories over the whole grid, costed by the referee, and ``predict --ttnn-default``.

The expected values are written out from the rules (per_core = ceil(units / cores of the grid), the grid
shrunk to the rows of cores with work, one tile or one tile row per block, buffers of 2 tiles / one whole
row), and the latency is the referee's on the enumerated candidate of that name with those values.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from loom_explorer import cli
from loom_explorer.families.attention.ttnn_config import TtnnSdpaConfig
from loom_explorer.families.contraction.ttnn_config import TtnnMatmulConfig, ttnn_default_config
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.grid import restrict_grid
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import Placement, Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.targets.ttnn.defaults import (
    TtnnDefaultOp,
    evaluate_interleaved_default,
    evaluate_ttnn_default,
    ttnn_default_op,
    work_split,
)
from loom_explorer.targets.ttnn.evaluate import ConfigError, evaluate_values

N150 = "wormhole_n150"  # 8x8 cores
NORM = "H@xy|x=dram,gamma=dram,eps=dram"
ADD = "H*W@xy|a=dram,b=dram"


def problem(kernel: str, shape: str, activation: str | None = None) -> Problem:
    return make_problem(load_program(kernel), shape, activation=activation)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def referee_cycles(hw_name: str, p: Problem, candidate: str, values: dict[str, int]) -> int:
    """The referee's latency of ``values`` on the enumerated candidate named ``candidate``."""
    hw = load_hardware(hw_name)
    [c] = [c for c in enumerate_candidates(p) if c.name == candidate]
    evaluated = evaluate_values(build_schedule(hw, p, c), values)
    assert evaluated.result.solution is not None, evaluated.result.conflict
    return evaluated.result.solution.latency_cycles


@pytest.mark.parametrize(
    "units,grid,want",
    [
        (64, (8, 8), (1, 64, (8, 8))),
        (60, (8, 8), (1, 60, (8, 8))),  # 7 full rows and 4 cores of the 8th
        (5, (8, 8), (1, 5, (5, 1))),  # one row, shrunk to its cores
        (256, (8, 8), (4, 64, (8, 8))),
        (65, (8, 8), (2, 33, (8, 5))),  # ttnn: one core with 2, 63 with 1; packed: 33 cores with 2
        (1, (8, 8), (1, 1, (1, 1))),
        (448, (8, 8), (7, 64, (8, 8))),
    ],
)
def test_work_split(units: int, grid: tuple[int, int], want: tuple[int, int, tuple[int, int]]) -> None:
    assert work_split(units, grid) == want


def test_rmsnorm_prefill_is_one_tile_row_per_core_on_all_64_cores() -> None:
    """2048 x 4096: 64 tile rows over the 8x8 grid, one each; the row (128 tiles) held whole."""
    p = problem("rmsnorm", "H=2048,W=4096")
    default, evaluated = evaluate_interleaved_default(load_hardware(N150), p)
    assert default == TtnnDefaultOp(
        op="ttnn.rms_norm",
        program="interleaved, LayerNormDefaultProgramConfig",
        compute_with_storage_grid_size=(8, 8),
        unit="tile row",
        units=64,
        per_core=1,
        cores=64,
    )
    want = {"grid_x": 8, "grid_y": 8, "per_core_H": 1, "block_h": 1, "x_buffer_depth": 1}
    assert evaluated.schedule.candidate.name == NORM and evaluated.values == want
    assert evaluated.result.solution is not None
    assert evaluated.result.solution.latency_cycles == referee_cycles(N150, p, NORM, want)


def test_rmsnorm_of_more_rows_than_cores() -> None:
    p = problem("rmsnorm", "H=8192,W=4096")  # 256 tile rows: 4 per core
    _, evaluated = evaluate_interleaved_default(load_hardware(N150), p)
    want = {"grid_x": 8, "grid_y": 8, "per_core_H": 4, "block_h": 1, "x_buffer_depth": 1}
    assert evaluated.values == want
    assert evaluated.result.solution is not None
    assert evaluated.result.solution.latency_cycles == referee_cycles(N150, p, NORM, want)


def test_a_decode_norm_is_one_row_on_one_core() -> None:
    """32 x 4096 is one tile row: ttnn's interleaved norm puts it on one core. The enumerator does not
    spread a dimension of one tile, so the candidate is built directly; the solver's split of the columns
    is faster."""
    hw = load_hardware(N150)
    p = problem("rmsnorm", "H=32,W=4096")
    default, evaluated = evaluate_interleaved_default(hw, p)
    assert (default.units, default.per_core, default.cores) == (1, 1, 1)
    assert default.describe() == (
        "ttnn.rms_norm (interleaved, LayerNormDefaultProgramConfig): 1 tile row over 1 of 8x8 cores, 1 per core"
    )
    assert evaluated.schedule.candidate.name == NORM
    assert NORM not in {c.name for c in enumerate_candidates(p)}
    assert evaluated.values == {"grid_x": 1, "grid_y": 1, "per_core_H": 1, "block_h": 1, "x_buffer_depth": 1}
    assert evaluated.result.solution is not None


def test_binary_deals_its_60_tiles_over_60_cores() -> None:
    """320 x 192 is 10 x 6 = 60 tiles: one per core, 7 full rows of 8 cores and 4 of the 8th."""
    p = problem("binary", "H=320,W=192")
    default, evaluated = evaluate_ttnn_default(load_hardware(N150), p)
    assert isinstance(default, TtnnDefaultOp)
    assert (default.op, default.program) == ("ttnn.add", "binary_ng, interleaved")
    assert (default.unit, default.units, default.per_core, default.cores) == ("tile", 60, 1, 60)
    want = {"grid_x": 8, "grid_y": 8, "per_core_H*W": 1, "block": 1, "a_buffer_depth": 2, "b_buffer_depth": 2}
    assert evaluated.schedule.candidate.name == ADD and evaluated.values == want
    assert evaluated.result.solution is not None
    assert evaluated.result.solution.latency_cycles == referee_cycles(N150, p, ADD, want)


def test_swiglu_decode_row_is_flattened_over_the_grid() -> None:
    """1 x 14336: one tile high, 448 tiles, 7 per core; silu on a fused into ttnn.multiply."""
    p = problem("swiglu", "H=1,W=14336")
    default, evaluated = evaluate_ttnn_default(load_hardware(N150), p)
    assert isinstance(default, TtnnDefaultOp)
    assert default.op == "ttnn.multiply"
    assert default.program == "binary_ng, interleaved, input_tensor_a_activations=[SILU]"
    assert evaluated.schedule.candidate.name == ADD
    assert evaluated.values == {
        "grid_x": 8,
        "grid_y": 8,
        "per_core_H*W": 7,
        "block": 1,
        "a_buffer_depth": 2,
        "b_buffer_depth": 2,
    }
    assert evaluated.result.solution is not None


@pytest.mark.parametrize(
    "kernel,shape,activation,op,program",
    [
        ("softmax", "H=2048,W=2048", None, "ttnn.softmax", "interleaved, SoftmaxDefaultProgramConfig"),
        ("layernorm", "H=2048,W=1024", None, "ttnn.layer_norm", "interleaved, LayerNormDefaultProgramConfig"),
        ("unary", "H=64,W=64", "relu", "ttnn.relu", "unary, interleaved"),
    ],
)
def test_the_op_is_named_from_the_program(
    kernel: str, shape: str, activation: str | None, op: str, program: str
) -> None:
    default, _, values = ttnn_default_op(load_hardware(N150), problem(kernel, shape, activation))
    assert (default.op, default.program) == (op, program)
    assert values["grid_x"] * values["grid_y"] >= default.cores


def test_a_row_too_wide_for_l1_is_a_conflict() -> None:
    """2048 x 8192 bf16: the row's buffers overflow L1 (ttnn takes its large-tensor path, which the model does
    not express); the referee says why."""
    _, evaluated = evaluate_interleaved_default(load_hardware(N150), problem("rmsnorm", "H=2048,W=8192"))
    assert evaluated.result.solution is None and evaluated.result.status == "conflict"
    assert evaluated.result.conflict is not None and "l1_capacity" in evaluated.result.conflict.message


def test_a_restricted_grid_shrinks_the_split() -> None:
    hw = restrict_grid(load_hardware(N150), 4, 4)
    default, evaluated = evaluate_interleaved_default(hw, problem("binary", "H=320,W=192"))
    assert default.compute_with_storage_grid_size == (4, 4)
    assert (default.per_core, default.cores) == (4, 15)  # 60 tiles over 16 cores
    assert (evaluated.values["grid_x"], evaluated.values["grid_y"], evaluated.values["per_core_H*W"]) == (4, 4, 4)


def test_tensors_in_l1_and_other_families_are_refused() -> None:
    hw = load_hardware(N150)
    sharded = make_problem(load_program("binary"), "H=2048,W=4096", placements={"a": Placement.l1_height})
    with pytest.raises(ConfigError, match="DRAM-interleaved"):
        ttnn_default_op(hw, sharded)
    with pytest.raises(ConfigError, match="without a program config"):
        ttnn_default_op(hw, problem("gemm", "M=256,K=256,N=256"))


def test_matmul_and_sdpa_defaults_are_unchanged() -> None:
    hw = load_hardware(N150)
    gemm = problem("gemm", "M=1024,K=1024,N=1024")
    cfg, _ = evaluate_ttnn_default(hw, gemm)
    assert isinstance(cfg, TtnnMatmulConfig) and cfg == ttnn_default_config(hw, gemm)
    sdpa, _ = evaluate_ttnn_default(hw, problem("flash_attention", "B=1,H=4,Sq=1024,Skv=1024,D=64"))
    assert isinstance(sdpa, TtnnSdpaConfig) and sdpa.q_chunk_size == 32


def test_cli_predict_ttnn_default() -> None:
    code, out, err = run("predict", "rmsnorm", "--hw", N150, "--shape", "H=2048,W=4096", "--ttnn-default", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["name"] == NORM and doc["status"] == "feasible"
    assert doc["params"] == {"grid_x": 8, "grid_y": 8, "per_core_H": 1, "block_h": 1, "x_buffer_depth": 1}
    assert doc["ttnn_config"] == {
        "op": "ttnn.rms_norm",
        "program": "interleaved, LayerNormDefaultProgramConfig",
        "compute_with_storage_grid_size": [8, 8],
        "unit": "tile row",
        "units": 64,
        "per_core": 1,
        "cores": 64,
    }
    code, out, err = run("predict", "binary", "--hw", N150, "--shape", "H=320,W=192", "--ttnn-default")
    assert code == 0, err
    assert ADD in out and "per_core_H*W" in out
    assert out.startswith(
        "ttnn config costed (what ttnn picks when the call gives none):\n  ttnn.add\n"
        "  no program config (binary_ng, interleaved): 60 tiles over 60 of 8x8 cores, 1 per core\n"
    )
    assert doc["ttnn_op"] == "ttnn.rms_norm" and doc["ttnn_config_class"] is None
    assert doc["ttnn_config_source"] == "ttnn default" and doc["ttnn_config_fields"] == doc["ttnn_config"]


def test_cli_predict_explains_a_wide_row_and_refuses_a_config(tmp_path) -> None:
    code, out, _ = run("predict", "rmsnorm", "--hw", N150, "--shape", "H=2048,W=8192", "--ttnn-default")
    assert code == 3 and "illegal in the model: " in out and "l1_capacity" in out
    assert "  ttnn.rms_norm\n  no program config (interleaved, LayerNormDefaultProgramConfig)" in out
    path = tmp_path / "cfg.json"
    path.write_text("{}")
    code, _, err = run("predict", "binary", "--hw", N150, "--shape", "H=320,W=192", "--ttnn-config", str(path))
    assert code == 2 and "reads matmul and SDPA configs; binary is of the elementwise family" in err
    assert "--ttnn-default" in err
