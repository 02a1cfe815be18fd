"""TTNN export of element-wise and row-reduction schedules: L1-sharded tensors become TTNN's sharded memory
configs with the schedule's split, norms and softmax their sharded program configs with the schedule's
grid and shard sides, a program is recognised as TTNN's op up to tensor names, and everything TTNN cannot run
as scheduled is refused with the reason. The files against the real ttnn: ``tests/ttnn_contract``."""

from __future__ import annotations

import dataclasses

import pytest

from loom_explorer.export.exporter import ExportError
from loom_explorer.export.schedule_json import RebuiltSchedule, schedule_document
from loom_explorer.families.elementwise.ttnn import elementwise_call
from loom_explorer.families.row_reduction.ttnn import row_reduction_op
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import Placement, Problem, make_problem
from loom_explorer.program import Dim, Eltwise, Reduce, Tensor, TileProgram, load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttnn.exporter import ttnn_source
from loom_explorer.targets.ttnn.op import ttnn_equivalent, ttnn_memory

HW = load_hardware("wormhole_n150")

# RMSNorm written afresh with other tensor names and dimension names: still ttnn.rms_norm
RENAMED_RMSNORM = TileProgram(
    name="my_norm",
    description="renamed RMSNorm",
    dims=(Dim("T", "parallel"), Dim("E", "reduction")),
    tensors=(
        Tensor("h", ("T", "E"), "input"),
        Tensor("w", ("E",), "input"),
        Tensor("tiny", (), "input"),
        Tensor("sq", ("T", "E"), "intermediate"),
        Tensor("inv", ("T",), "intermediate"),
        Tensor("o", ("T", "E"), "output"),
    ),
    ops=(
        Eltwise("mul", "sq", unit="fpu", operand="h", source="h"),
        Reduce("mean", "inv", operand="sq"),
        Eltwise("add", "inv", unit="fpu", operand="tiny"),
        Eltwise("rsqrt", "inv"),
        Eltwise("mul", "o", unit="fpu", operand="inv", source="h"),
        Eltwise("mul", "o", unit="fpu", operand="w"),
    ),
)

# RMSNorm without its gamma: not the shipped op sequence, so no TTNN op
NO_GAMMA = TileProgram(
    name="no_gamma",
    description="x * rsqrt(mean(x^2) + eps)",
    dims=(Dim("H", "parallel"), Dim("W", "reduction")),
    tensors=(
        Tensor("x", ("H", "W"), "input"),
        Tensor("eps", (), "input"),
        Tensor("q", ("H", "W"), "intermediate"),
        Tensor("r", ("H",), "intermediate"),
        Tensor("y", ("H", "W"), "output"),
    ),
    ops=(
        Eltwise("mul", "q", unit="fpu", operand="x", source="x"),
        Reduce("mean", "r", operand="q"),
        Eltwise("add", "r", unit="fpu", operand="eps"),
        Eltwise("rsqrt", "r"),
        Eltwise("mul", "y", unit="fpu", operand="r", source="x"),
    ),
)


def _problem(
    program: TileProgram | str,
    shape: str,
    placement: str = "",
    tensors: tuple[str, ...] = ("x", "y"),
    activation: str | None = None,
) -> Problem:
    program = load_program(program) if isinstance(program, str) else program
    placements = {t: Placement(placement) for t in tensors} if placement else {}
    return make_problem(program, shape, placements=placements, activation=activation)


def _solved(problem: Problem, candidate_prefix: str, pins: dict[str, int] | None = None):
    session = Session(HW, problem)
    results = [
        r
        for r in session.solve(pins or {}, SolveOptions())
        if r.solution is not None and r.candidate_name.startswith(candidate_prefix)
    ]
    assert results, [r.candidate_name for r in session.solve(pins or {}, SolveOptions())]
    return session, results[0]


