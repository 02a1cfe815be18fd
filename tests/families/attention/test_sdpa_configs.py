"""``predict flash_attention --ttnn-config/--ttnn-default``: an SDPAProgramConfig mapped to the flattened
candidate and costed by the referee (``families/attention/ttnn_config.py``; a decode problem's by
``families/flash_decoding/ttnn_config.py``)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from loom_explorer import cli
from loom_explorer.families.attention.ttnn_config import (
    TtnnSdpaConfig,
    evaluate_sdpa_config,
    largest_subblock,
    parse_sdpa_config,
    sdpa_schedule,
    sdpa_split,
    sdpa_values,
)
from loom_explorer.families.flash_decoding.ttnn_config import ttnn_default_decode_config
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.targets.ttnn.evaluate import ConfigError
from loom_explorer.validate import referee

SHAPE = "B=1,H=4,Sq=1024,Skv=1024,D=64"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def problem(causal: bool = False):
    return make_problem(load_program("flash_attention"), SHAPE, options={"causal"} if causal else set())


@pytest.mark.parametrize(
    "rows,cols,dst,want",
    [
        # (2, 4) and (4, 2) are neither one row high nor the whole width of 16
        (8, 16, 8, (1, 8)),
        (4, 2, 8, (4, 2)),
        (3, 5, 8, (1, 5)),
        (2, 2, 4, (2, 2)),
        (1, 1, 8, (1, 1)),
        (8, 8, 4, (1, 4)),
        (2, 4, 8, (2, 4)),
        (8, 4, 8, (2, 4)),
        (6, 3, 8, (2, 3)),
    ],
)
def test_largest_subblock(rows: int, cols: int, dst: int, want: tuple[int, int]) -> None:
    assert largest_subblock(rows, cols, dst) == want


def test_values_of_a_plain_and_a_causal_config() -> None:
    hw = load_hardware("wormhole_n150")
    cfg = TtnnSdpaConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=128, k_chunk_size=256)
    # 4 heads x 8 query chunks of 4 tiles = 32 tasks on 64 cores: one each, 4 rows of 8 used
    v = sdpa_values(sdpa_schedule(hw, problem()), cfg)
    assert (v["grid_x"], v["grid_y"], v["per_core_H*Sq"]) == (8, 4, 1)
    assert (v["qk_subblock_h"], v["qk_subblock_w"], v["out_subblock_h"], v["out_subblock_w"]) == (1, 8, 4, 2)
    assert (v["q_buffer_depth"], v["k_buffer_depth"], v["v_buffer_depth"]) == (1, 2, 2)
    # causal: 4 heads x 4 balanced pairs = 16 tasks, two query chunks each (q double-buffered)
    sch = sdpa_schedule(hw, problem(causal=True))
    assert sch.candidate.has_tag("balanced") and sch.candidate.flattened
    v = sdpa_values(sch, cfg)
    assert (v["grid_x"], v["grid_y"], v["per_core_H*Sq"], v["q_buffer_depth"]) == (8, 2, 1, 2)


def test_predict_equals_the_referee_on_the_same_values() -> None:
    hw = load_hardware("wormhole_n150")
    cfg = TtnnSdpaConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=64, k_chunk_size=128)
    evaluated = evaluate_sdpa_config(hw, problem(), cfg)
    assert evaluated.result.solution is not None
    again = referee(sdpa_schedule(hw, problem()), evaluated.values).solution
    assert again is not None and again.latency_cycles == evaluated.result.solution.latency_cycles


def test_cli_config_and_default(tmp_path) -> None:
    path = tmp_path / "sdpa.json"
    path.write_text(
        json.dumps(
            {
                "program_config": "SDPAProgramConfig",
                "compute_with_storage_grid_size": [8, 8],
                "q_chunk_size": 64,
                "k_chunk_size": 128,
                "exp_approx_mode": False,
            }
        )
    )
    code, out, err = run(
        "predict", "flash_attention", "--hw", "wormhole_n150", "--shape", SHAPE, "--ttnn-config", str(path), "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["name"] == "H*Sq@xy|q=dram,k=dram,v=dram" and doc["status"] == "feasible"
    assert doc["params"]["q_chunk_size"] == 64 and doc["ttnn_config"]["k_chunk_size"] == 128
    code, out, err = run(
        "predict", "flash_attention", "--hw", "wormhole_n150", "--shape", SHAPE, "--causal", "--ttnn-default", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["name"].endswith("|balanced") and doc["params"]["q_chunk_size"] == 32 == doc["params"]["k_chunk_size"]


def test_bad_configs_name_the_field(tmp_path) -> None:
    with pytest.raises(ConfigError, match="q_chunk_size"):
        parse_sdpa_config({"compute_with_storage_grid_size": [8, 8], "q_chunk_size": 48, "k_chunk_size": 64})
    with pytest.raises(ConfigError, match="SDPAProgramConfig"):
        parse_sdpa_config({"program_config": "MatmulMultiCoreReuseMultiCastProgramConfig"})
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"compute_with_storage_grid_size": [13, 10], "q_chunk_size": 64, "k_chunk_size": 64}))
    code, _, err = run(
        "predict", "flash_attention", "--hw", "wormhole_n150", "--shape", SHAPE, "--ttnn-config", str(path)
    )
    assert code == 2 and "compute_with_storage_grid_size" in err and "8x8" in err


def test_one_query_chunk_per_head_uses_the_1d_layout_of_the_heads() -> None:
    """A causal query of one tile per head has no decode op: the only dim with tasks is H, so TTNN's SDPA split
    is H over the cores (no chunk pairs: one chunk per head)."""
    hw = load_hardware("wormhole_n150")
    one_row = make_problem(load_program("flash_attention"), "B=1,H=8,Hkv=2,Sq=32,Skv=32,D=64", options={"causal"})
    assert sdpa_schedule(hw, one_row).candidate.name == "H@xy|q=dram,k=dram,v=dram"


@pytest.mark.parametrize(
    "config,kv_cores,groups_per_core,grid",
    [
        # 2 groups: 64 cores, at most 16 per group (the config's default), only 4 key chunks of 256
        ({"k_chunk_size": 256}, 4, 1, [8, 1]),
        # at most 2 cores per group: 4 cores
        ({"k_chunk_size": 64, "max_cores_per_head_batch": 2}, 2, 1, [4, 1]),
        # one core: its 2 groups on it (ttnn's heads per core)
        ({"k_chunk_size": 64, "compute_with_storage_grid_size": [1, 1]}, 1, 2, [1, 1]),
    ],
)
def test_a_decode_problem_is_costed_as_ttnn_sdpa_decode(
    config: dict[str, object], kv_cores: int, groups_per_core: int, grid: list[int]
) -> None:
    """One query token, not causal: ttnn runs ``scaled_dot_product_attention_decode``, whose split (cores per
    key/value head, heads per core) follows the grid and ``max_cores_per_head_batch``."""
    hw = load_hardware("wormhole_n150")
    decode = make_problem(load_program("flash_attention"), "B=1,H=8,Hkv=2,Sq=1,Skv=1024,D=64")
    cfg = parse_sdpa_config({"compute_with_storage_grid_size": [8, 8], "q_chunk_size": 32} | config)
    evaluated = evaluate_sdpa_config(hw, decode, cfg)
    assert evaluated.result.solution is not None, evaluated.result.conflict
    assert evaluated.result.candidate_name.endswith("|kv_split")
    v = evaluated.values
    assert (v["kv_cores"], v["per_core_Hkv"], [v["grid_x"], v["grid_y"]]) == (kv_cores, groups_per_core, grid)


def test_a_decode_k_chunk_ttnn_refuses_is_refused_with_the_reason() -> None:
    hw = load_hardware("wormhole_n150")
    decode = make_problem(load_program("flash_attention"), "B=1,H=8,Hkv=2,Sq=1,Skv=1024,D=64")
    cfg = parse_sdpa_config({"compute_with_storage_grid_size": [8, 8], "q_chunk_size": 32, "k_chunk_size": 96})
    with pytest.raises(ConfigError, match="power-of-two k_chunk_size dividing the cache length"):
        evaluate_sdpa_config(hw, decode, cfg)


def test_ttnn_decode_default_takes_the_largest_power_of_two_chunk_up_to_512() -> None:
    hw = load_hardware("wormhole_n150")
    for skv, chunk in ((1024, 512), (640, 128), (4096, 512)):
        decode = make_problem(load_program("flash_attention"), f"B=1,H=8,Hkv=2,Sq=1,Skv={skv},D=64")
        assert ttnn_default_decode_config(hw, decode).k_chunk_size == chunk
    ragged = make_problem(load_program("flash_attention"), "B=1,H=8,Hkv=2,Sq=1,Skv=1000,D=64")
    with pytest.raises(ConfigError, match="not a multiple of 32"):
        ttnn_default_decode_config(hw, ragged)


def test_exp_approx_mode_left_out_is_the_approximate_exponential() -> None:
    """ttnn's SDPA factory resolves an unset ``exp_approx_mode`` to true."""
    cfg = parse_sdpa_config({"compute_with_storage_grid_size": [8, 8], "q_chunk_size": 64, "k_chunk_size": 64})
    assert cfg.exp_approx_mode is None and cfg.exp_approx is True
    assert (
        parse_sdpa_config(
            {"compute_with_storage_grid_size": [8, 8], "q_chunk_size": 64, "k_chunk_size": 64, "exp_approx_mode": False}
        ).exp_approx
        is False
    )


