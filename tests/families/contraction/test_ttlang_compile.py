"""Exported TT-Lang GEMM kernels compile with the real TT-Lang compiler, and the model's L1 is the
compiler's: every candidate of a ragged shape and one of each family at a second shape on Blackhole,
compiled in one toolchain process; each passes, and the circular-buffer bytes the compiler allocates equal
the model's ``l1_bytes`` at the solution. A split-K schedule past the compiler's L1 budget is past the
model's usable L1 too."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from loom_explorer.deploy.compiler import CompileReport, compile_files
from loom_explorer.export.schedule_json import rebuild, schedule_document
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import KernelTarget, Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttlang.exporter import ttlang_source

RAGGED = ("wormhole_n150", "M=320,K=256,N=192")  # 10 x 6 output tiles: no grid divides them evenly
SECOND = ("blackhole_p150a", "M=256,K=512,N=384")
# one candidate per family: 2-D multicast both, 2-D DRAM both, 2-D mixed, split-K (gather),
# split-K with a multicast, 1-D DRAM, 1-D multicast to every core
FAMILIES = (
    "M@y,N@x|in0=mcast_x,in1=mcast_y",
    "N@y,M@x|in0=dram,in1=dram",
    "M@y,N@x|in0=dram,in1=mcast_y",
    "K@y,N@x|in0=dram,in1=dram",
    "N@y,K@x|in0=mcast_y,in1=dram",
    "M@xy|in0=dram,in1=dram",
    "N@xy|in0=mcast_xy,in1=dram",
)
# split-K on a 2 x 2 grid with 8 x 8 output blocks: in0_block_w 8 fits the compiler's budget, 16 does not
SPLIT_K = (
    "wormhole_n150",
    "M=512,K=2048,N=256",
    "K@y,M@x|in0=dram,in1=dram",
    {
        "grid_x": 2,
        "grid_y": 2,
        "out_block_h": 8,
        "out_block_w": 8,
        "in0_block_w": 8,
        "in0_buffer_depth": 2,
        "in1_buffer_depth": 2,
    },
)


def _gemm(shape: str) -> Problem:
    """The GEMM problem as the TT-Lang export solves it: L1 counted as the exported kernel's buffers."""
    return make_problem(load_program("gemm"), shape, target=KernelTarget.ttlang)


def _file_of(
    out_dir: Path, hw_name: str, shape: str, candidate: str, pins: dict[str, int] | None = None
) -> tuple[Path, int]:
    """The exported file of ``candidate``'s solution and the model's ``l1_bytes`` at that solution."""
    hw = load_hardware(hw_name)
    problem = _gemm(shape)
    (result,) = Session(hw, problem).solve(pins or {}, SolveOptions(), candidates=[candidate])
    assert result.solution is not None, f"{candidate}: {result.status}"
    doc = schedule_document(hw, hw_name, "gemm", problem, result, SolveOptions())
    path = out_dir / f"{hw_name}_{len(list(out_dir.iterdir()))}.py"
    path.write_text(ttlang_source(rebuild(doc), doc))
    return path, result.solution.l1_bytes


def _all_candidates(hw_name: str, shape: str) -> list[str]:
    session = Session(load_hardware(hw_name), _gemm(shape))
    return [s.candidate.name for s in session.schedules]


@dataclass(frozen=True)
class Compiled:
    """Every file of this module's tests and the compiler's report on each, from one toolchain process (its
    start-up is most of a compile's time)."""

    candidates: dict[tuple[str, str], tuple[CompileReport, int]]  # (hardware, candidate) -> (report, l1_bytes)
    split_k: tuple[Path, int, CompileReport, CompileReport]  # (fitting file, its l1_bytes, its report, too big's)
    blocks: tuple[CompileReport, ...]  # one per BLOCKS entry


@pytest.fixture(scope="module")
def compiled(tmp_path_factory, toolchain) -> Compiled:
    """The candidates' files (the model's l1_bytes beside each), ``test_a_split_k_...``'s two and
    ``test_the_blocks_...``'s, all compiled in one ``compile_files``."""
    out_dir = tmp_path_factory.mktemp("ttlang_compile")
    cases = [(RAGGED, c) for c in _all_candidates(*RAGGED)] + [(SECOND, c) for c in FAMILIES]
    files = [_file_of(out_dir, hw_name, shape, c) for (hw_name, shape), c in cases]
    hw_name, shape, candidate, pins = SPLIT_K
    fits, fits_l1_bytes = _file_of(out_dir, hw_name, shape, candidate, pins)
    text = fits.read_text()
    assert "\nIN0_BLOCK_W = 8 " in text
    too_big = out_dir / "too_big.py"
    too_big.write_text(text.replace("\nIN0_BLOCK_W = 8 ", "\nIN0_BLOCK_W = 16", 1))
    block_files = [_block_file(out_dir, h, w, k) for h, w, k, _ in BLOCKS]
    reports = compile_files([*(p for p, _ in files), fits, too_big, *block_files], toolchain)
    mine, (fitting, refused), block_reports = (
        reports[: len(files)],
        reports[len(files) : -len(BLOCKS)],
        reports[-len(BLOCKS) :],
    )
    return Compiled(
        candidates={
            (hw_name, c): (report, l1) for ((hw_name, _), c), report, (_, l1) in zip(cases, mine, files, strict=True)
        },
        split_k=(fits, fits_l1_bytes, fitting, refused),
        blocks=tuple(block_reports),
    )


