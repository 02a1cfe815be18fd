"""A strided row-major slice (``kernels/slice_rows.py`` with the option ``strided``): the reader's byte-by-byte
gather (``gather.py``) checked by hand, its source waited row by row (``barriers.py``), and a profiler row of a
stepped slice read as such a slice."""

from __future__ import annotations

import math
from fractions import Fraction

from loom_explorer.accuracy.ingest import read_ops_perf
from loom_explorer.data import capture_path
from loom_explorer.families.data_movement.barriers import waits_each_page
from loom_explorer.families.data_movement.gather import element_gather_cycles
from loom_explorer.families.data_movement.pages import page_bytes_per_cycle
from loom_explorer.families.data_movement.program import analyse_data_movement
from loom_explorer.families.data_movement.ttnn_config import ShardedSplit
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.validate import referee

HW = "blackhole_p150a"


def test_an_element_costs_each_byte_a_load_latency_and_the_loops_instructions() -> None:
    """g_elem = e * (L_load + 5) + 8: a bfloat16 element 2 * (8 + 5) + 8 = 34 cycles, a float32 one 4 * 13 + 8 =
    60, at the documented L1 load latency of 8 cycles; a chip with no stated latency costs none."""
    hw = load_hardware(HW)
    assert hw.compute.riscv_l1_load_cycles == 8
    assert element_gather_cycles(hw, 2) == 34
    assert element_gather_cycles(hw, 4) == 60
    bare = hw.model_copy(update={"compute": hw.compute.model_copy(update={"riscv_l1_load_cycles": None})})
    assert element_gather_cycles(bare, 2) == 0


def test_only_the_strided_slice_waits_for_its_source_rows() -> None:
    program = load_program("slice_rows")
    for options, waits in ((frozenset({"strided"}), True), (frozenset(), False)):
        problem = make_problem(program, "H=64,W=512,Wy=256", options=options)
        st = analyse_data_movement(problem.program)
        assert waits_each_page(problem, st, "x") is waits
        assert waits_each_page(problem, st, "y") is False


def _one_core(options: frozenset[str]) -> dict[str, int]:
    hw = load_hardware(HW)
    problem = make_problem(load_program("slice_rows"), "H=2,W=512,Wy=256", options=options)
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "H@xy|x=dram")
    values = {"grid_x": 1, "grid_y": 1, "per_core_H": 2, "block_rows": 1, "x_buffer_depth": 2}
    verdict = referee(build_schedule(hw, problem, candidate, noc_bound=False), values)
    assert verdict.legal and verdict.solution is not None, verdict.violations
    return {"total": verdict.solution.latency_cycles, **dict(verdict.solution.breakdown)}


def test_a_strided_slice_by_hand_on_one_core() -> None:
    """Two rows of 512 bfloat16 elements kept every other one (256) on one core, one row a block (the iteration
    is the output's whole dimensions: 16 tiles of 32 elements, of which y holds f_Y = 1/2): x's 1,024-byte row is
    waited for (p / (L_read + p / r(p)), no latency added), then the reader gathers 16 * 32 / 2 = 256 elements
    at 34 cycles each (8,704 cycles); y's 512-byte row is written streamed at w(512) / f_Y.
    step = max(read + gather, write, chip); total = launch + read + 2 * step + write + L_write. Without the
    option the same program streams x (read + L_read) and gathers nothing."""
    hw = load_hardware(HW)
    lat_read = hw.dram.read_latency_cycles
    row_bytes, out_bytes, tiles = 1024, 512, 16
    waited = Fraction(row_bytes) / (lat_read + Fraction(row_bytes) / page_bytes_per_cycle(hw, row_bytes, "read"))
    read = math.ceil(tiles * 64 / waited.limit_denominator(1000))
    gather = 256 * 34
    write = math.ceil(tiles * 64 / (2 * page_bytes_per_cycle(hw, out_bytes, "write")).limit_denominator(1000))
    chip = math.ceil(Fraction(tiles * 64) / Fraction(hw.dram.chip_read_bytes_per_cycle).limit_denominator(1000))
    step = max(read + gather, write, chip)
    expected = hw.compute.kernel_launch_cycles + read + 2 * step + write + hw.dram.write_latency_cycles
    terms = _one_core(frozenset({"strided"}))
    assert terms["total"] == expected
    assert terms["fill"] == read
    plain = _one_core(frozenset())
    assert plain["total"] < terms["total"] - 2 * gather + 2 * lat_read


