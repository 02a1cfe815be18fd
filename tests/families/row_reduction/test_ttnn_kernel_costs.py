"""What TTNN's norm and softmax kernels cost beyond the streaming model: their multiplies and sum reductions
once per fidelity phase (``work.py``), and the softmax's mask tile and copy pass for a row that is not whole
tiles (``ttnn_softmax.py``)."""

from __future__ import annotations

import math

import pytest

from loom_explorer.families.row_reduction.accuracy import read_row_reduction
from loom_explorer.families.row_reduction.program import analyse_row_reduction
from loom_explorer.families.row_reduction.ttnn_softmax import mask_fill_cycles, mask_stores, padded_columns
from loom_explorer.families.row_reduction.work import fidelity_phases, passes
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import Fidelity
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.validate import referee


def _pass_cycles(hw_name: str, kernel: str, fidelity: Fidelity, target: KernelTarget) -> list[int]:
    hw = load_hardware(hw_name)
    problem = make_problem(load_program(kernel), "H=64,W=256", fidelity=fidelity, target=target)
    return [cycles for _, cycles in passes(hw, problem, analyse_row_reduction(problem.program))]


@pytest.mark.parametrize(("fidelity", "phases"), [("lofi", 1), ("hifi2", 2), ("hifi3", 3), ("hifi4", 4)])
def test_the_fidelity_phases_are_the_chip_s_matmul_ratio(fidelity: str, phases: int) -> None:
    """``matmul_tile_cycles`` is 16, 32, 48, 64 from LoFi to HiFi4 on both chips: 1 to 4 phases."""
    for name in ("wormhole_n150", "blackhole_p150a"):
        hw = load_hardware(name)
        problem = make_problem(load_program("rmsnorm"), "H=64,W=256", fidelity=Fidelity(fidelity))
        assert fidelity_phases(hw, problem) == phases


@pytest.mark.parametrize(
    ("kernel", "multiplies"),
    [
        ("rmsnorm", 4),  # x * x, mean(q), y = x * r, y * gamma
        ("layernorm", 5),  # mean(x), c * c, mean(q), c * r, y * gamma (x - mu, + eps, + beta run once)
        ("softmax", 2),  # sum(e), e * s (max(x) is GMPOOL, x - m an ELWSUB: no phases)
    ],
)
def test_ttnn_s_multiplies_and_sums_run_once_per_fidelity_phase(kernel: str, multiplies: int) -> None:
    """On Blackhole (no unpack bound in its chip file, so no op's cost is hidden behind its unpack), HiFi4 adds
    three FPU passes (``3 * c_fpu``, 96 cycles) to each multiply and each sum or mean reduction of TTNN's
    kernels and nothing to the adds, subtractions and the max; the TT-Lang target keeps one pass."""
    c_fpu = load_hardware("blackhole_p150a").compute.eltwise_tile_cycles
    lofi = _pass_cycles("blackhole_p150a", kernel, Fidelity.lofi, KernelTarget.ttnn)
    hifi4 = _pass_cycles("blackhole_p150a", kernel, Fidelity.hifi4, KernelTarget.ttnn)
    assert len(lofi) == len(hifi4)
    grown = [b - a for a, b in zip(lofi, hifi4, strict=True) if b != a]
    assert grown == [3 * c_fpu] * multiplies
    ttlang = [_pass_cycles("blackhole_p150a", kernel, f, KernelTarget.ttlang) for f in (Fidelity.lofi, Fidelity.hifi4)]
    assert ttlang[0] == ttlang[1]


def _softmax(hw_name: str, width: int, target: KernelTarget = KernelTarget.ttnn) -> tuple[dict[str, int], int]:
    """softmax of 128 rows by ``width`` columns (one tile) on one core, a tile row a block: its terms and its
    mask's cycles."""
    hw = load_hardware(hw_name)
    problem = make_problem(load_program("softmax"), f"H=128,W={width}", target=target)
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "H@xy|x=dram")
    verdict = referee(
        build_schedule(hw, problem, candidate, noc_bound=False),
        {"grid_x": 1, "grid_y": 1, "per_core_H": 4, "block_h": 1, "x_buffer_depth": 2},
    )
    assert verdict.solution is not None
    return dict(verdict.solution.breakdown), mask_fill_cycles(hw, problem, analyse_row_reduction(problem.program))


