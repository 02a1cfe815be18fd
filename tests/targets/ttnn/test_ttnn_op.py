"""The TTNN op registry (``targets/ttnn/op.py``): which op ttnn calls for a problem, a program and a candidate,
and what each registered op supplies for the model's reading of ttnn; the config protocol every config the
core reads implements (``targets/ttnn/config.py``), printed as ``predict`` prints it (``config_text.py``)."""

from __future__ import annotations

import pytest

from loom_explorer.families.attention.ttnn_config import TtnnSdpaConfig
from loom_explorer.families.contraction.ttnn_config import parse_config
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.problem import Placement, Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.targets.ttnn.config import own
from loom_explorer.targets.ttnn.config_text import config_call, config_class, config_fields, op_name
from loom_explorer.targets.ttnn.defaults import evaluate_interleaved_default, interleaved_families
from loom_explorer.targets.ttnn.op import (
    CapturedCall,
    problem_ttnn_op,
    program_ttnn_op,
    ttnn_op_of,
    ttnn_ops,
)

N150 = "wormhole_n150"
DECODE = "B=1,H=8,Hkv=2,Sq=1,Skv=1024,D=64"


def problem(kernel: str, shape: str) -> Problem:
    return make_problem(load_program(kernel), shape)


@pytest.mark.parametrize(
    ("kernel", "shape", "op"),
    [
        ("gemm", "M=256,K=256,N=256", "contraction"),
        ("flash_attention", "B=1,H=4,Sq=1024,Skv=1024,D=64", "attention"),
        ("flash_attention", DECODE, "flash_decoding"),  # sdpa_decode takes the decode problem over
        ("layernorm", "H=64,W=1024", "row_reduction"),
        ("binary", "H=64,W=64", "elementwise"),
    ],
)
def test_the_op_ttnn_calls_for_a_problem(kernel: str, shape: str, op: str) -> None:
    assert problem_ttnn_op(problem(kernel, shape)).name == op


def test_a_decode_problem_s_program_is_attention_s_and_its_candidates_each_their_family_s() -> None:
    p = problem("flash_attention", DECODE)
    assert program_ttnn_op(p.program).name == "attention"
    names = {ttnn_op_of(p, c).name for c in enumerate_candidates(p)}
    assert "flash_decoding" in names


def test_what_each_registered_op_supplies() -> None:
    ops = ttnn_ops()
    assert {n for n, op in ops.items() if op.takes_program_config} == {
        "attention",
        "contraction",
        "convolution",
        "flash_decoding",
    }
    assert list(interleaved_families()) == ["data_movement", "elementwise", "row_reduction"]
    for op in ops.values():
        assert op.default is not None and op.captured is not None, op.name
    assert [n for n, op in ops.items() if op.takes_over is not None] == ["flash_decoding"]


def test_a_captured_call_not_predicted_is_recorded_under_its_op_s_name() -> None:
    ops = ttnn_ops()
    assert ops["contraction"].unpredicted_candidate(CapturedCall(None)) == "matmul (ttnn default config)"
    assert ops["attention"].unpredicted_candidate(CapturedCall(None, 64, 128)) == "SDPAProgramConfig"
    assert ops["attention"].unpredicted_candidate(CapturedCall(None)) == "SDPA (ttnn default config)"
    assert ops["row_reduction"].unpredicted_candidate(CapturedCall(None)) == "ttnn default"
    assert ops["contraction"].logical_shape({"M": 32, "K": 64, "N": 96, "batch": 4}, 1) == {
        "M": 128,
        "K": 64,
        "N": 96,
    }
    assert ops["attention"].logical_shape({"B": 1}, 1) is None


def test_every_config_prints_through_the_protocol() -> None:
    matmul = parse_config(
        {
            "program_config": "MatmulMultiCoreReuseMultiCast1DProgramConfig",
            "compute_with_storage_grid_size": [8, 8],
            "in0_block_w": 2,
            "per_core_M": 1,
            "per_core_N": 2,
            "out_subblock_h": 1,
            "out_subblock_w": 2,
            "mcast_in0": True,
            "memory": {"out": "L1_WIDTH_SHARDED"},
        }
    )
    assert op_name(matmul, ttnn_ops()["contraction"]) == "ttnn.matmul" and matmul.placements() == {
        "out": Placement.l1_width
    }
    assert "transpose_mcast" not in config_fields(matmul) and config_fields(matmul)["mcast_in0"] is True
    assert config_call(matmul)[1] == "memory: out=L1_WIDTH_SHARDED"
    sdpa = TtnnSdpaConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=64, k_chunk_size=128)
    assert op_name(sdpa, ttnn_ops()["flash_decoding"]) == "ttnn.transformer.scaled_dot_product_attention_decode"
    assert op_name(sdpa, ttnn_ops()["attention"]) == "ttnn.transformer.scaled_dot_product_attention"
    assert config_call(sdpa) == [
        "ttnn.SDPAProgramConfig(compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), q_chunk_size=64, k_chunk_size=128)"
    ]
    assert sdpa.read_with() == {} and sdpa.placements() == {}
    default, _ = evaluate_interleaved_default(load_hardware(N150), problem("rmsnorm", "H=64,W=1024"))
    assert config_class(default) is None and op_name(default, ttnn_ops()["row_reduction"]) == "ttnn.rms_norm"
    assert config_call(default)[0].startswith("no program config (interleaved, LayerNormDefaultProgramConfig)")
    with pytest.raises(TypeError, match="TtnnSdpaConfig is not a TtnnMatmulConfig"):
        own(sdpa, type(matmul))
