"""Exported TT-Lang FlashAttention kernels (the flattened split, plain and causal) compile with the real
TT-Lang compiler, and the model's attention L1 is the compiler's: every file compiled in one toolchain
process passes, and the circular-buffer bytes the compiler allocates equal the model's ``l1_bytes`` at the
solution, on Wormhole and Blackhole."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_explorer.deploy.compiler import CompileReport, compile_files
from loom_explorer.export.schedule_json import rebuild, schedule_document
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttlang.exporter import ttlang_source

# (hardware, shape, causal, pins): the shapes and pins the simulator tests use, and a Blackhole pair
CASES: tuple[tuple[str, str, bool, dict[str, int]], ...] = (
    ("wormhole_n150", "B=2,H=2,Sq=256,Skv=256,D=64", False, {}),
    # grouped-query heads, a ragged query length, 20 tasks on 7 cores of 3 (one padding task)
    ("wormhole_n150", "B=1,H=4,Hkv=2,Sq=320,Skv=256,D=64", False, {"per_core_H*Sq": 3, "q_chunk_size": 64}),
    ("blackhole_p150a", "B=1,H=8,Sq=512,Skv=512,D=128", False, {}),
    ("wormhole_n150", "B=1,H=2,Sq=256,Skv=256,D=64", True, {"q_chunk_size": 64, "k_chunk_size": 32}),
    ("wormhole_n150", "B=1,H=2,Sq=256,Skv=256,D=64", True, {"q_chunk_size": 32, "k_chunk_size": 64}),
    (
        "wormhole_n150",
        "B=1,H=4,Hkv=2,Sq=256,Skv=256,D=64",
        True,
        {"q_chunk_size": 64, "k_chunk_size": 64, "grid_x": 3, "grid_y": 1},
    ),
    ("blackhole_p150a", "B=1,H=4,Sq=512,Skv=512,D=64", True, {}),
    # flash-decoding (the candidate with ``kv_split``), groups not split over cores: 4 query rows of 4 heads
    # packed into one tile, 2 groups per core, a ragged cache
    (
        "wormhole_n150",
        "B=3,H=8,Hkv=2,Sq=4,Skv=700,D=64",
        False,
        {"kv_cores": 1, "per_core_B*Hkv": 2, "k_chunk_size": 64},
    ),
    # groups split over cores, the partials gathered to each group's first core through pipe nets: a ragged
    # 1000-token cache on 4 cores a group, and 2 groups a core on 2 cores a group (docs/attention.md, section 8)
    ("wormhole_n150", "B=2,H=8,Hkv=1,Sq=1,Skv=1000,D=64", False, {"kv_cores": 4, "k_chunk_size": 64, "grid_x": 4}),
    (
        "wormhole_n150",
        "B=3,H=8,Hkv=2,Sq=4,Skv=700,D=64",
        False,
        {"kv_cores": 2, "per_core_B*Hkv": 2, "k_chunk_size": 64},
    ),
)


def _file_of(
    out_dir: Path, number: int, hw_name: str, shape: str, causal: bool, pins: dict[str, int]
) -> tuple[Path, int]:
    """The exported file of the flattened DRAM candidate's solution (flash-decoding's when the pins name
    ``kv_cores``) and the model's ``l1_bytes`` there."""
    hw = load_hardware(hw_name)
    problem = make_problem(
        load_program("flash_attention"), shape, options={"causal"} if causal else set(), target=KernelTarget.ttlang
    )  # as `export --format ttlang`
    session = Session(hw, problem)
    decode = "kv_cores" in pins
    flat = next(
        s
        for s in session.schedules
        if s.candidate.has_tag("kv_split") == decode
        and (decode or s.candidate.flattened)
        and "mcast" not in s.candidate.name
    )
    (result,) = session.solve(pins, SolveOptions(), candidates=[flat.candidate.name])
    assert result.solution is not None, f"{shape} causal={causal}: {result.status}"
    doc = schedule_document(hw, hw_name, "flash_attention", problem, result, SolveOptions())
    path = out_dir / f"attention_{number}.py"
    path.write_text(ttlang_source(rebuild(doc), doc))
    return path, result.solution.l1_bytes


@pytest.fixture(scope="module")
def compiled(tmp_path_factory, toolchain) -> list[tuple[CompileReport, int]]:
    """(the compiler's report, the model's l1_bytes) per case, every file in one compile."""
    out_dir = tmp_path_factory.mktemp("ttlang_compile_attention")
    files = [_file_of(out_dir, n, *case) for n, case in enumerate(CASES)]
    reports = compile_files([p for p, _ in files], toolchain)
    return [(report, l1) for report, (_, l1) in zip(reports, files, strict=True)]


@pytest.mark.toolchain
@pytest.mark.parametrize(
    "case", range(len(CASES)), ids=[f"{h}-{s}-{'causal' if c else 'plain'}-{p}" for h, s, c, p in CASES]
)
def test_attention_compiles_and_its_l1_is_the_models(compiled, case: int) -> None:
    report, model_l1_bytes = compiled[case]
    assert report.passed, f"{CASES[case]}: {report.message}"
    assert report.cb_l1_bytes == model_l1_bytes, (CASES[case], report.circular_buffers)
    assert not any(cb.compiler_allocated for cb in report.circular_buffers), report.circular_buffers
    assert report.cb_l1_bytes <= report.l1_budget_bytes
