"""ttnn's tiled reshape (``reshape_map.py``, ``reshape.py``, ``kernels/reshape.py``) and tiled HC transpose
(``transpose_hc.py``): the reads, segments and face-line writes they make, counted by hand, and the costs they
give checked by hand."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from loom_explorer.accuracy.ingest import read_ops_perf
from loom_explorer.data import capture_path
from loom_explorer.families.data_movement.pages import page_bytes_per_cycle
from loom_explorer.families.data_movement.reshape import remaps
from loom_explorer.families.data_movement.reshape_map import rank3, reshape_gather
from loom_explorer.families.data_movement.transpose_hc import face_line_writes, scatters
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.validate import referee


def test_rank3_folds_the_leading_dimensions() -> None:
    assert rank3((2, 3, 32, 64)) == (6, 32, 64)
    assert rank3((19, 1280)) == (1, 19, 1280)


def test_the_heads_split_of_a_clip_row_reads_twenty_tiles_for_each_output_tile() -> None:
    """[19, 1280] into [19, 20, 64]: output tile (z, 0, t) holds rows y = 0..19 of head z, columns 32t..32t+31;
    element (z, y, 32t + c) is input (z, 64y + 32t + c), so row y comes from input column tile 2y + t: 20
    distinct input tiles. Each output row is two face rows of 16 elements, each one input run: 40 segments.
    19 * 2 = 38 output tiles: G = 38 * 20, S = 38 * 40."""
    gather = reshape_gather((19, 1280), (19, 20, 64))
    assert (gather.output_tiles, gather.input_reads, gather.segments) == (38, 38 * 20, 38 * 40)


def test_an_identity_reshape_reads_each_tile_once() -> None:
    """[64, 64] into itself: each output tile is its own input tile (G = 4); its 64 face rows are 64 runs, but
    the walk goes row by row, so face 1's last element of row 15 (offset 511) and face 2's first of row 16
    (offset 512) are consecutive on both sides and join: 63 segments a tile."""
    gather = reshape_gather((64, 64), (64, 64))
    assert (gather.output_tiles, gather.input_reads, gather.segments) == (4, 4, 4 * 63)


def test_a_reshape_keeps_the_volume() -> None:
    with pytest.raises(ValueError, match="keeps the volume"):
        reshape_gather((19, 1280), (19, 21, 64))


def test_only_the_reshape_program_remaps() -> None:
    assert remaps(load_program("reshape"))
    assert not remaps(load_program("copy"))


def test_a_tiled_reshape_by_hand_on_wormhole() -> None:
    """38 output tiles over 38 cores (ttnn's split of output tiles), one each, G/T = 20 and S/T = 40:
    c_tile = L_read + 20 * (L_read + 2048 / r_read + L_noc) + 40 * c_seg + 2048 / r_write + L_write, with
    c_seg = 32 / rate(32 B write) from the packet-size table; total = launch + ceil(c_tile)."""
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("reshape"), "H=608,W=64,G=760,S=1520")
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "H*W@xy|x=dram")
    values = {"grid_x": 8, "grid_y": 5, "per_core_H*W": 1, "block": 1, "x_buffer_depth": 2}
    verdict = referee(build_schedule(hw, problem, candidate, noc_bound=False), values)
    assert verdict.legal and verdict.solution is not None, verdict.violations
    dram, noc = hw.dram, hw.noc
    read = dram.read_latency_cycles + Fraction(2048) / Fraction(dram.core_read_bytes_per_cycle)
    read += noc.transaction_latency_cycles
    c_seg = Fraction(32) / page_bytes_per_cycle(hw, 32, "write")
    write = Fraction(2048) / Fraction(dram.core_write_bytes_per_cycle) + dram.write_latency_cycles
    c_tile = (dram.read_latency_cycles + 20 * read + 40 * c_seg + write).limit_denominator(1000)
    expected = hw.compute.kernel_launch_cycles + math.ceil(c_tile)
    assert verdict.solution.latency_cycles == expected
    breakdown = dict(verdict.solution.breakdown)
    assert breakdown["fill"] == breakdown["compute"] == breakdown["write_back"] == 0
    assert breakdown["data_movement"] == math.ceil(c_tile)


def test_a_tiled_reshape_row_reads_as_the_reshape_kernel() -> None:
    """The CLIP capture's tiled ReshapeDeviceOperation ([19, 1280] into [19, 20, 64], DRAM-interleaved) is the
    reshape kernel: the output's padded 19*32 rows and 64 columns, and the map's counts (above)."""
    report = read_ops_perf(capture_path("wh_clip_encoder_2.csv.gz"))
    op = next(op for op in report.ops if op.row == 12)
    assert (op.kernel, op.shape) == ("reshape", {"H": 608, "W": 64, "G": 760, "S": 1520})


def test_face_line_writes_of_an_hc_transpose_by_hand() -> None:
    """[1, 19, 20, 64] (CLIP's heads): 19 channels of 20 real rows, 2 column tiles, 2 face lines a row:
    2 * 19 * 20 * 2 = 1520; 19 channels are not whole tiles: 19 // 16 = 1, one face of padding (the second)
    for each of the 20 rows and 2 column tiles, 2 face columns each: 2 * 1 * 20 * 2 = 80."""
    assert face_line_writes(1, 19, 20, 64) == 1520 + 80
    assert face_line_writes(1, 32, 20, 64) == 2 * 32 * 20 * 2  # whole channel tiles: no padding writes
    assert scatters(load_program("transpose_hc")) and not scatters(load_program("reshape"))


def test_a_tiled_hc_transpose_by_hand_on_wormhole() -> None:
    """38 input tiles over 38 cores, one each, F/T = 1600/38 face lines a tile:
    c_tile = L_read + 2048 / r_read + (1600/38) * c_line + L_write, c_line = 32 / rate(32 B write)."""
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("transpose_hc"), "H=608,W=64,F=1600")
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "H*W@xy|x=dram")
    values = {"grid_x": 8, "grid_y": 5, "per_core_H*W": 1, "block": 1, "x_buffer_depth": 2}
    verdict = referee(build_schedule(hw, problem, candidate, noc_bound=False), values)
    assert verdict.legal and verdict.solution is not None, verdict.violations
    dram = hw.dram
    c_line = Fraction(32) / page_bytes_per_cycle(hw, 32, "write")
    c_tile = dram.read_latency_cycles + Fraction(2048) / Fraction(dram.core_read_bytes_per_cycle)
    c_tile += Fraction(1600, 38) * c_line + dram.write_latency_cycles
    expected = hw.compute.kernel_launch_cycles + math.ceil(c_tile.limit_denominator(1000))
    assert verdict.solution.latency_cycles == expected
