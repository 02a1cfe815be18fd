"""predict (an existing TTNN config evaluated by the model, ttnn's own default config); the accuracy of the
published matmul measurements is tests/families/contraction/test_gemm_published.py's."""

from __future__ import annotations

import json

import pytest

from loom_explorer.cli import main
from loom_explorer.data import published_path
from loom_explorer.families.contraction.ttnn_config import (
    TtnnMatmulConfig,
    candidate_name,
    evaluate_config,
    output_blocks,
    parse_config,
    ttnn_default_config,
)
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.grid import restrict_grid
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.targets.ttnn.evaluate import ConfigError
from loom_explorer.validate import referee

CALIBRATION, CONFIGS = published_path("gemm_flops_calibration.csv"), published_path("gemm_manual_configs.csv")


def _problem(shape: str):
    return make_problem(load_program("gemm"), shape)


def test_ttnn_default_follows_the_rule() -> None:
    hw = load_hardware("wormhole_n150")
    cfg = ttnn_default_config(hw, _problem("M=1024,K=1024,N=1024"))
    # Kt=32 over 8 columns -> in0_block_w 4; per_core = ceil(32/8) = 4; first sub-block of ttnn's order
    assert (cfg.in0_block_w, cfg.per_core_M, cfg.per_core_N) == (4, 4, 4)
    assert (cfg.out_subblock_h, cfg.out_subblock_w) == (4, 2)
    assert cfg.compute_with_storage_grid_size == (8, 8)


def test_ttnn_default_shrinks_the_output_block_until_l1_fits() -> None:
    """As ttnn's get_multi_dim_per_core_factor: in0_block_w stays, the output block shrinks to the largest
    near-square divisor pair that fits (4096^3 on the n150: 16x16 per core, K step 16 -> 8x8 blocks, the
    blocking of the hand-tuned config of the same shape, which measured the same time)."""
    hw = load_hardware("wormhole_n150")
    for shape, block in (("M=4096,K=4096,N=4096", (8, 8)), ("M=8192,K=8192,N=8192", (4, 4))):
        problem = _problem(shape)
        cfg = ttnn_default_config(hw, problem)
        kt = problem.tiles("K")
        assert cfg.in0_block_w == kt // 8 and (cfg.out_block_h, cfg.out_block_w) == block, shape
        assert evaluate_config(hw, problem, cfg).result.solution is not None
        assert cfg.out_block_h is not None
        bigger = cfg.model_copy(update={"out_block_h": cfg.out_block_h * 2})  # the next size up does not fit
        assert evaluate_config(hw, problem, bigger).result.solution is None


def test_output_blocks_order() -> None:
    # whole block first; then per product the pair closest to square, largest product first
    # (16, 8) and (8, 16) are equally square: the later one, (8, 16), is kept; 64 = 8x8 beats 16x4
    assert output_blocks(16, 16)[:5] == [(16, 16), (8, 16), (8, 8), (4, 8), (4, 4)]
    blocks = output_blocks(8, 501)
    assert blocks[0] == (8, 501) and (8, 3) in blocks and blocks[-1] == (1, 1)
    products = [m * n for m, n in blocks]
    assert products == sorted(products, reverse=True) and len(set(products)) == len(products)


def test_ttnn_default_of_narrow_shapes_is_the_1d_config() -> None:
    hw = load_hardware("wormhole_n150")
    wide = ttnn_default_config(hw, _problem("M=32,K=4096,N=6144"))  # decode: one tile of M
    assert wide.program_config.endswith("1DProgramConfig") and wide.mcast_in0 is True
    assert (wide.per_core_M, wide.per_core_N, wide.in0_block_w) == (1, 3, 2)  # 192 N tiles / 64 cores
    tall = ttnn_default_config(hw, _problem("M=16384,K=1024,N=256"))  # ratio 64
    assert tall.program_config.endswith("1DProgramConfig") and tall.mcast_in0 is False
    assert (tall.per_core_M, tall.per_core_N) == (8, 8)
    assert evaluate_config(hw, _problem("M=16384,K=1024,N=256"), tall).result.solution is not None