def test_a_width_sharded_rmsnorm_is_the_1d_sharded_layernorm_config_with_the_schedules_split() -> None:
    # pinned to 8 tiles a core on an 8 x 2 grid: equally fast grids of 16 cores would make the shard's core
    # ranges a solver's choice (the even split itself is the solve's: tests/model/test_ttnn_sharding.py)
    problem = _problem("rmsnorm", "H=32,W=4096", "l1_width")
    session, r = _solved(problem, "W@xy|x=local,gamma=dram", {"per_core_W": 8, "grid_x": 8, "grid_y": 2})
    v = r.solution.values()
    name, args, notes = ttnn_equivalent(session.schedule(r.candidate_name), v)
    cores = 128 // v["per_core_W"]
    assert name == "LayerNormShardedMultiCoreProgramConfig"
    assert args == {
        "compute_with_storage_grid_size": [v["grid_x"], v["grid_y"]],
        "block_h": 1,
        "block_w": v["per_core_W"],
        "subblock_w": min(8, v["per_core_W"]),
        "inplace": False,
    }
    memory = ttnn_memory(session.schedule(r.candidate_name), v)
    assert (
        memory["x"]
        == memory["y"]
        == {
            "memory_layout": "WIDTH_SHARDED",
            "buffer_type": "L1",
            "shard_shape": [32, 32 * v["per_core_W"]],
            "core_ranges": [[[0, 0], [v["grid_x"] - 1, cores // v["grid_x"] - 1]]],
            "shard_orientation": "ROW_MAJOR",
        }
    )
    assert memory["gamma"] == "DRAM" and "eps" not in memory
    assert any("epsilon" in n for n in notes)


def test_a_block_sharded_layernorm_takes_the_grid_and_shard_sides() -> None:
    session, r = _solved(_problem("layernorm", "H=256,W=1024", "l1_block"), "H@y,W@x|x=local,gamma=dram,beta=dram")
    v = r.solution.values()
    _, args, _ = ttnn_equivalent(session.schedule(r.candidate_name), v)
    assert (args["block_h"], args["block_w"]) == (v["per_core_H"], v["per_core_W"])
    assert v["per_core_H"] * v["grid_y"] == 8 and v["per_core_W"] * v["grid_x"] == 32
    assert args["block_w"] % args["subblock_w"] == 0 and args["subblock_w"] <= 8  # type: ignore[operator]


def test_a_height_sharded_softmax_fills_its_grid_in_place() -> None:
    session, r = _solved(_problem("softmax", "H=2048,W=1024", "l1_height"), "H@xy|x=local")
    v = r.solution.values()
    name, args, _ = ttnn_equivalent(session.schedule(r.candidate_name), v)
    assert name == "SoftmaxShardedMultiCoreProgramConfig" and "inplace" not in args
    assert args["block_w"] == 32 and args["block_h"] * v["grid_x"] * v["grid_y"] == 64
    source = ttnn_source(*_rebuilt(session, r))
    assert "ttnn.softmax_in_place(" in source and '(1, 1, SHAPE["H"], SHAPE["W"])' in source
    # ttnn's softmax_in_place defaults to numeric_stable=False; the model costs the stable kernel here
    assert "numeric_stable=True" in source


def test_the_unstable_softmax_exports_numeric_stable_false() -> None:
    """The option ``unstable`` (no max pass, ``work.skips_max``) is ttnn's ``numeric_stable=False``."""
    problem = dataclasses.replace(_problem("softmax", "H=2048,W=1024", "l1_height"), options=frozenset({"unstable"}))
    session, r = _solved(problem, "H@xy|x=local")
    source = ttnn_source(*_rebuilt(session, r))
    assert "numeric_stable=False" in source and "numeric_stable=True" not in source


def test_a_softmax_whose_shards_leave_cores_idle_is_refused() -> None:
    session, r = _solved(
        _problem("softmax", "H=2016,W=1024", "l1_height"), "H@xy|x=local", {"grid_x": 8, "grid_y": 8, "per_core_H": 1}
    )
    with pytest.raises(ExportError, match="one shard per core of its 8x8 grid; 63 tile rows in shards of 1"):
        ttnn_equivalent(session.schedule(r.candidate_name), r.solution.values())


def _rebuilt(session, result):
    problem = session.problem
    kernel = problem.program.name if problem.program.name in ("softmax", "swiglu") else __file__  # a DSL program here
    doc = schedule_document(HW, "wormhole_n150", kernel, problem, result, SolveOptions())
    return RebuiltSchedule(HW, problem, session.schedule(result.candidate_name), result.solution), doc


def test_a_renamed_dsl_rmsnorm_is_ttnns_rms_norm_with_its_own_names() -> None:
    op = row_reduction_op(RENAMED_RMSNORM)
    assert op is not None and op.kernel == "rmsnorm" and op.function == "ttnn.rms_norm"
    assert (op.tensor("x"), op.tensor("gamma"), op.tensor("eps"), op.tensor("y")) == ("h", "w", "tiny", "o")
    session, r = _solved(
        _problem(RENAMED_RMSNORM, "T=32,E=2048", "l1_width", ("h", "o")), "E@xy|h=local,w=dram", {"per_core_E": 4}
    )
    source = ttnn_source(*_rebuilt(session, r))
    assert 'ttnn.rms_norm(tensors["h"], epsilon=EPSILON, weight=tensors["w"]' in source
    assert 'memory_config=configs["memory"]["o"]' in source


def test_programs_that_are_not_ttnns_ops_are_refused_naming_why() -> None:
    assert row_reduction_op(NO_GAMMA) is None
    session, r = _solved(_problem(NO_GAMMA, "H=32,W=2048", "l1_width"), "W@xy|x=local")
    with pytest.raises(ExportError, match="no_gamma is not TTNN's softmax, rms_norm or layer_norm"):
        ttnn_equivalent(session.schedule(r.candidate_name), r.solution.values())
    with pytest.raises(ExportError, match="broadcasts bias"):
        elementwise_call(make_problem(_bias_program(), "H=64,W=64"))


def _bias_program() -> TileProgram:
    return TileProgram(
        name="silu_bias",
        description="y = silu(x) + bias[W]",
        dims=(Dim("H", "parallel"), Dim("W", "parallel")),
        tensors=(Tensor("x", ("H", "W"), "input"), Tensor("bias", ("W",), "input"), Tensor("y", ("H", "W"), "output")),
        ops=(Eltwise("silu", "y", operand="x"), Eltwise("add", "y", unit="fpu", operand="bias")),
    )


@pytest.mark.parametrize(
    ("kernel", "activation", "function", "fused"),
    [
        ("unary", "recip", "ttnn.reciprocal", None),
        ("binary", None, "ttnn.add", None),
        ("swiglu", None, "ttnn.multiply", "silu"),
    ],
)
def test_element_wise_programs_map_to_one_ttnn_call(
    kernel: str, activation: str | None, function: str, fused: str | None
) -> None:
    call = elementwise_call(_problem(kernel, "H=64,W=64", activation=activation))
    assert call.function == function
    assert (call.sfpu if call.fpu else None) == fused


def test_sharded_swiglu_exports_the_fused_multiply_with_no_program_config() -> None:
    problem = _problem("swiglu", "H=2048,W=1024", "l1_height", ("a", "b", "y"))
    session, r = _solved(problem, "H@xy|a=local,b=local")
    v = r.solution.values()
    name, args, _ = ttnn_equivalent(session.schedule(r.candidate_name), v)
    assert (name, args) == (None, {})
    memory = ttnn_memory(session.schedule(r.candidate_name), v)
    assert {m["memory_layout"] for m in memory.values()} == {"HEIGHT_SHARDED"}  # type: ignore[index]
    assert all(m["shard_shape"] == [32 * v["per_core_H"], 1024] for m in memory.values())  # type: ignore[index]
    source = ttnn_source(*_rebuilt(session, r))
    assert "PROGRAM_CONFIG_CLASS = None" in source
    assert 'ttnn.multiply(tensors["a"], tensors["b"], input_tensor_a_activations=[ttnn.UnaryOpType.SILU]' in source
    assert 'torch.nn.functional.silu(inputs["a"].float()) * inputs["b"].float()' in source


@pytest.mark.parametrize(
    ("kernel", "shape", "placement", "tensors", "pins", "says"),
    [
        ("unary", "H=64,W=64", "", ("x", "y"), {}, "x=dram: on DRAM-interleaved tensors TTNN's element-wise ops split"),
        ("unary", "H=96,W=64", "l1_height", ("x", "y"), {"per_core_H": 2}, "H's 3 tiles do not split evenly"),
        ("rmsnorm", "H=32,W=4010", "l1_width", ("x", "y"), {}, "W=4010: TTNN's sharded rmsnorm needs whole tiles"),
        ("rmsnorm", "H=32,W=4096", "l1_width", ("x",), {}, "y=dram: ttnn.rms_norm runs this schedule only on l1_width"),
        ("layernorm", "H=256,W=1024", "l1_block", ("x", "y"), {}, r"reads its gamma \(gamma\) DRAM-interleaved"),
    ],
)
def test_what_ttnn_cannot_run_as_scheduled_is_refused(
    kernel: str,
    shape: str,
    placement: str,
    tensors: tuple[str, ...],
    pins: dict[str, int],
    says: str,
):
    session = Session(HW, _problem(kernel, shape, placement, tensors, "relu" if kernel == "unary" else None))
    results = [r for r in session.solve(pins, SolveOptions()) if r.solution is not None]
    if "gamma" in says:  # a candidate that multicasts gamma
        results = [r for r in results if "gamma=mcast" in r.candidate_name]
    assert results
    with pytest.raises(ExportError, match=says):
        ttnn_equivalent(session.schedule(results[0].candidate_name), results[0].solution.values())