@pytest.mark.parametrize(
    "shape,causal,q_chunk,cores,want",
    [
        # 4 heads x 8 chunks = 32 chunks on 64 cores: one each, 32 cores
        ("B=1,H=4,Sq=1024,Skv=1024,D=64", False, 128, 64, (1, 1, 32)),
        # causal, n_q = 8 even: 16 pairs on 64 cores, one pair (two chunks) each
        ("B=1,H=4,Sq=1024,Skv=1024,D=64", True, 128, 64, (1, 2, 16)),
        # causal, 20 pairs on 8 cores: 3 pairs on the busiest core (ttnn: base 2, the first 4 cores one more;
        # the model packs 3 per core on 7 cores)
        ("B=1,H=4,Sq=1280,Skv=1280,D=64", True, 128, 8, (3, 6, 7)),
        # causal, n_q = 5 odd: 20 chunks dealt one by one, 3 on the busiest of 8 cores (costed as 2 pairs)
        ("B=1,H=4,Sq=640,Skv=640,D=64", True, 128, 8, (2, 3, 7)),
        # not causal, 20 chunks on 64 cores: 20 cores with one each
        ("B=1,H=4,Sq=640,Skv=640,D=64", False, 128, 64, (1, 1, 20)),
    ],
)
def test_the_work_split_follows_ttnn(
    shape: str, causal: bool, q_chunk: int, cores: int, want: tuple[int, int, int]
) -> None:
    p = make_problem(load_program("flash_attention"), shape, options={"causal"} if causal else set())
    assert sdpa_split(p, q_chunk, cores) == want


def test_an_odd_number_of_query_chunks_under_the_causal_mask() -> None:
    """Chunks dealt singly: a core with three consecutive zigzag positions double-buffers q and is costed
    as two balanced pairs."""
    hw = load_hardware("wormhole_n150")
    p = make_problem(load_program("flash_attention"), "B=1,H=4,Sq=640,Skv=640,D=64", options={"causal"})
    cfg = TtnnSdpaConfig(compute_with_storage_grid_size=(4, 2), q_chunk_size=128, k_chunk_size=128)
    v = sdpa_values(sdpa_schedule(hw, p), cfg)
    assert (v["grid_x"], v["grid_y"], v["per_core_H*Sq"], v["q_buffer_depth"]) == (4, 2, 2, 2)  # 7 cores of 8
    assert evaluate_sdpa_config(hw, p, cfg).result.solution is not None