def test_ttnn_default_of_one_row_or_column_of_blocks_is_the_1d_config() -> None:
    """ttnn's trial block is 16x16 tiles per core: 512x1024 gives one row of two blocks, so ttnn takes the
    1-D config multicasting in0 (all 16 M tiles per core, one N tile on each of 32 cores, K step 2); the
    transposed shape takes the one multicasting in1; a single block (512x512) stays 2-D. The n150 measured
    512x1024x1024 at 91 us of device time against 39 us for 1024^3, which the 2-D config cannot explain."""
    hw = load_hardware("wormhole_n150")
    row = ttnn_default_config(hw, _problem("M=512,K=1024,N=1024"))
    assert row.program_config.endswith("1DProgramConfig") and row.mcast_in0 is True
    assert (row.per_core_M, row.per_core_N, row.in0_block_w, row.out_subblock_h, row.out_subblock_w) == (16, 1, 2, 8, 1)
    column = ttnn_default_config(hw, _problem("M=1024,K=1024,N=512"))
    assert column.program_config.endswith("1DProgramConfig") and column.mcast_in0 is False
    assert (column.per_core_M, column.per_core_N) == (1, 16)
    assert ttnn_default_config(hw, _problem("M=512,K=512,N=512")).mcast_in0 is None
    slow, fast = (
        evaluate_config(hw, _problem(s), ttnn_default_config(hw, _problem(s))).result.solution
        for s in ("M=512,K=1024,N=1024", "M=1024,K=1024,N=1024")
    )
    assert slow.latency_cycles > fast.latency_cycles  # half the work, yet slower, as measured


@pytest.mark.parametrize(
    "raw,expected",
    [
        ({"transpose_mcast": False}, "M@y,N@x|in0=mcast_x,in1=mcast_y"),
        ({"transpose_mcast": True}, "N@y,M@x|in0=mcast_y,in1=mcast_x"),
        (
            {"program_config": "MatmulMultiCoreReuseMultiCast1DProgramConfig", "mcast_in0": True},
            "N@xy|in0=mcast_xy,in1=dram",
        ),
        (
            {"program_config": "MatmulMultiCoreReuseMultiCast1DProgramConfig", "mcast_in0": False},
            "M@xy|in0=dram,in1=mcast_xy",
        ),
    ],
)
def test_configs_map_to_their_candidate(raw: dict[str, object], expected: str) -> None:
    base = {
        "program_config": "MatmulMultiCoreReuseMultiCastProgramConfig",
        "compute_with_storage_grid_size": [8, 8],
        "in0_block_w": 2,
        "per_core_M": 4,
        "per_core_N": 4,
        "out_subblock_h": 2,
        "out_subblock_w": 2,
    }
    assert candidate_name(parse_config({**base, **raw})) == expected


def test_a_config_is_evaluated_by_the_referee() -> None:
    hw = load_hardware("wormhole_n150")
    problem = _problem("M=1024,K=2048,N=512")
    cfg = TtnnMatmulConfig(
        program_config="MatmulMultiCoreReuseMultiCastProgramConfig",
        compute_with_storage_grid_size=(8, 8),
        in0_block_w=8,
        per_core_M=4,
        per_core_N=2,
        out_block_h=4,
        out_block_w=2,
        out_subblock_h=2,
        out_subblock_w=2,
    )
    ev = evaluate_config(hw, problem, cfg)
    assert ev.values["grid_x"] == 8 and ev.values["grid_y"] == 8 and ev.values["in0_buffer_depth"] == 2
    verdict = referee(ev.schedule, ev.values)
    assert ev.result.status == "feasible"
    assert verdict.solution is not None and ev.result.solution == verdict.solution


def test_an_illegal_config_is_explained() -> None:
    hw = load_hardware("wormhole_n150")
    problem = _problem("M=4096,K=4096,N=4096")
    cfg = TtnnMatmulConfig(
        program_config="MatmulMultiCoreReuseMultiCastProgramConfig",
        compute_with_storage_grid_size=(8, 8),
        in0_block_w=128,
        per_core_M=16,
        per_core_N=16,
        out_subblock_h=4,
        out_subblock_w=2,
    )
    ev = evaluate_config(hw, problem, cfg)
    assert ev.result.status == "conflict" and "l1_capacity" in ev.result.conflict.message


def test_bad_configs_name_the_field() -> None:
    with pytest.raises(ConfigError, match="in0_block_w"):
        parse_config(
            {
                "program_config": "MatmulMultiCoreReuseMultiCastProgramConfig",
                "compute_with_storage_grid_size": [8, 8],
                "per_core_M": 1,
                "per_core_N": 1,
                "out_subblock_h": 1,
                "out_subblock_w": 1,
            }
        )
    with pytest.raises(ConfigError, match="program_config"):
        parse_config(
            {
                "program_config": "MatmulMultiCoreReuseProgramConfig",
                "compute_with_storage_grid_size": [8, 8],
                "in0_block_w": 1,
                "per_core_M": 1,
                "per_core_N": 1,
                "out_subblock_h": 1,
                "out_subblock_w": 1,
            }
        )


