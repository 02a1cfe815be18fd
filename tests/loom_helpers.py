"""Shared helpers of the test suite (imported by the tests; conftest.py puts this folder on sys.path).

* :func:`small_hw_dict` derives a small chip from the shipped Wormhole n150 description, so that brute
  force over every parameter assignment stays fast;
* :func:`assert_sound` is the check every solver test applies to every schedule it gets: the referee
  accepts it, agrees with the objective exactly, and the latency respects the compute roofline and the
  schedule's own lower-bound expression;
* :data:`NEEDS_SIM` skips the tests of a module when tt-lang-sim is not installed, without importing it (it
  imports torch: seconds of every test process's collection).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import Candidate
from loom_explorer.model.expr import evaluate
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.program import Dim, Matmul, Tensor, TileProgram
from loom_explorer.result import CandidateResult, Solution
from loom_explorer.validate import referee


def has_module(name: str) -> bool:
    """Whether ``name`` can be imported, found without importing it (a missing parent package: no)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


NEEDS_SIM = pytest.mark.skipif(
    not has_module("ttl.sim"), reason="tt-lang-sim is not installed (pip install 'loom-explorer[sim]')"
)

STATUSES = {"optimal", "feasible", "dominated", "infeasible", "conflict", "timeout"}


def small_hw_dict(columns: int = 4, rows: int = 4, name: str | None = None) -> dict:
    """The n150 description shrunk to ``columns`` x ``rows`` compute cores.

    The compute cores take NoC columns 1.. and rows 1..; the n150's DRAM endpoints sit in NoC columns 0
    and 5, so with at most 4 columns none of them lands on a compute core.
    """
    assert columns <= 4, "NoC column 5 holds DRAM endpoints on the n150"
    d = load_hardware("wormhole_n150").model_dump(mode="json")
    d["name"] = name or f"tiny_{columns}x{rows}"
    d["grid"].update(columns=columns, rows=rows, noc_x=list(range(1, columns + 1)), noc_y=list(range(1, rows + 1)))
    return d


def write_hw(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def assert_solution_sound(schedule: SymbolicSchedule, solution: Solution) -> None:
    """The referee accepts ``solution`` and recomputes exactly its numbers; bounds hold."""
    values = solution.values()
    verdict = referee(schedule, values)
    name = schedule.candidate.name
    assert verdict.legal, f"{name}: referee rejects the solver's schedule: {verdict.violations}"
    assert verdict.solution is not None
    assert verdict.solution.latency_cycles == solution.latency_cycles, name
    assert verdict.solution == solution, name
    assert solution.latency_cycles >= schedule.ideal_cycles, f"{name}: beats the compute roofline"
    assert solution.latency_cycles >= evaluate(schedule.latency_lower_bound, values), (
        f"{name}: below its own lower-bound expression"
    )
    assert sum(v for _, v in solution.breakdown) == solution.latency_cycles, name
    assert solution.l1_bytes <= schedule.hardware.l1.usable_bytes, name
    for p in schedule.params:
        assert values[p.name] in p.values, f"{name}: {p.name}={values[p.name]} outside its domain"


def assert_result_sound(schedule: SymbolicSchedule, result: CandidateResult) -> None:
    """Status matches the payload; every schedule in the result (best and alternatives) is sound."""
    assert result.status in STATUSES
    assert result.candidate_name == schedule.candidate.name
    if result.status in ("optimal", "feasible"):
        assert result.solution is not None and result.conflict is None
        assert_solution_sound(schedule, result.solution)
        for name, value in result.pins:
            assert result.solution.values()[name] == value, f"pin {name}={value} not respected"
        if result.status == "optimal":
            assert result.best_bound_cycles == result.solution.latency_cycles
        for alt in result.alternatives:
            assert_solution_sound(schedule, alt)
            assert alt.latency_cycles >= result.solution.latency_cycles
    else:
        assert result.solution is None and not result.alternatives
    if result.status == "conflict":
        assert result.conflict is not None and result.conflict.message


# ------------------------------------------------------------------------------- kernels defined here


def transposed_program() -> TileProgram:
    """``y[N, M] = w[N, K] @ x[K, M]``: the roles move (N plays the row dim, M the column dim)."""
    return TileProgram(
        name="transposed",
        description="y = w @ x with the output transposed relative to gemm",
        dims=(Dim("M", "parallel"), Dim("N", "parallel"), Dim("K", "reduction")),
        tensors=(
            Tensor("w", ("N", "K"), "input"),
            Tensor("x", ("K", "M"), "input"),
            Tensor("y", ("N", "M"), "output"),
        ),
        ops=(Matmul("w", "x", "y"),),
    )


def broadcast_program() -> TileProgram:
    """``y[B, M, N] = x[B, M, K] @ w[K, N]``: the weights are shared by every batch index."""
    return TileProgram(
        name="bcast_gemm",
        description="batched activations times one shared weight matrix",
        dims=(Dim("B", "parallel", tile=1), Dim("M", "parallel"), Dim("N", "parallel"), Dim("K", "reduction")),
        tensors=(
            Tensor("x", ("B", "M", "K"), "input"),
            Tensor("w", ("K", "N"), "input"),
            Tensor("y", ("B", "M", "N"), "output"),
        ),
        ops=(Matmul("x", "w", "y"),),
    )


def families_of(schedule: SymbolicSchedule, violations) -> set[str]:
    """The constraint families of the referee's violations (each starts with its constraint's name)."""
    by_name = {c.name: c.family for c in schedule.constraints}
    out = set()
    for v in violations:
        name = v.split(":", 1)[0]
        assert name in by_name, f"violation {v!r} does not start with a constraint name"
        out.add(by_name[name])
    return out


def numbers(text: str) -> set[int]:
    """Every integer in ``text`` (thousands separators allowed)."""
    return {int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)}


def simulate_attention(
    tmp_path: Path,
    shape: str,
    pins: dict[str, int],
    pick: Callable[[Candidate], bool],
    options: frozenset[str] = frozenset(),
    compile_it: bool = False,
) -> tuple[Path, Any]:
    """Solve the flash_attention candidate ``pick`` chooses on the n150 as ``export --format ttlang`` does,
    write its TT-Lang kernel into ``tmp_path`` and run it in tt-lang-sim: (the file, its VerifyReport).
    ``compile_it``: compile it too (seconds of a toolchain process each), for a caller that checks the compile
    (``report.passed``); the simulator's checks do not need it, and test_ttlang_compile_attention.py compiles
    the simulated shapes in one process."""
    from loom_explorer.deploy.verify import verify_kernel_file
    from loom_explorer.export.schedule_json import rebuild, schedule_document
    from loom_explorer.problem import KernelTarget, make_problem
    from loom_explorer.program import load_program
    from loom_explorer.solve.solver import Session, SolveOptions
    from loom_explorer.targets.ttlang.exporter import ttlang_source

    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("flash_attention"), shape, options=set(options), target=KernelTarget.ttlang)
    session = Session(hw, problem)
    name = next(s.candidate.name for s in session.schedules if pick(s.candidate))
    (result,) = session.solve(pins, SolveOptions(), candidates=[name])
    assert result.solution is not None, result.conflict or result.status
    doc = schedule_document(hw, "wormhole_n150", "flash_attention", problem, result, SolveOptions())
    path = tmp_path / "attention.py"
    path.write_text(ttlang_source(rebuild(doc), doc))
    return path, verify_kernel_file(path, timeout_seconds=300, compile_it=compile_it)
