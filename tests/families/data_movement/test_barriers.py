"""Pages moved one at a time with a barrier after each (``barriers.py``): which tensors, the waited page rate
(``pages.py``), and the costs they give checked by hand; an L1-interleaved output's drain latency."""

from __future__ import annotations

import math
from fractions import Fraction

from loom_explorer.families.data_movement.barriers import waits_each_page
from loom_explorer.families.data_movement.pages import page_bytes_per_cycle, waited_page_bytes_per_cycle
from loom_explorer.families.data_movement.program import analyse_data_movement
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.l1_banks import page_latency_cycles
from loom_explorer.problem import Placement, Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.validate import referee

HW = "blackhole_p150a"


def _waits(kernel: str, shape: str) -> dict[str, bool]:
    problem = make_problem(load_program(kernel), shape)
    st = analyse_data_movement(problem.program)
    return {t: waits_each_page(problem, st, t) for t in (*st.streamed, st.output)}


def test_only_the_padded_tilize_source_and_the_cut_untilize_output_wait() -> None:
    """ttnn.tilize_with_val_padding's reader and ttnn.untilize_with_unpadding's writer wait for every stick;
    the plain tilize, untilize and row-major copy stream a block's pages."""
    assert _waits("tilize", "H=64,Hx=40,W=64,Wx=64") == {"x": True, "y": False}
    assert _waits("tilize", "H=64,W=64,Wx=3") == {"x": True, "y": False}
    assert _waits("tilize", "H=64,W=64") == {"x": False, "y": False}
    assert _waits("untilize", "H=64,Hy=40,W=64") == {"x": False, "y": True}
    assert _waits("untilize", "H=64,W=64") == {"x": False, "y": False}
    assert _waits("copy_rows", "H=64,W=6") == {"x": False, "y": False}


def test_a_waited_page_costs_its_latency_plus_its_streamed_time() -> None:
    """p / (L + p / r(p)): 6-byte sticks at L = 479 move at 6 / (479 + 6 / r(6)) bytes per cycle, slower than
    streamed; the larger the page, the smaller the latency's share."""
    hw = load_hardware(HW)
    lat = hw.dram.read_latency_cycles
    for p in (6, 512, 4096):
        r = page_bytes_per_cycle(hw, p, "read")
        assert waited_page_bytes_per_cycle(hw, p, "read", lat) == Fraction(p) / (lat + Fraction(p) / r)
        assert waited_page_bytes_per_cycle(hw, p, "read", lat) < r
    small, large = (waited_page_bytes_per_cycle(hw, p, "read", lat) for p in (6, 4096))
    assert large > 100 * small


def _one_core(problem: Problem, values: dict[str, int]) -> dict[str, int]:
    hw = load_hardware(HW)
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "H@xy|x=dram")
    verdict = referee(build_schedule(hw, problem, candidate, noc_bound=False), values)
    assert verdict.legal and verdict.solution is not None, verdict.violations
    return {"total": verdict.solution.latency_cycles, **dict(verdict.solution.breakdown)}


def test_an_unpadding_untilize_by_hand_on_one_core() -> None:
    """untilize of 64 x 64 tiles cut to 40 x 50 on one core, one tile row (2 tiles) a block, x double-buffered:
    y's pages are 100 bytes and hold 40*50 of the 64*64 elements (f = 2000/4096); its writer waits for every
    page, so y moves at p / (L_write + p / w(p)) and the drain adds no latency after the last page;
    read = ceil(4096 / r_tile) + L_read; step = max(compute, read, write, chip)."""
    hw = load_hardware(HW)
    values = {"grid_x": 1, "grid_y": 1, "per_core_H": 2, "block_rows": 1, "x_buffer_depth": 2}
    block = 2 * 2048
    f = Fraction(40 * 50, 64 * 64)
    waited = Fraction(100) / (hw.dram.write_latency_cycles + Fraction(100) / page_bytes_per_cycle(hw, 100, "write"))
    write = math.ceil(block / (waited / f).limit_denominator(1000))
    read = math.ceil(block / Fraction(hw.dram.core_read_bytes_per_cycle).limit_denominator(1000))
    read += hw.dram.read_latency_cycles
    compute = 2 * (hw.compute.eltwise_tile_cycles + hw.compute.tile_pack_cycles)
    chip = math.ceil(Fraction(block) / Fraction(hw.dram.chip_read_bytes_per_cycle).limit_denominator(1000))
    step = max(compute, read, write, chip)
    expected = hw.compute.kernel_launch_cycles + read + 2 * step + write
    terms = _one_core(make_problem(load_program("untilize"), "H=64,Hy=40,W=64,Wy=50"), values)
    assert terms["total"] == expected
    assert terms["write_back"] == write
    # 20 pages a block, each at least one write latency
    assert write >= 20 * hw.dram.write_latency_cycles


def test_an_l1_interleaved_output_drains_with_the_l1_banks_latency() -> None:
    """A tiled copy into an L1-interleaved output: its last block is written at the NoC's unicast rate and
    waited for with the L1 banks' page latency (``model/l1_banks.py``), not DRAM's write latency."""
    hw = load_hardware(HW)
    values = {"grid_x": 1, "grid_y": 1, "per_core_H": 2, "block_rows": 1, "x_buffer_depth": 2}
    shape = "H=64,W=64"
    dram = _one_core(make_problem(load_program("copy"), shape), values)
    banks = _one_core(make_problem(load_program("copy"), shape, placements={"y": Placement.l1_interleaved}), values)
    block = 2 * 2048
    assert dram["write_back"] == math.ceil(
        block / Fraction(hw.dram.core_write_bytes_per_cycle).limit_denominator(1000)
    ) + (hw.dram.write_latency_cycles)
    assert banks["write_back"] == math.ceil(
        block / Fraction(hw.noc.unicast_bytes_per_cycle).limit_denominator(1000)
    ) + page_latency_cycles(hw)
