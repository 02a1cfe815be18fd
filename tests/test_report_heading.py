"""The heading of ``solve``'s table (``report.problem_heading``) states the data formats the problem uses:
one name when every tensor has it, else each tensor's."""

from __future__ import annotations

from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import parse_data_format, parse_fidelity
from loom_explorer.problem import Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.report import formats_text, problem_heading


def gemm(formats: dict[str, str], bias: bool = False, dtype: str = "bf16") -> Problem:
    return make_problem(
        load_program("gemm"),
        "M=64,K=64,N=64",
        parse_data_format(dtype),
        parse_fidelity("hifi2"),
        formats={t: parse_data_format(f) for t, f in formats.items()},
        enabled={"bias"} if bias else set(),
    )


def test_one_format_is_named_once() -> None:
    hw = load_hardware("wormhole_n150")
    assert problem_heading(hw, gemm({})) == "gemm M=64,N=64,K=64 on wormhole_n150 (8x8 cores, 1.0 GHz), bfloat16, hifi2"
    assert formats_text(gemm({}, dtype="bfp8_b")) == "bfloat8_b"


def test_differing_formats_are_stated_per_tensor() -> None:
    hw = load_hardware("wormhole_n150")
    assert (
        problem_heading(hw, gemm({"in1": "bfp8_b"}))
        == "gemm M=64,N=64,K=64 on wormhole_n150 (8x8 cores, 1.0 GHz), in0 bfloat16, in1 bfloat8_b, out bfloat16, hifi2"
    )
    # the output's format alone differing is stated too; a disabled optional tensor (bias) is left out
    assert formats_text(gemm({"out": "fp32"})) == "in0 bfloat16, in1 bfloat16, out float32"
    assert (
        formats_text(gemm({"in1": "bfp8_b"}, bias=True)) == "in0 bfloat16, in1 bfloat8_b, bias bfloat16, out bfloat16"
    )