def test_the_writer_s_mask_tile_is_a_store_per_datum_and_per_padded_datum() -> None:
    """CLIP's 19-column attention scores: 13 padded columns, so ``1024 + 32 * 13 = 1440`` stores, at one in
    five cycles on Wormhole (7200 cycles) and one a cycle on Blackhole (1440); a row of whole tiles has no
    mask, nor has the TT-Lang target."""
    problem = make_problem(load_program("softmax"), "H=640,W=19")
    st = analyse_row_reduction(problem.program)
    assert padded_columns(problem, st) == 13 and mask_stores(13) == 1440
    assert mask_fill_cycles(load_hardware("wormhole_n150"), problem, st) == 7200
    assert mask_fill_cycles(load_hardware("blackhole_p150a"), problem, st) == 1440
    whole = make_problem(load_program("softmax"), "H=640,W=64")
    assert padded_columns(whole, st) == 0 and mask_fill_cycles(load_hardware("wormhole_n150"), whole, st) == 0
    ttlang = make_problem(load_program("softmax"), "H=640,W=19", target=KernelTarget.ttlang)
    assert padded_columns(ttlang, st) == 0


def test_a_padded_softmax_waits_for_its_mask_and_copies_its_row_once_more() -> None:
    """Four tile rows on one Wormhole core, one a block: the first tile's read (``fill`` of the whole row, 32
    columns) is shorter than the writer's 7200-cycle mask for 19 columns, so ``fill`` becomes the mask;
    compute gains the copy pass over each row's one tile: ``max(c_fpu, ceil(2048 / U))`` + a pack + one acquire
    (``blk = 1``), four times."""
    c = load_hardware("wormhole_n150").compute
    assert c.unpack_bytes_per_cycle is not None
    whole, no_mask = _softmax("wormhole_n150", 32)
    padded, mask = _softmax("wormhole_n150", 19)
    assert no_mask == 0 and mask == 7200 and whole["fill"] < mask
    assert padded["fill"] == mask
    copy = max(c.eltwise_tile_cycles, math.ceil(2048 / c.unpack_bytes_per_cycle)) + c.tile_pack_cycles
    assert padded["compute"] - whole["compute"] == 4 * (copy + c.subblock_overhead_cycles)
    ttlang, _ = _softmax("wormhole_n150", 19, KernelTarget.ttlang)
    assert ttlang["fill"] == whole["fill"]


def test_the_unstable_softmax_skips_the_max_pass() -> None:
    """``numeric_stable=False`` (option ``unstable``): TTNN reduces no max, and copies each tile to the
    registers where it subtracted the max. On Wormhole the max's tile costs its unpack, ``(2048 + 2048) / 64 =
    64`` cycles (x's bf16 tile and the bf16 scaler, more than ``c_fpu = 32``), and its row's acquire ``o =
    64``: those two entries go, the rest is unchanged; a norm has no such option."""
    hw = load_hardware("wormhole_n150")
    program = load_program("softmax")
    st = analyse_row_reduction(program)
    stable = passes(hw, make_problem(program, "H=64,W=256"), st)
    unstable = passes(hw, make_problem(program, "H=64,W=256", options={"unstable"}), st)
    assert stable[:2] == [("x", 64), ("m", hw.compute.subblock_overhead_cycles)] and stable[2:] == unstable
    ttlang = make_problem(program, "H=64,W=256", options={"unstable"}, target=KernelTarget.ttlang)
    assert passes(hw, ttlang, st) == passes(hw, make_problem(program, "H=64,W=256", target=KernelTarget.ttlang), st)
    assert "unstable" not in load_program("layernorm").options


def test_a_softmax_row_s_numeric_stable_false_reads_as_the_unstable_option() -> None:
    config = {"program_config": "SoftmaxDefaultProgramConfig()"}
    unstable = read_row_reduction("softmax", config | {"numeric_stable": "false"}, [(1, 1, 64, 256)])
    stable = read_row_reduction("softmax", config | {"numeric_stable": "true"}, [(1, 1, 64, 256)])
    assert (unstable.options, stable.options) == (frozenset({"unstable"}), frozenset())
