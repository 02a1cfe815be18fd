"""The element-wise reader (``families/elementwise/reader.py``): every input a core reads itself is issued
before one barrier (their transfers add up, one read latency), a multicast input is read then sent, and a
single-buffered input's read is exposed to compute, and a scalar's tile is filled word by word by a RISC-V;
each figure below is the module docstring's formula
worked by hand on Wormhole n150's constants."""

from __future__ import annotations

import math

from loom_explorer.families.elementwise.quantities import build_elementwise_quantities
from loom_explorer.families.elementwise.reader import scalar_fill_cycles
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.validate import referee

HW_NAME = "wormhole_n150"


def _breakdown(kernel: str, shape: str, candidate_name: str, values: dict[str, int]) -> dict[str, int]:
    hw = load_hardware(HW_NAME)
    problem = make_problem(load_program(kernel), shape)
    candidate = next(c for c in enumerate_candidates(problem) if c.name == candidate_name)
    verdict = referee(build_schedule(hw, problem, candidate, noc_bound=False), values)
    assert verdict.legal and verdict.solution is not None
    return dict(verdict.solution.breakdown)


def test_one_barrier_for_both_inputs_and_a_single_buffered_input_exposed() -> None:
    """binary on one core, 16 tiles one per step, ``a`` single-buffered: a step reads a's and b's tile with one
    latency (``2 * ceil(2048 / r) + L``); compute waits for a's part of it (``ceil(2048 / r) + L``)."""
    hw = load_hardware(HW_NAME)
    c, d = hw.compute, hw.dram
    terms = _breakdown(
        "binary",
        "H=128,W=128",
        "H*W@xy|a=dram,b=dram",
        {"grid_x": 1, "grid_y": 1, "per_core_H*W": 16, "block": 1, "a_buffer_depth": 1, "b_buffer_depth": 2},
    )
    transfer = math.ceil(2048 / d.core_read_bytes_per_cycle)  # 92 cycles on Wormhole
    reads = 2 * transfer + d.read_latency_cycles  # 568: one round trip for both tiles, not two (952)
    compute = c.eltwise_tile_cycles + c.tile_pack_cycles
    exposed = transfer + d.read_latency_cycles  # a's read, the single-buffered one
    write = math.ceil(2048 / d.core_write_bytes_per_cycle)
    chip = math.ceil(2 * 2048 / d.chip_read_bytes_per_cycle)
    step = max(compute + exposed, reads, write, chip)
    assert terms["fill"] == reads
    assert terms["compute"] == 16 * compute
    assert terms["data_movement"] == 15 * (step - compute)  # the 15 steps after the first tile's reads


def test_a_multicast_input_is_read_then_sent_after_the_own_reads() -> None:
    """binary_row on a 2x2 grid, the row vector ``b`` read by each column's first core and multicast down the
    column: a step is a's block read (its own latency) plus b's read and multicast (``read_b + mcast_b``)."""
    hw = load_hardware(HW_NAME)
    d, noc = hw.dram, hw.noc
    terms = _breakdown(
        "binary_row",
        "H=128,W=128",
        "H@y,W@x|a=dram,b=mcast_y",
        {
            "grid_x": 2,
            "grid_y": 2,
            "per_core_H": 2,
            "per_core_W": 2,
            "block_h": 1,
            "block_w": 2,
            "a_buffer_depth": 2,
            "b_buffer_depth": 2,
        },
    )
    read_a = math.ceil(2 * 2048 / d.core_read_bytes_per_cycle) + d.read_latency_cycles
    read_b = math.ceil(2 * 2048 / d.core_read_bytes_per_cycle) + d.read_latency_cycles
    mcast_b = math.ceil(2 * 2048 / noc.multicast_bytes_per_cycle) + noc.hop_latency_cycles * 1
    mcast_b += noc.multicast_handshake_cycles
    assert terms["fill"] == read_a + read_b + mcast_b


def test_a_scalar_tile_is_read_then_filled_word_by_word() -> None:
    """binary_scalar on one core: before compute, a's first tile (``ceil(2048 / r) + L``), the scalar's tile
    read once (the same) and filled by a RISC-V, 512 32-bit stores of a bfloat16 tile at Wormhole's five
    cycles a store (2,560 cycles, ``compute.riscv_l1_store_cycles``)."""
    hw = load_hardware(HW_NAME)
    d = hw.dram
    terms = _breakdown(
        "binary_scalar",
        "H=128,W=128",
        "H*W@xy|a=dram,s=dram",
        {"grid_x": 1, "grid_y": 1, "per_core_H*W": 16, "block": 1, "a_buffer_depth": 2},
    )
    read = math.ceil(2048 / d.core_read_bytes_per_cycle) + d.read_latency_cycles  # 476 cycles
    assert hw.compute.riscv_l1_store_cycles == 5
    assert terms["fill"] == read + read + 512 * 5


def test_no_store_rate_no_fill_cost() -> None:
    """A hardware file without ``riscv_l1_store_cycles`` leaves the scalar's fill uncosted."""
    hw = load_hardware(HW_NAME)
    bare = hw.model_copy(update={"compute": hw.compute.model_copy(update={"riscv_l1_store_cycles": None})})
    problem = make_problem(load_program("binary_scalar"), "H=128,W=128")
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "H*W@xy|a=dram,s=dram")
    assert scalar_fill_cycles(build_elementwise_quantities(hw, problem, candidate)) == 512 * 5
    assert scalar_fill_cycles(build_elementwise_quantities(bare, problem, candidate)) == 0


def test_reads_and_writes_share_the_chips_dram_rate() -> None:
    """binary on all 64 Wormhole cores, 4 tiles each one per step: every step all cores read two tiles and
    write one, ``ceil(64 * 3 * 2048 / R_chip)`` = 1,473 cycles at 267 B/cycle, more than a core's reads (568)
    or the reads alone (982); the first block is bounded the same way."""
    hw = load_hardware(HW_NAME)
    d = hw.dram
    terms = _breakdown(
        "binary",
        "H=512,W=512",
        "H*W@xy|a=dram,b=dram",
        {"grid_x": 8, "grid_y": 8, "per_core_H*W": 4, "block": 1, "a_buffer_depth": 2, "b_buffer_depth": 2},
    )
    traffic = math.ceil(64 * 3 * 2048 / d.chip_read_bytes_per_cycle)
    assert traffic > 2 * math.ceil(2048 / d.core_read_bytes_per_cycle) + d.read_latency_cycles
    compute = hw.compute.eltwise_tile_cycles + hw.compute.tile_pack_cycles
    assert terms["fill"] == traffic
    assert terms["data_movement"] == 3 * (traffic - compute)
