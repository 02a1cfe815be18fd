"""The element-wise family (``families/elementwise/``): which programs it takes,
its candidates, its latency by hand, CP-SAT against brute force, and where thin tensors go."""

from __future__ import annotations

import math

import pytest
from loom_helpers import assert_result_sound

from loom_explorer.brute import brute_force
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import make_problem
from loom_explorer.program import ProgramError, analyse_program, load_program, program_family
from loom_explorer.program.dsl import Dim, Eltwise, Tensor, TileProgram
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.validate import referee

HW = ("H", "W")


def program(tensors: tuple[Tensor, ...], ops: tuple[Eltwise, ...], name: str = "t") -> TileProgram:
    return TileProgram(
        name=name, description="test", dims=(Dim("H", "parallel"), Dim("W", "parallel")), tensors=tensors, ops=ops
    )


# y = x * sigmoid(x) + bias[W], written only in the DSL: the sigmoid of x times x, then a row broadcast over H
SILU_BIAS = program(
    (Tensor("x", HW, "input"), Tensor("bias", ("W",), "input"), Tensor("y", HW, "output")),
    (
        Eltwise("sigmoid", "y", source="x"),
        Eltwise("mul", "y", unit="fpu", operand="x"),
        Eltwise("add", "y", unit="fpu", operand="bias"),
    ),
    name="silu_bias",
)


def test_the_issue_s_relu_program_is_element_wise() -> None:
    relu2d = program(
        (Tensor("x", HW, "input"), Tensor("y", HW, "output")),
        (Eltwise("relu", "y", unit="sfpu", operand="x"),),
        name="relu2d",
    )
    assert program_family(relu2d).name == "elementwise"
    st = analyse_program(relu2d)
    assert st.spread_dims == HW and st.streamed == ("x",) and st.flatten
    bias = analyse_program(SILU_BIAS)
    assert bias.full == ("x",) and bias.broadcast == ("bias",)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("tensors", "ops", "says"),
    [
        ((Tensor("x", HW, "input"), Tensor("y", ("W",), "output")), (Eltwise("relu", "y", operand="x"),), "output y"),
        (
            (Tensor("a", HW, "input"), Tensor("b", HW, "input"), Tensor("y", HW, "output")),
            (Eltwise("relu", "y"),),
            "inputs a, b are named by no op",
        ),
        ((Tensor("x", HW, "input"), Tensor("y", HW, "output")), (Eltwise("relu", "x", operand="x"),), "writes input x"),
    ],
)
def test_malformed_element_wise_programs_are_refused_naming_the_fault(tensors, ops, says) -> None:
    with pytest.raises(ProgramError, match=says):  # the DSL's own refusals, or the family's (a subclass)
        analyse_program(program(tensors, ops))


def test_candidates_spread_rows_columns_both_or_all_tiles_and_broadcast_inputs_travel() -> None:
    problem = make_problem(SILU_BIAS, "H=2048,W=4096")
    names = {c.name for c in enumerate_candidates(problem)}
    for layout in ("H@y,W@x", "W@y,H@x", "H@xy", "W@xy", "H*W@xy"):
        assert any(n.startswith(layout + "|") for n in names), (layout, sorted(names))
    # bias[W] is the same for every row: multicast down the columns when H is on y
    assert "H@y,W@x|x=dram,bias=mcast_y" in names and "H@y,W@x|x=dram,bias=dram" in names
    # a one-tile dimension is not spread
    assert {c.name.split("|")[0] for c in enumerate_candidates(make_problem(SILU_BIAS, "H=32,W=4096"))} == {"W@xy"}


