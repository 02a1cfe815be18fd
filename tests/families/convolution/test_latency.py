"""The latency of ttnn's sharded conv (``families/convolution/latency.py``): the activation and the weights
moved by two RISC-Vs, a single-buffered input's first block loaded by the first step, the activation's tilize
(height and block sharded) at ttnn's cycles per tile overlapping a single-buffered weights load, and a
single-buffered DRAM read counted once. Each case evaluates the conv's step and fill on a config ttnn ran and
checks them against the GEMM's own pieces (``mm``, ``dm_X``, ``stall_X``) composed as the module's formulas
say."""

from __future__ import annotations

from loom_explorer.families.contraction.latency import compute_step_cycles, read_stall_cycles
from loom_explorer.families.contraction.latency import step_cycles as gemm_step_cycles
from loom_explorer.families.contraction.quantities import ContractionQuantities
from loom_explorer.families.convolution.latency import (
    TILIZE_CYCLES,
    fill_cycles,
    latency_terms,
    step_cycles,
    tilize_cycles,
)
from loom_explorer.families.convolution.model import build
from loom_explorer.families.convolution.ttnn_config import ConvSharding, TtnnConv2dConfig, evaluate_conv_config
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import DataFormat, Fidelity, HardwareSpec
from loom_explorer.model.expr import Expr, evaluate
from loom_explorer.model.latency import chip_read_cycles, data_movement_cycles, multicast_cycles, read_cycles
from loom_explorer.problem import Problem, make_problem
from loom_explorer.program import load_program

CONV = load_program("conv2d")


def _quantities(
    hw: HardwareSpec, problem: Problem, cfg: TtnnConv2dConfig
) -> tuple[ContractionQuantities, dict[str, int]]:
    """The conv model's quantities for the candidate ``cfg`` runs, and the values ``cfg`` sets."""
    evaluated = evaluate_conv_config(hw, problem, cfg)
    model = build(hw, evaluated.schedule.problem, evaluated.schedule.candidate, noc_bound=False)
    assert isinstance(model.quantities, ContractionQuantities)
    return model.quantities, evaluated.values


def _old_oft_block(act_double: bool, weights_double: bool) -> tuple[ContractionQuantities, dict[str, int]]:
    """The older OFT capture's block-sharded 3x3 conv (256 channels in and out, 4x4 cores, one tile row of
    pixels per block, K stepped 6 tiles at a time), with the double-buffer flags given."""
    hw = load_hardware("blackhole_p150a")
    problem = make_problem(
        CONV, "M=12720,N=256,KH=3,KWC=768", DataFormat.bfloat16, Fidelity.hifi4, formats={"in1": DataFormat.bfloat8_b}
    )
    cfg = TtnnConv2dConfig(
        act_block_h_override=32,
        enable_act_double_buffer=act_double,
        enable_weights_double_buffer=weights_double,
        memory=ConvSharding(
            shard_layout="BLOCK_SHARDED",
            compute_with_storage_grid_size=(4, 4),
            num_cores_nhw=4,
            num_cores_c=4,
            per_core_out_matrix_height_ntile=100,
            per_core_out_matrix_width_ntile=2,
            act_block_w_ntiles=6,
            out_subblock_h_ntiles=1,
            out_subblock_w_ntiles=2,
        ),
    )
    return _quantities(hw, problem, cfg)


def _height(
    hw_name: str, out: DataFormat, weights_double: bool = False
) -> tuple[ContractionQuantities, dict[str, int]]:
    """A height-sharded 3x3 conv of 256 channels in and out, one activation block of 2 tile rows per core
    (so the weights are not held: their buffer holds one block unless double buffered)."""
    hw = load_hardware(hw_name)
    problem = make_problem(
        CONV, "M=1280,N=256,KH=3,KWC=768", out, Fidelity.hifi2, formats={"in1": DataFormat.bfloat8_b}
    )
    cfg = TtnnConv2dConfig(
        act_block_h_override=64,
        enable_weights_double_buffer=weights_double,
        memory=ConvSharding(
            shard_layout="HEIGHT_SHARDED",
            compute_with_storage_grid_size=(5, 4),
            num_cores_nhw=20,
            per_core_out_matrix_height_ntile=2,
            per_core_out_matrix_width_ntile=8,
            act_block_w_ntiles=24,
            out_subblock_h_ntiles=1,
            out_subblock_w_ntiles=4,
        ),
    )
    return _quantities(hw, problem, cfg)


def _value(expr: Expr, values: dict[str, int]) -> int:
    return evaluate(expr, values)