def _check(compiled, hw_name: str, candidate: str) -> None:
    report, model_l1_bytes = compiled.candidates[(hw_name, candidate)]
    assert report.passed, f"{candidate}: {report.message}"
    assert report.cb_l1_bytes == model_l1_bytes, (candidate, report.circular_buffers)
    assert not any(cb.compiler_allocated for cb in report.circular_buffers), report.circular_buffers


@pytest.mark.toolchain
def test_the_ragged_shape_has_twenty_candidates_and_every_family() -> None:
    names = _all_candidates(*RAGGED)
    assert len(names) == 20 and set(FAMILIES) <= set(names)


@pytest.mark.toolchain
@pytest.mark.parametrize("candidate", _all_candidates(*RAGGED))
def test_every_candidate_of_a_ragged_shape_compiles_in_the_model_l1(compiled, candidate: str) -> None:
    _check(compiled, RAGGED[0], candidate)


@pytest.mark.toolchain
@pytest.mark.parametrize("candidate", FAMILIES)
def test_each_family_at_a_second_shape_on_blackhole_compiles_in_the_model_l1(compiled, candidate: str) -> None:
    _check(compiled, SECOND[0], candidate)


@pytest.mark.toolchain
def test_a_split_k_schedule_past_the_compiler_l1_budget_is_past_the_model_l1_too(compiled: Compiled) -> None:
    """The fitting schedule compiles in the model's bytes; the same kernel with in0_block_w = 16 is refused
    by the compiler for L1, and by the model (its l1_capacity constraint), at the same byte count."""
    import re

    from loom_explorer.model.expr import evaluate
    from loom_explorer.validate import referee

    hw_name, shape, candidate, pins = SPLIT_K
    fits, fits_l1_bytes, fitting, refused = compiled.split_k
    assert "\nIN0_BLOCK_W = 8 " in fits.read_text()
    assert fitting.passed and fitting.cb_l1_bytes == fits_l1_bytes == 1_048_576, fitting

    hw = load_hardware(hw_name)
    session = Session(hw, _gemm(shape))
    (schedule,) = [s for s in session.schedules if s.candidate.name == candidate]
    (result,) = session.solve(pins, SolveOptions(), candidates=[candidate])
    assert result.solution is not None
    values = {**result.solution.values(), "in0_block_w": 16}
    model_l1_bytes = evaluate(schedule.l1_bytes, values)
    verdict = referee(schedule, values)
    assert verdict.solution is None and any("L1" in v for v in verdict.violations), verdict
    assert not refused.passed and "exceeds L1 budget" in refused.message, refused.message
    needed = re.search(r"allocation \((\d+) bytes\)", refused.message)
    assert needed is not None, refused.message
    assert int(needed.group(1)) == model_l1_bytes == 1_572_864
    assert model_l1_bytes > hw.l1.usable_bytes


# (out_block_h, out_block_w, in0_block_w) on one core, and whether the compiler takes the block: with one-tile
# K steps it needs a sub-block of 2 to 4 tiles dividing the block
BLOCKS = (
    (5, 1, 1, False),
    (7, 1, 1, False),
    (1, 5, 1, False),
    (6, 1, 1, True),
    (5, 2, 1, True),
    (3, 1, 1, True),
    (5, 1, 2, True),
    (5, 5, 2, True),
)


BLOCK_CANDIDATE = "M@y,N@x|in0=dram,in1=dram"


def _block_shape_and_pins(h: int, w: int, k: int) -> tuple[str, dict[str, int]]:
    shape = f"M={32 * max(h, 2)},K=192,N={32 * max(w, 2)}"
    return shape, {"grid_x": 1, "grid_y": 1, "out_block_h": h, "out_block_w": w, "in0_block_w": k}


def _block_file(out_dir: Path, h: int, w: int, k: int) -> Path:
    """The block written as a TT-Lang kernel, solved for TTNN's kernels (any sub-block of 1 tile upward)."""
    hw = load_hardware("wormhole_n150")
    shape, pins = _block_shape_and_pins(h, w, k)
    problem = make_problem(load_program("gemm"), shape)  # TTNN's kernels: any sub-block of 1 tile upward
    (result,) = Session(hw, problem).solve(pins, SolveOptions(), candidates=[BLOCK_CANDIDATE])
    assert result.solution is not None, (h, w, k, result.status)
    doc = schedule_document(hw, "wormhole_n150", "gemm", problem, result, SolveOptions())
    path = out_dir / f"block_{h}x{w}_k{k}.py"
    path.write_text(ttlang_source(rebuild(doc), doc))
    return path


@pytest.mark.toolchain
def test_the_blocks_the_compiler_cannot_sub_block_are_the_ones_the_model_refuses(compiled: Compiled) -> None:
    """Each block is written as a TT-Lang kernel (solved for TTNN's kernels, which have no such rule) and
    compiled (in the module's one compile); the TT-Lang target's model takes exactly the blocks the compiler
    takes."""
    hw = load_hardware("wormhole_n150")
    model_takes = []
    for h, w, k, _ in BLOCKS:
        shape, pins = _block_shape_and_pins(h, w, k)
        (ttlang,) = Session(hw, _gemm(shape)).solve(pins, SolveOptions(), candidates=[BLOCK_CANDIDATE])
        model_takes.append(ttlang.solution is not None)
        if ttlang.solution is None:
            assert ttlang.conflict is not None and "dst_subblock[ttlang]" in ttlang.conflict.constraints, ttlang
    reports = compiled.blocks
    compiler_takes = [r.passed for r in reports]
    assert compiler_takes == [ok for *_, ok in BLOCKS], [r.message for r in reports]
    assert model_takes == compiler_takes
    assert all("exceeds DST capacity" in r.message for r in reports if not r.passed)