def test_latency_by_hand_on_one_core() -> None:
    """binary (y = a + b) on one core, 64 tiles in 2 x 4 blocks, both inputs double-buffered from DRAM: the
    reader issues a's and b's block reads, then waits once (``reader.py``), so a step's reads are both
    transfers and one read latency; the first block's reads are the fill, then 7 steps, then the last block's
    compute and write."""
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("binary"), "H=256,W=256")
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "H@y,W@x|a=dram,b=dram")
    verdict = referee(
        build_schedule(hw, problem, candidate, noc_bound=False),
        {
            "grid_x": 1,
            "grid_y": 1,
            "per_core_H": 8,
            "per_core_W": 8,
            "block_h": 2,
            "block_w": 4,
            "a_buffer_depth": 2,
            "b_buffer_depth": 2,
        },
    )
    assert verdict.legal and verdict.solution is not None
    c, d = hw.compute, hw.dram
    reads = 2 * math.ceil(8 * 2048 / d.core_read_bytes_per_cycle) + d.read_latency_cycles
    compute = 8 * (c.eltwise_tile_cycles + c.tile_pack_cycles)
    write = math.ceil(8 * 2048 / d.core_write_bytes_per_cycle)
    chip = math.ceil(8 * 2 * 2048 / d.chip_read_bytes_per_cycle)
    step = max(compute, reads, write, chip)
    terms = dict(verdict.solution.breakdown)
    assert terms["compute"] == 8 * compute and terms["fill"] == reads
    assert terms["data_movement"] == 7 * (step - compute)
    assert terms["write_back"] == write + d.write_latency_cycles
    assert verdict.solution.latency_cycles == (
        c.kernel_launch_cycles + reads + 7 * step + compute + write + d.write_latency_cycles
    )


@pytest.mark.parametrize(
    ("kernel", "shape", "kw"),
    [
        ("unary", "H=96,W=160", {"activation": "gelu"}),
        ("binary", "H=64,W=96", {}),
        (SILU_BIAS, "H=96,W=64", {}),
    ],
    ids=["unary", "binary", "silu_bias"],
)
def test_cpsat_optimum_equals_brute_force(tiny_hw, solve_cached, kernel, shape, kw) -> None:
    session, results = solve_cached(tiny_hw, kernel, shape, **kw)
    assert results
    for r in results:
        schedule = session.schedule(r.candidate_name)
        assert_result_sound(schedule, r)
        brute = brute_force(schedule, time_limit_seconds=60)
        assert brute.complete, r.candidate_name
        assert (r.solution.latency_cycles if r.solution else None) == brute.best_latency_cycles, r.candidate_name


@pytest.mark.parametrize("shape", ["H=32,W=4096", "H=4096,W=32"])
def test_a_thin_tensor_spreads_over_the_grid_and_one_core_costs_more(shape: str) -> None:
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("unary"), shape, activation="relu")
    best = Session(hw, problem).solve({}, SolveOptions(fastest=1))[0]
    assert best.solution is not None
    values = best.solution.values()
    assert values["grid_x"] * values["grid_y"] >= 8, values
    one = Session(hw, problem).solve({"grid_x": 1, "grid_y": 1}, SolveOptions(fastest=1))[0]
    assert one.solution is not None and one.solution.latency_cycles > 2 * best.solution.latency_cycles


def test_unary_needs_an_activation(capsys) -> None:
    from loom_explorer.cli import main

    assert main(["solve", "unary", "--hw", "wormhole_n150", "--shape", "H=32,W=4096"]) == 2
    assert (
        "unary applies the activation --activation names; give one of exp, gelu, recip, relu, rsqrt, sigmoid, silu"
    ) in capsys.readouterr().err
    assert main(["solve", "unary", "--hw", "wormhole_n150", "--shape", "H=32,W=4096", "--activation", "tanh"]) == 2
    assert "no SFPU cost for op 'tanh'" in capsys.readouterr().err


def test_a_one_block_core_reads_computes_and_writes_its_block_once() -> None:
    """binary, 16 tiles on one core in one block: launch + the block's reads (both, one latency) + its compute
    + its write; no step, so no data movement beyond the fill and the write-back."""
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("binary"), "H=128,W=128")
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "H*W@xy|a=dram,b=dram")
    verdict = referee(
        build_schedule(hw, problem, candidate, noc_bound=False),
        {"grid_x": 1, "grid_y": 1, "per_core_H*W": 16, "block": 16, "a_buffer_depth": 2, "b_buffer_depth": 2},
    )
    assert verdict.legal and verdict.solution is not None
    c, d = hw.compute, hw.dram
    reads = 2 * math.ceil(16 * 2048 / d.core_read_bytes_per_cycle) + d.read_latency_cycles  # 2*1470 + 384
    compute = 16 * (c.eltwise_tile_cycles + c.tile_pack_cycles)  # 16*64
    write = math.ceil(16 * 2048 / d.core_write_bytes_per_cycle) + d.write_latency_cycles  # 1490 + 401
    terms = dict(verdict.solution.breakdown)
    assert terms["data_movement"] == 0 and terms["fill"] == reads and terms["write_back"] == write
    assert verdict.solution.latency_cycles == c.kernel_launch_cycles + reads + compute + write