def test_two_single_buffered_inputs_load_at_once_each_by_its_own_risc_v() -> None:
    q, v = _old_oft_block(act_double=False, weights_double=False)
    mm = _value(compute_step_cycles(q), v)
    dm0, dm1 = _value(data_movement_cycles(q, "in0"), v), _value(data_movement_cycles(q, "in1"), v)
    assert dm0 > 0 and dm1 > 0  # the activation multicast along the row, the weights read and multicast
    # step = mm + max(dm_in0, dm_in1): the two movers refill their buffers together once compute pops them
    assert _value(step_cycles(q), v) == mm + max(dm0, dm1)
    # the GEMM's step serialises them: mm + dm_in0 + dm_in1 (no DRAM stall on Blackhole: no r_stall given)
    assert _value(gemm_step_cycles(q), v) == mm + dm0 + dm1
    # both single buffered and no bias: every block, the first included, is loaded by its own step
    assert _value(fill_cycles(q), v) == 0


def test_the_fill_is_the_first_block_of_the_double_buffered_inputs() -> None:
    q, v = _old_oft_block(act_double=False, weights_double=True)
    mm = _value(compute_step_cycles(q), v)
    dm0, dm1 = _value(data_movement_cycles(q, "in0"), v), _value(data_movement_cycles(q, "in1"), v)
    assert _value(fill_cycles(q), v) == dm1  # the weights' first block; the activation's is the first step's
    # only the single-buffered activation adds to the step; the weights stream behind it (s_in1 < mm + dm0)
    assert _value(step_cycles(q), v) == mm + dm0


def test_the_height_sharded_tilize_is_ttnn_s_cycles_per_tile() -> None:
    q, v = _height("blackhole_p150a", DataFormat.bfloat16)
    # 2 tile rows x 24 window tiles per K step, 72 cycles a tile on Blackhole, bfloat16 row-major to bfloat16
    assert TILIZE_CYCLES[("blackhole", "bfloat16", "bfloat16")] == (72, 72)
    assert _value(tilize_cycles(q), v) == 2 * 24 * 72
    q8, v8 = _height("blackhole_p150a", DataFormat.bfloat8_b)
    assert _value(tilize_cycles(q8), v8) == 2 * 24 * 60  # to bfloat8_b: 60 cycles a tile
    block, bv = _old_oft_block(act_double=False, weights_double=False)
    # block sharded: a core tilizes its 1 x 6 tile block once every 4 K steps (4 cores multicast in turn)
    assert _value(tilize_cycles(block), bv) == -(-1 * 6 * 72 // 4)
    # and it overlaps the single-buffered loads like the height-sharded tilize: step = mm + max(c_x, dm_in0, dm_in1)
    loads = max(_value(data_movement_cycles(block, t), bv) for t in ("in0", "in1"))
    assert _value(step_cycles(block), bv) == _value(compute_step_cycles(block), bv) + max(108, loads)


def test_the_tilize_overlaps_a_single_buffered_weights_load() -> None:
    q, v = _height("blackhole_p150a", DataFormat.bfloat16)
    mm, tilize = _value(compute_step_cycles(q), v), _value(tilize_cycles(q), v)
    dm1 = _value(data_movement_cycles(q, "in1"), v)
    assert _value(data_movement_cycles(q, "in0"), v) == 0  # the activation is local
    # the next weights block loads while the compute core tilizes the next activation block
    assert _value(step_cycles(q), v) == mm + max(tilize, dm1)
    objective, terms, lower = latency_terms(q)
    by_name = {t.name: _value(t.expr, v) for t in terms}
    steps = 3  # one output block, three filter rows
    assert by_name["compute"] == steps * (mm + tilize)
    assert by_name["data_movement"] == steps * (max(tilize, dm1) - tilize)
    assert sum(by_name.values()) == _value(objective, v) >= _value(lower, v)
    # double buffered, the weights stream behind the step: s_in1 = max(read_in1, mcast_in1) bounds it from below
    qd, vd = _height("blackhole_p150a", DataFormat.bfloat16, weights_double=True)
    streaming = max(_value(read_cycles(qd, "in1"), vd), _value(multicast_cycles(qd, "in1"), vd))
    chip = _value(chip_read_cycles(qd, qd.inputs), vd)
    busy = _value(compute_step_cycles(qd), vd) + _value(tilize_cycles(qd), vd)
    assert _value(step_cycles(qd), vd) == max(busy, streaming, chip)


def test_a_single_buffered_dram_read_is_not_stalled_twice() -> None:
    q, v = _height("wormhole_n150", DataFormat.bfloat8_b)
    mm, tilize = _value(compute_step_cycles(q), v), _value(tilize_cycles(q), v)
    dm1, stall = _value(data_movement_cycles(q, "in1"), v), _value(read_stall_cycles(q, "in1"), v)
    assert stall > 0  # Wormhole's r_stall: the GEMM delays a step by the block's DRAM read
    assert tilize == 2 * 24 * 40  # Wormhole, bfloat16 row-major to bfloat8_b: 40 cycles a tile
    # the weights' whole read is in dm_in1 already: no stall on top of it
    assert _value(step_cycles(q), v) == mm + max(tilize, dm1)
    assert _value(gemm_step_cycles(q), v) == mm + stall + dm1