def test_a_stepped_row_major_slice_row_is_read_as_a_strided_slice() -> None:
    """GPT-OSS-20B's ``x[:, :, 0::2]`` / ``x[:, :, 1::2]`` of a [32, 2880, 5760] row-major tensor: 92,160 output
    rows of 2,880 kept elements, each read from a 5,760-element row; its unit-step slices stay page copies."""
    report = read_ops_perf(capture_path("ops_perf_results_fused_prefill_final_2026_07_22_17_56_07.csv.gz"))
    slices = [op for op in report.ops if op.op_code == "SliceDeviceOperation"]
    strided = [op for op in slices if op.kernel == "slice_rows"]
    assert {op.row for op in strided} == {5, 8, 11, 14}
    big = next(op for op in strided if op.row == 5)
    assert big.shape == {"H": 32 * 2880, "W": 5760, "Wy": 2880}
    assert all(op.options == frozenset({"strided"}) for op in strided)
    assert all(op.kernel in ("copy", "copy_rows") and not op.options for op in slices if op not in strided)


def test_a_waited_tile_copy_by_hand_on_one_core() -> None:
    """copy with the option ``waited``, 64 x 64 (4 tiles) flattened on one core, one tile a block: each tile's
    read waits for its round trip, 2048 / (L_read + 2048 / r) per byte, so a block is ceil(2048 / that)
    cycles with no latency added; the fill is that one tile (the writer takes each tile as it lands) and the
    drain one tile's write plus L_write: total = launch + read + 4 * max(read, write, chip) + write + L_write."""
    hw = load_hardware(HW)
    problem = make_problem(load_program("copy"), "H=64,W=64", options={"waited"})
    assert waits_each_page(problem, analyse_data_movement(problem.program), "x")
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "H*W@xy|x=dram")
    values = {"grid_x": 1, "grid_y": 1, "per_core_H*W": 4, "block": 1, "x_buffer_depth": 2}
    verdict = referee(build_schedule(hw, problem, candidate, noc_bound=False), values)
    assert verdict.legal and verdict.solution is not None, verdict.violations
    r_read = Fraction(hw.dram.core_read_bytes_per_cycle)
    waited = (Fraction(2048) / (hw.dram.read_latency_cycles + Fraction(2048) / r_read)).limit_denominator(1000)
    read = math.ceil(2048 / waited)
    write = math.ceil(2048 / Fraction(hw.dram.core_write_bytes_per_cycle).limit_denominator(1000))
    chip = math.ceil(Fraction(2048) / Fraction(hw.dram.chip_read_bytes_per_cycle).limit_denominator(1000))
    step = max(read, write, chip)
    expected = hw.compute.kernel_launch_cycles + read + 4 * step + write + hw.dram.write_latency_cycles
    assert verdict.solution.latency_cycles == expected


def test_nlp_heads_rows_read_as_waited_copies_of_their_input_over_their_cores() -> None:
    """North-Mini's NlpCreateHeads reads its fused [128, 5120] q/k/v input (4 tile rows on 4 cores, 160 tiles
    each); NLPConcatHeads its [32 x 128, 128] heads: both copies of INPUT_0 with the option ``waited``, their
    tiles flattened over the row's CORE COUNT."""
    report = read_ops_perf(capture_path("ops_perf_results_2026_07_29_21_38_48.csv.gz"))
    create = next(op for op in report.ops if op.op_code == "NlpCreateHeadsDeviceOperation")
    concat = next(op for op in report.ops if op.op_code == "NLPConcatHeadsDeviceOperation")
    assert (create.kernel, create.shape, create.options) == ("copy", {"H": 128, "W": 5120}, frozenset({"waited"}))
    assert (concat.kernel, concat.shape, concat.options) == ("copy", {"H": 4096, "W": 128}, frozenset({"waited"}))
    for op in (create, concat):
        assert isinstance(op.config, ShardedSplit) and op.config.cores == 4 and op.config.flat
