"""The data-movement family: its programs, its model (page sizes, re-layout cycles) checked against the
formulas by hand and against brute force, and ttnn's default split of each shipped kernel."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from loom_helpers import assert_result_sound

from loom_explorer.brute import brute_force
from loom_explorer.families.data_movement.pages import page_bytes_per_cycle
from loom_explorer.families.data_movement.ttnn import features, interleaved_default
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import ProblemError, make_problem
from loom_explorer.program import (
    Dim,
    Eltwise,
    Move,
    ProgramStructureError,
    Tensor,
    TileProgram,
    analyse_program,
    load_program,
    program_family,
)
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.validate import referee

HW = "wormhole_n150"


def test_moves_are_the_familys_and_element_wise_programs_are_not() -> None:
    assert program_family(load_program("tilize")).name == "data_movement"
    assert program_family(load_program("binary")).name == "elementwise"
    two_outputs = TileProgram(
        name="split",
        description="",
        dims=(Dim("H", "parallel"), Dim("W", "parallel")),
        tensors=(
            Tensor("x", ("H", "W"), "input"),
            Tensor("a", ("H", "W"), "output"),
            Tensor("b", ("H", "W"), "output"),
        ),
        ops=(Move("x", "a"), Move("x", "b")),
    )
    with pytest.raises(ProgramStructureError, match="writes one output, found a, b"):
        analyse_program(two_outputs)
    mixed = TileProgram(
        name="mixed",
        description="",
        dims=(Dim("H", "parallel"), Dim("W", "parallel")),
        tensors=(Tensor("x", ("H", "W"), "input"), Tensor("y", ("H", "W"), "output")),
        ops=(Move("x", "y"), Eltwise("relu", "y")),
    )
    assert program_family(mixed).name == "contraction"  # the fallback: neither family claims a mixed program


def test_page_rates_follow_the_published_table() -> None:
    """At a measured size the rate is size / (cycles of 256 transactions / 256); below the smallest the cost
    per page is that size's; never above the hardware file's tile rate."""
    hw = load_hardware(HW)
    assert page_bytes_per_cycle(hw, 256, "read") == Fraction(256 * 256, 5493)  # wormhole_b0 Receiver, 256 B
    assert page_bytes_per_cycle(hw, 16, "read") == Fraction(16 * 256, 5469)  # the 32 B transaction's cost
    assert page_bytes_per_cycle(hw, 1 << 20, "read") <= Fraction(hw.dram.core_read_bytes_per_cycle)
    rates = [page_bytes_per_cycle(hw, p, "write") for p in (8, 64, 512, 4096)]
    assert rates == sorted(rates)
    other = hw.model_copy(update={"arch": "grayskull"})
    with pytest.raises(ProblemError, match="published for blackhole, wormhole_b0 only"):
        page_bytes_per_cycle(other, 64, "read")


def _one_core_total(problem_text: str, kernel: str, values: dict[str, int]) -> int:
    hw = load_hardware(HW)
    problem = make_problem(load_program(kernel), problem_text)
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "H@xy|x=dram")
    verdict = referee(build_schedule(hw, problem, candidate, noc_bound=False), values)
    assert verdict.legal and verdict.solution is not None, verdict.violations
    return verdict.solution.latency_cycles


def test_a_row_major_copy_by_hand_on_one_core() -> None:
    """copy_rows H=64 rows of W=96 elements (192-byte pages) on one core, 8 rows a block, x double-buffered:

    block bytes 8 * 96 * 2 = 1,536; read = ceil(1536 / r(192)) + L_read, write = ceil(1536 / w(192));
    step = max(read, write, chip); total = launch + read + 8*step + write + L_write."""
    hw = load_hardware(HW)
    values = {"grid_x": 1, "grid_y": 1, "per_core_H": 64, "block_rows": 8, "x_buffer_depth": 2}
    block = 8 * 3 * 64  # 8 rows of 3 iteration tiles of 32 elements, 64 bytes each
    r = page_bytes_per_cycle(hw, 192, "read").limit_denominator(1000)
    w = page_bytes_per_cycle(hw, 192, "write").limit_denominator(1000)
    read = math.ceil(block / r) + hw.dram.read_latency_cycles
    write = math.ceil(block / w)
    chip = math.ceil(Fraction(block) / Fraction(hw.dram.chip_read_bytes_per_cycle).limit_denominator(1000))
    step = max(read, write, chip)
    expected = hw.compute.kernel_launch_cycles + read + 8 * step + write + hw.dram.write_latency_cycles
    assert _one_core_total("H=64,W=96", "copy_rows", values) == expected


def test_tilize_by_hand_on_one_core() -> None:
    """tilize of 64 x 64 padded from 40 x 50 on one core, one tile row (2 tiles) a block, x single-buffered:
    x's pages are 100 bytes and hold 40*50 of the 64*64 elements (f = 2000/4096); a padded tilize waits for
    every page (``barriers.py``), so x moves at p / (L_read + p / r(p)) (``pages.py``) with no further latency;
    each tile is re-laid at eltwise_tile_cycles + tile_pack_cycles; with depth 1 the read is exposed beside the
    compute."""
    hw = load_hardware(HW)
    values = {"grid_x": 1, "grid_y": 1, "per_core_H": 2, "block_rows": 1, "x_buffer_depth": 1}
    block = 2 * 2048
    f = Fraction(40 * 50, 64 * 64)
    waited = Fraction(100) / (hw.dram.read_latency_cycles + Fraction(100) / page_bytes_per_cycle(hw, 100, "read"))
    r = (waited / f).limit_denominator(1000)
    w = Fraction(hw.dram.core_write_bytes_per_cycle).limit_denominator(1000)
    read = math.ceil(block / r)
    write = math.ceil(block / w)
    compute = 2 * (hw.compute.eltwise_tile_cycles + hw.compute.tile_pack_cycles)
    chip = math.ceil(Fraction(block) / Fraction(hw.dram.chip_read_bytes_per_cycle).limit_denominator(1000))
    step = max(compute + read, read, write, chip)
    expected = hw.compute.kernel_launch_cycles + read + 2 * step + write + hw.dram.write_latency_cycles
    assert _one_core_total("H=64,Hx=40,W=64,Wx=50", "tilize", values) == expected


def _best_cycles(kernel: str, shape: str) -> int:
    best = Session(load_hardware(HW), make_problem(load_program(kernel), shape)).solve({}, SolveOptions(fastest=1))[0]
    assert best.solution is not None
    return best.solution.latency_cycles


def test_small_pages_cost_more_than_large_ones() -> None:
    """The same 96 KiB as 6-element sticks take far longer than as 1,024-element ones (a fixed cost per page)."""
    assert _best_cycles("copy_rows", "H=8192,W=6") > 2 * _best_cycles("copy_rows", "H=48,W=1024")


@pytest.mark.parametrize(
    ("kernel", "shape"), [("transpose", "H=128,W=64"), ("tilize", "H=64,Hx=50,W=96,Wx=70"), ("copy_rows", "H=40,W=64")]
)
def test_cpsat_optimum_equals_brute_force(tiny_hw, solve_cached, kernel: str, shape: str) -> None:
    session, results = solve_cached(tiny_hw, kernel, shape)
    assert results
    for r in results:
        schedule = session.schedule(r.candidate_name)
        assert_result_sound(schedule, r)
        brute = brute_force(schedule, time_limit_seconds=60)
        assert brute.complete, r.candidate_name
        assert (r.solution.latency_cycles if r.solution else None) == brute.best_latency_cycles, r.candidate_name


@pytest.mark.parametrize(
    ("kernel", "shape", "unit", "group", "block", "depth", "op"),
    [
        ("tilize", "H=256,Hx=250,W=64,Wx=60", "tile row", "H", "block_rows", 1, "ttnn.tilize_with_val_padding"),
        ("tilize", "H=256,W=64", "tile row", "H", "block_rows", 1, "ttnn.tilize"),
        ("untilize", "H=256,Hy=200,W=64", "tile row", "H", "block_rows", 2, "ttnn.untilize_with_unpadding"),
        ("transpose", "H=256,W=64", "tile", "W*H", "block", 2, "ttnn.transpose"),
        ("copy", "H=256,W=64", "tile", "H*W", "block", 2, "ttnn.clone"),
        ("copy_rows", "H=256,W=64", "tile row", "H", "block_rows", 2, "ttnn.clone"),
    ],
)
def test_ttnns_default_split_of_each_kernel(
    kernel: str, shape: str, unit: str, group: str, block: str, depth: int, op: str
) -> None:
    split = interleaved_default(make_problem(load_program(kernel), shape))
    assert (split.unit, split.group, split.block, split.buffer_depth, split.op) == (unit, group, block, depth, op)


def test_a_typecast_costs_the_compute_core_and_is_its_own_ttnn_op() -> None:
    from loom_explorer.hardware.schema import DataFormat

    plain = make_problem(load_program("copy"), "H=256,W=256")
    cast = make_problem(load_program("copy"), "H=256,W=256", formats={"y": DataFormat.bfloat8_b})
    assert features(plain) == () and features(cast) == ("typecast",)
    hw = load_hardware(HW)
    best = {p: Session(hw, p).solve({}, SolveOptions(fastest=1))[0] for p in (plain, cast)}
    assert dict(best[plain].solution.breakdown)["compute"] == 0
    assert dict(best[cast].solution.breakdown)["compute"] > 0