def test_restricted_grid() -> None:
    hw = restrict_grid(load_hardware("blackhole_p150a"), 11, 10)
    assert (hw.grid.columns, hw.grid.rows) == (11, 10) and hw.name.endswith("@11x10")
    with pytest.raises(ValueError, match="does not fit"):
        restrict_grid(hw, 14, 10)


def test_predict_cli(tmp_path, capsys) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(
        json.dumps(
            {
                "program_config": "MatmulMultiCoreReuseMultiCastProgramConfig",
                "compute_with_storage_grid_size": [8, 8],
                "in0_block_w": 4,
                "per_core_M": 4,
                "per_core_N": 4,
                "out_block_h": 4,
                "out_block_w": 4,
                "out_subblock_h": 2,
                "out_subblock_w": 4,
                "transpose_mcast": False,
                "fuse_batch": True,
                "memory": {"in0": "L1_BLOCK_SHARDED", "out": "L1_BLOCK_SHARDED"},
            }
        )
    )
    assert (
        main(
            [
                "predict",
                "gemm",
                "--hw",
                "wormhole_n150",
                "--shape",
                "M=1024,K=1024,N=1024",
                "--ttnn-config",
                str(cfg),
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "feasible" and out["params"]["in0_block_w"] == 4 and out["latency_cycles"] > 0
    assert (
        main(
            [
                "predict",
                "gemm",
                "--hw",
                "blackhole_p150a",
                "--shape",
                "M=1024,K=1024,N=1024",
                "--ttnn-default",
                "--grid",
                "11x10",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["ttnn_config"]["compute_with_storage_grid_size"] == [11, 10]
    assert main(["predict", "gemm", "--hw", "wormhole_n150", "--shape", "M=1024,K=1024,N=1024"]) == 2
    assert "exactly one of" in capsys.readouterr().err


def test_predict_names_the_config_it_costed_before_the_schedule(tmp_path, capsys) -> None:
    """Text and JSON say which ttnn call and program config were costed (class and arguments), and the text
    is not a solve table: nothing was solved, so no status, solve time or "best"."""
    shape = ["gemm", "--hw", "wormhole_n150", "--shape", "M=1024,K=1024,N=1024"]
    assert main(["predict", *shape, "--ttnn-default"]) == 0
    text = capsys.readouterr().out
    hw = load_hardware("wormhole_n150")
    cfg = ttnn_default_config(hw, make_problem(load_program("gemm"), "M=1024,K=1024,N=1024"))
    call = (
        f"  ttnn.{cfg.program_config}(compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), "
        f"in0_block_w={cfg.in0_block_w}, per_core_M={cfg.per_core_M}, per_core_N={cfg.per_core_N}"
    )
    lines = text.splitlines()
    assert lines[:2] == ["ttnn config costed (what ttnn picks when the call gives none):", "  ttnn.matmul"]
    assert lines[2].startswith(call) and lines[2].endswith(f"transpose_mcast={cfg.transpose_mcast}, fuse_batch=True)")
    assert lines[4].startswith("predicted for gemm M=1024,N=1024,K=1024 on wormhole_n150")
    assert "as candidate M@y,N@x|in0=mcast_x,in1=mcast_y" in text
    assert "feasible" not in text and "solve ms" not in text and "best:" not in text
    assert main(["predict", *shape, "--ttnn-default", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc)[:4] == ["ttnn_config_source", "ttnn_op", "ttnn_config_class", "ttnn_config_fields"]
    assert doc["ttnn_config_class"] == f"ttnn.{cfg.program_config}" and doc["ttnn_op"] == "ttnn.matmul"
    assert doc["ttnn_config_fields"]["per_core_N"] == cfg.per_core_N and "mcast_in0" not in doc["ttnn_config_fields"]
    given = tmp_path / "one_d.json"
    given.write_text(
        json.dumps(
            {
                "program_config": "MatmulMultiCoreReuseMultiCast1DProgramConfig",
                "compute_with_storage_grid_size": [8, 4],
                "in0_block_w": 2,
                "per_core_M": 32,
                "per_core_N": 1,
                "out_subblock_h": 1,
                "out_subblock_w": 1,
                "mcast_in0": True,
                "memory": {"out": "L1_WIDTH_SHARDED"},
            }
        )
    )
    assert main(["predict", *shape, "--ttnn-config", str(given)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"ttnn config costed (from {given}):"
    assert lines[2] == (
        "  ttnn.MatmulMultiCoreReuseMultiCast1DProgramConfig(compute_with_storage_grid_size="
        "ttnn.CoreCoord(8, 4), in0_block_w=2, per_core_M=32, per_core_N=1, out_subblock_h=1, "
        "out_subblock_w=1, mcast_in0=True, fuse_batch=True)"
    )
    assert lines[3] == "  memory: out=L1_WIDTH_SHARDED"
