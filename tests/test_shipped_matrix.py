"""The shipped space ends in a schedule or a one-line reason, never an internal error.

Every shipped chip x every shipped kernel, through the command line's own code path
(``benchmarks/shipped_matrix.py``'s ``run_cell``: ``loom-explorer solve ... --fastest 1`` in this process),
judged as that script judges it: exit 0 with a schedule, 2 with one error line, or 3 with a reason; exit 70
(an internal error) or anything else fails. The quick tier runs each chip x kernel on its tiny shape and the
reported crash shapes (flash_attention with grouped heads on the n300, whose 7 rows leave no ``per_core_H``
dividing the group); the slow tier the causal crash shapes and every option variant of every kernel on the
tiny shape, the chips taken in turn. The full matrix is the script's (docs/performance.md).

Per kernel, hypothesis draws shapes (ragged, tiny, huge, grouped-query ratios, options): the candidates'
models build (``Session``, no solve) or the problem is refused with a ``LoomError``; each candidate's latency
floor is finite, and at random points of its parameters' domains every defined value of its latency and
L1 bytes lies inside their ``bounds``.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom_explorer.errors import EXIT_INTERNAL, LoomError
from loom_explorer.hardware import list_hardware, load_hardware
from loom_explorer.model.expr import bounds, evaluate
from loom_explorer.model.schedule import latency_floor
from loom_explorer.problem import make_problem
from loom_explorer.program import TileProgram, list_kernels, load_program
from loom_explorer.solve.solver import Session

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "shipped_matrix.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("shipped_matrix", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["shipped_matrix"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


matrix = _load_script()
CHIPS = list_hardware()
KERNELS = list_kernels()


def _judge(cell: object, tmp_path: Path, limit_seconds: float) -> None:
    outcome = matrix.run_cell(cell, tmp_path / "results.sqlite", limit_seconds)
    assert outcome.exit_status != EXIT_INTERNAL, f"{outcome.cell.text}: {outcome.problem}"
    assert outcome.passed, f"{outcome.cell.text}: {outcome.problem}"
    assert outcome.answer, f"{outcome.cell.text}: exit {outcome.exit_status} with no schedule or reason"


def test_every_shipped_chip_and_kernel_is_in_the_matrix() -> None:
    cells = matrix.full_cells()
    assert {(c.hw, c.kernel) for c in cells} == {(h, k) for h in CHIPS for k in KERNELS}
    assert all(len({c.shape for c in cells if (c.hw, c.kernel) == (h, k)}) >= 8 for h in CHIPS for k in KERNELS)


@pytest.mark.parametrize("hw", CHIPS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_tiny_shape_answers(hw: str, kernel: str, tmp_path: Path) -> None:
    _judge(matrix.cells(hw, kernel)[0], tmp_path, limit_seconds=60)


@pytest.mark.parametrize(
    "hw, kernel, shape, flags",
    [
        pytest.param(*r, marks=[pytest.mark.slow] if r[3] else [], id=f"{r[2]}{' '.join(r[3])}")
        for r in matrix.REGRESSIONS
    ],
)
def test_reported_crash_shapes_solve(hw: str, kernel: str, shape: str, flags: tuple[str, ...], tmp_path: Path) -> None:
    """Exit 70 (ZeroDivisionError in the latency floor's bounds) before; now a schedule. The time allowed is
    generous: the causal ones take 10-25 s alone, several times that on a machine shared with other jobs."""
    outcome = matrix.run_cell(
        matrix.Cell(hw, kernel, "regression", shape, flags), tmp_path / "results.sqlite", limit_seconds=300
    )
    assert (outcome.exit_status, outcome.problem) == (0, ""), outcome
    assert "optimal" in outcome.answer


def test_build_only_reaches_the_latency_floors() -> None:
    """``--build-only`` runs what ``solve`` runs before solving, where the reported crash was (the latency
    floors): the crash shape builds, a shape beyond the model's range is refused in one line."""
    hw, kernel, shape, flags = matrix.REGRESSIONS[0]
    built = matrix.build_cell(matrix.Cell(hw, kernel, "regression", shape, flags))
    assert (built.exit_status, built.problem) == (0, ""), built
    beyond = [c for c in matrix.cells("wormhole_n150", "gemm") if c.label == "beyond range"][0]
    refused = matrix.build_cell(beyond)
    assert refused.exit_status == 2 and refused.answer.startswith("loom-explorer: error: "), refused


def _option_sample() -> list[object]:
    """Every option variant of every kernel on its tiny shape, each on one chip, the chips in turn."""
    sample = []
    for k_index, kernel in enumerate(KERNELS):
        variants = [c for c in matrix.cells(CHIPS[0], kernel) if c.shape == matrix.cells(CHIPS[0], kernel)[0].shape]
        for v_index, cell in enumerate(variants[1:]):
            hw = CHIPS[(k_index + v_index) % len(CHIPS)]
            sample.append(matrix.Cell(hw, kernel, cell.label, cell.shape, cell.flags))
    return sample


@pytest.mark.slow
def test_option_variants_answer(tmp_path: Path) -> None:
    """About 130 cells, a few tenths of a second each: every option a kernel takes, never an internal error."""
    outcomes = matrix.run_cells(_option_sample(), echo=False)
    failures = [f"{o.cell.text}: {o.problem}" for o in outcomes if not o.passed]
    assert not failures, "\n".join(failures)
    assert len({o.exit_status for o in outcomes}) >= 2  # schedules and refusals both occur


# ------------------------------------------------------------------------------- shapes, models, bounds


def _extent(big: int) -> st.SearchStrategy[int]:
    """Tiny, ragged and huge extents alike."""
    return st.one_of(st.integers(1, 64), st.integers(65, 5000), st.sampled_from([32, 1024, 4096, big]))


@st.composite
def _problems(draw: st.DrawFn, program: TileProgram) -> tuple[str, dict[str, int], set[str]]:
    shape: dict[str, int] = {}
    for dim in program.dims:
        if dim.group_of is not None:
            continue
        shape[dim.name] = draw(_extent(1 << 17 if dim.tile > 1 else 256))
    for dim in program.dims:  # a grouped index divides its parent: ratios 1, 2, 4, 8 or any divisor
        if dim.group_of is not None:
            parent = shape[dim.group_of]
            ratios = [r for r in (1, 2, 4, 8, parent) if parent % r == 0]
            shape[dim.name] = parent // draw(st.sampled_from(ratios))
    options = {o for o in program.options if draw(st.booleans())}
    return draw(st.sampled_from(CHIPS)), shape, options


def _check_models(kernel: str, case: tuple[str, dict[str, int], set[str]], seed: int) -> None:
    hw_name, shape, options = case
    program = load_program(kernel)
    hw = load_hardware(hw_name)
    activation = "gelu" if program.uses_activation else None
    try:
        problem = make_problem(program, shape, activation=activation, options=options)
        session = Session(hw, problem)
    except LoomError:
        return  # refused with a reason (e.g. beyond the model's range): what the command line says in one line
    rng = random.Random(seed)
    for schedule in session.schedules:
        floor = latency_floor(schedule)
        assert floor >= 0
        for expr in (schedule.latency, schedule.l1_bytes):
            lo, hi = bounds(expr)
            assert lo <= hi
            for _ in range(3):
                point = {p.name: p.var.values[rng.randrange(p.var.values.size)] for p in schedule.params}
                try:
                    value = evaluate(expr, point)
                except ZeroDivisionError:
                    continue  # a point where a divisor is 0: illegal, outside what bounds covers
                except KeyError:
                    break  # the expression mentions an auxiliary that is not a parameter
                assert lo <= value <= hi, f"{schedule.candidate.name}: {value} outside [{lo}, {hi}] at {point}"


@pytest.mark.parametrize("kernel", KERNELS)
def test_random_shapes_build_and_bound(kernel: str) -> None:
    program = load_program(kernel)

    @settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(_problems(program), st.integers(0, 1000))
    def check(case: tuple[str, dict[str, int], set[str]], seed: int) -> None:
        _check_models(kernel, case, seed)

    check()
