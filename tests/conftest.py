"""Fixtures shared by the suite: hardware (shipped and a small derived chip) and a cache of solves.

CP-SAT solves dominate the suite's run time, so sessions and their results are cached per
(hardware, problem, pins) for the whole test session; tests only read them.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loom_helpers import small_hw_dict, write_hw
from plugin_site import forget

from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import TileProgram, load_program
from loom_explorer.solve.solver import Session, SolveOptions


def pytest_configure(config):
    """Hypothesis keeps its example database and caches in ./.hypothesis: keep them out of the tree (in the
    temporary folder, kept between runs so that its caches serve again). Commands record into a store of the
    test process's own."""
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "loom-explorer-hypothesis")
    # the results store (measurements, sweep results, proven solves) of every command a test runs without
    # --store: a fresh file per test process, never the user's
    os.environ["LOOM_EXPLORER_STORE"] = str(Path(tempfile.mkdtemp(prefix="loom-explorer-store-")) / "results.sqlite")


@pytest.fixture(scope="session")
def n150():
    return load_hardware("wormhole_n150")


@pytest.fixture(scope="session")
def tiny_hw_path(tmp_path_factory) -> Path:
    """A 4x4-core chip with the n150's rates, written as a user's YAML file."""
    return write_hw(tmp_path_factory.mktemp("hw") / "tiny_4x4.yaml", small_hw_dict(4, 4))


@pytest.fixture(scope="session")
def tiny_hw(tiny_hw_path):
    hw = load_hardware(tiny_hw_path)
    assert (hw.grid.columns, hw.grid.rows) == (4, 4)
    return hw


@pytest.fixture(scope="session")
def one_core_hw(tmp_path_factory):
    """A chip with a single compute core: nothing can be multicast or split."""
    return load_hardware(write_hw(tmp_path_factory.mktemp("hw1") / "one_core.yaml", small_hw_dict(1, 1)))


def _freeze(value):
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(value))
    return value


@pytest.fixture(scope="session")
def solve_cached():
    """``solve_cached(hw, kernel, shape, pins=None, candidates=None, **problem_kw) -> (session, results)``.

    ``kernel`` is a shipped kernel name or a TileProgram. Results are cached for the test session.
    """
    sessions: dict = {}
    results: dict = {}

    def run(hw, kernel, shape, pins=None, candidates=None, options=None, **problem_kw):
        program = kernel if isinstance(kernel, TileProgram) else load_program(kernel)
        pkey = (hw.name, program, shape, _freeze(problem_kw))
        if pkey not in sessions:
            sessions[pkey] = Session(hw, make_problem(program, shape, **problem_kw))
        session = sessions[pkey]
        rkey = (pkey, _freeze(pins or {}), tuple(candidates or ()), options)
        if rkey not in results:
            results[rkey] = session.solve(dict(pins or {}), options or SolveOptions(), candidates=candidates)
        return session, results[rkey]

    return run


@pytest.fixture(scope="session")
def toolchain():
    """The Python 3.12 toolchain (TT-Lang compiler, ttnn) the ``toolchain`` tests need. Missing, they fail:
    the README's test command installs it (``loom-explorer toolchain install``)."""
    from loom_explorer.deploy.toolchain import default_root, find_toolchain

    found = find_toolchain()
    if found is None:
        pytest.fail(
            f"the toolchain is not installed at {default_root()}: run `loom-explorer toolchain install` "
            "(the README's test command does), or deselect with -m 'not toolchain'"
        )
    return found


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` to install distributions in (``plugin_site.install``); the plug-in groups are
    read afresh around it."""
    monkeypatch.syspath_prepend(str(tmp_path))
    forget()
    yield tmp_path
    forget()


@pytest.fixture
def simulate_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulator runner that ``deploy`` and the explorer's measure panel pick, without the TT-Lang compile it
    runs beside the simulator: a runner's ``Run`` carries numerics and traffic only, so its answer is the same
    (tests/deploy/test_runner.py checks the option; the compile is checked in
    tests/families/*/test_ttlang_compile*.py and tests/deploy/test_verify_compile.py)."""
    import functools

    from loom_explorer.deploy import runner

    monkeypatch.setattr(runner, "SimulatorRunner", functools.partial(runner.SimulatorRunner, compile_it=False))
