"""Exported TT-Lang GEMM kernels run in Tenstorrent's simulator (tt-lang-sim): the result matches torch and the
simulator moves exactly the tiles the model predicts (DRAM reads/writes per tensor, pipe tiles per core): a
candidate of each way an operand travels at a ragged shape (``RAGGED_CANDIDATES``), and one of each family at a
second shape on Blackhole. FlashAttention's are ``test_ttlang_sim_attention.py`` (a file of its own, so the two
run on different test workers).

The files are simulated only (``compile_it=False``): no check here reads the compile, and
``test_ttlang_compile.py`` compiles every candidate of the ragged shape, all in one toolchain process."""

from __future__ import annotations

import pytest
from loom_helpers import NEEDS_SIM

from loom_explorer.deploy.verify import PCC_MIN, verify_kernel_file
from loom_explorer.export.schedule_json import rebuild, schedule_document
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.result import CandidateResult
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttlang.exporter import ttlang_source

pytestmark = NEEDS_SIM

RAGGED = ("wormhole_n150", "M=320,K=256,N=192")  # 10 x 6 output tiles: no grid divides them evenly
SECOND = ("blackhole_p150a", "M=256,K=256,N=384")  # 8 x 12 output tiles, 8 K tiles
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
# The ragged shape's 20 candidates in the simulator, one per way of moving an operand: the kernel's code paths
# are each operand's route (DRAM, or a multicast along x, y or to every core: ``common.receive_send`` and
# ``common.pipes``), the split-K gather axis (none, x, y) and the grid axis each output dimension takes. Each
# of those occurs among these, at the ragged edge of the grid: in0 and in1 each from DRAM and by each
# multicast; split-K gathered along y and along x, each once from DRAM and once with a multicast; M and N each
# on x, on y and along a 1-D layout. The other 11 candidates are combinations of the same paths (a DRAM operand
# beside a multicast one, the mirror of a 2-D layout); the families at the second shape run three of them
# (2-D mixed, 2-D DRAM with N on y, 1-D DRAM).
RAGGED_CANDIDATES = (
    "M@y,N@x|in0=mcast_x,in1=mcast_y",
    "N@y,M@x|in0=mcast_y,in1=mcast_x",
    "M@y,N@x|in0=dram,in1=dram",
    "K@y,N@x|in0=dram,in1=dram",
    "M@y,K@x|in0=dram,in1=dram",
    "K@y,M@x|in0=dram,in1=mcast_x",
    "N@y,K@x|in0=mcast_y,in1=dram",
    "M@xy|in0=dram,in1=mcast_xy",
    "N@xy|in0=mcast_xy,in1=dram",
)


def _solved(hw_name: str, shape: str) -> tuple[object, object, dict[str, CandidateResult]]:
    hw = load_hardware(hw_name)
    problem = make_problem(load_program("gemm"), shape, target=KernelTarget.ttlang)  # as `export --format ttlang`
    results = Session(hw, problem).solve({}, SolveOptions())
    return hw, problem, {r.candidate_name: r for r in results}


@pytest.fixture(scope="module")
def ragged() -> tuple[object, object, dict[str, CandidateResult]]:
    return _solved(*RAGGED)


@pytest.fixture(scope="module")
def second() -> tuple[object, object, dict[str, CandidateResult]]:
    return _solved(*SECOND)


def _verify(tmp_path, hw_name: str, solved, candidate: str) -> None:
    hw, problem, results = solved
    result = results[candidate]
    assert result.solution is not None, result.status
    doc = schedule_document(hw, hw_name, "gemm", problem, result, SolveOptions())
    path = tmp_path / "kernel.py"
    path.write_text(ttlang_source(rebuild(doc), doc))
    report = verify_kernel_file(path, timeout_seconds=300, compile_it=False)
    assert report.pcc >= PCC_MIN, report.pcc
    assert report.traffic_equal, report.differences()
    assert report.predicted.dram_read_tiles and report.predicted.dram_written_tiles
    multicasts = "mcast" in candidate or candidate.startswith(("K@", "N@y,K@", "M@y,K@"))
    assert bool(report.simulated.pipe_received_tiles) == multicasts


def test_every_family_is_listed_among_the_candidates(ragged) -> None:
    assert set(FAMILIES) | set(RAGGED_CANDIDATES) <= set(ragged[2])
    assert len(ragged[2]) == 20


@pytest.mark.slow
@pytest.mark.parametrize("candidate", RAGGED_CANDIDATES)
def test_a_candidate_of_each_route_at_a_ragged_shape(tmp_path, ragged, candidate: str) -> None:
    _verify(tmp_path, RAGGED[0], ragged, candidate)


@pytest.mark.slow
@pytest.mark.parametrize("candidate", FAMILIES)
def test_each_family_at_a_second_shape_on_blackhole(tmp_path, second, candidate: str) -> None:
    _verify(tmp_path, SECOND[0], second, candidate)
