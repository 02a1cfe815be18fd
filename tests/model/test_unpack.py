"""The unpacker bound of a tile-matmul block (``model/latency.py: matmul_cycles``).

Per inner tile each ``sub_h x sub_w`` sub-block unpacks ``sub_h + sub_w`` tiles while the matrix unit does
``sub_h*sub_w`` tile matmuls, so a 1x8 sub-block of bf16 on Wormhole (9 tiles x 2048 B / 64 B per cycle =
288 cycles against 8 x 32 at HiFi2) is unpack-bound and a 2x4 one (6 tiles, 192 cycles) is not.
"""

from __future__ import annotations

import pydantic
import pytest

from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import DataFormat, Fidelity, HardwareSpec
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.validate import referee

# the n150 2048^3 hand-tuned config of loom_explorer/data/published/gemm_manual_configs.csv, on the 2-D
# multicast layout
TTNN_2048 = {
    "grid_x": 8,
    "grid_y": 8,
    "per_core_M": 8,
    "per_core_N": 8,
    "per_core_K": 64,
    "in0_block_w": 8,
    "out_block_h": 8,
    "out_block_w": 8,
    "in0_buffer_depth": 2,
    "in1_buffer_depth": 2,
}


def with_unpack(hw: HardwareSpec, rate: float | None) -> HardwareSpec:
    return hw.model_copy(update={"compute": hw.compute.model_copy(update={"unpack_bytes_per_cycle": rate})})


def compute_cycles(hw: HardwareSpec, sub_h: int, sub_w: int, dtype: str = "bfloat16", fidelity: str = "hifi2") -> int:
    problem = make_problem(load_program("gemm"), "M=2048,K=2048,N=2048", DataFormat(dtype), Fidelity(fidelity))
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "M@y,N@x|in0=mcast_x,in1=mcast_y")
    verdict = referee(
        build_schedule(hw, problem, candidate), {**TTNN_2048, "out_subblock_h": sub_h, "out_subblock_w": sub_w}
    )
    assert verdict.legal, verdict.violations
    assert verdict.solution is not None
    return dict(verdict.solution.breakdown)["compute"]


def test_wormhole_ships_the_documented_unpacker_rate() -> None:
    assert load_hardware("wormhole_n150").compute.unpack_bytes_per_cycle == 64
    assert load_hardware("blackhole_p150a").compute.unpack_bytes_per_cycle is None


def test_one_by_eight_bf16_at_hifi2_is_unpack_bound_by_hand() -> None:
    hw = load_hardware("wormhole_n150")
    c = hw.compute
    steps = 64 // 8  # K steps of in0_block_w = 8 over per_core_K = 64, one output block
    # per inner tile: max(8*8 tile matmuls at 32 cycles, (1 column of sub-blocks x 8 rows x 2048 B
    # + 8 rows of sub-blocks x 8 columns x 2048 B) / 64 B per cycle) = max(2048, 2304)
    per_step = 8 * max(64 * 32, (8 * 2048 + 64 * 2048) // 64) + 64 * c.tile_pack_cycles + 8 * c.subblock_overhead_cycles
    assert compute_cycles(hw, 1, 8) == steps * per_step
    # a 2x4 sub-block unpacks (2*8 + 4*8) tiles per inner tile: 1536 cycles, under the math's 2048
    assert compute_cycles(hw, 2, 4) == steps * (8 * 64 * 32 + 64 * c.tile_pack_cycles + 8 * c.subblock_overhead_cycles)


def test_the_bound_separates_sub_block_shapes_only_where_the_unpacker_is_slow() -> None:
    wormhole = load_hardware("wormhole_n150")
    assert compute_cycles(wormhole, 1, 8) > compute_cycles(wormhole, 2, 4)
    # HiFi4 doubles the math (4096 per inner tile): the same unpacking hides behind it
    assert compute_cycles(wormhole, 1, 8, fidelity="hifi4") == compute_cycles(wormhole, 2, 4, fidelity="hifi4")
    # bfp8 tiles are 1088 B: 1224 cycles per inner tile, under the 2048 of HiFi2 math
    assert compute_cycles(wormhole, 1, 8, dtype="bfloat8_b") == compute_cycles(wormhole, 2, 4, dtype="bfloat8_b")
    # and over the 1024 of LoFi math
    assert compute_cycles(wormhole, 1, 8, dtype="bfloat8_b", fidelity="lofi") > compute_cycles(
        wormhole, 2, 4, dtype="bfloat8_b", fidelity="lofi"
    )
    blackhole = load_hardware("blackhole_p150a")  # no unpacker figure: never the bottleneck
    assert compute_cycles(blackhole, 1, 8) == compute_cycles(blackhole, 2, 4)


def test_an_absent_rate_is_the_same_as_one_that_never_binds() -> None:
    hw = load_hardware("wormhole_n150")
    for sub in ((1, 8), (2, 4), (8, 1)):
        assert compute_cycles(with_unpack(hw, None), *sub) == compute_cycles(with_unpack(hw, 1e9), *sub)


def test_a_non_positive_rate_is_refused_naming_the_field() -> None:
    data = load_hardware("wormhole_n150").model_dump()
    data["compute"]["unpack_bytes_per_cycle"] = 0
    with pytest.raises(pydantic.ValidationError, match="unpack_bytes_per_cycle"):
        HardwareSpec.model_validate(data)
