"""Exported row-reduction kernels (softmax, RMSNorm, LayerNorm, GroupNorm) run in Tenstorrent's simulator and compiler:
the result matches torch, the simulator moves exactly the tiles the model predicts (the reductions'
gathers and multicasts included), and, in one compile of every case, the compiler accepts each file and
its circular buffers are the model's L1 bytes. Every layout family: rows kept whole on a 1-D layout, rows
and columns on the grid both ways (gathers along x and along y), and a row split over a 1-D layout; on
rows that fill no whole tile."""

from __future__ import annotations

from pathlib import Path

import pytest
from loom_helpers import NEEDS_SIM

from loom_explorer.deploy.compiler import compile_files
from loom_explorer.deploy.verify import PCC_MIN, VerifyReport, verify_kernel_file
from loom_explorer.export.exporter import ExportError
from loom_explorer.export.schedule_json import rebuild, schedule_document
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttlang.exporter import ttlang_source

pytestmark = NEEDS_SIM

HW = "wormhole_n150"


def _export(
    out_dir: Path, kernel: str, shape: str, candidate: str, pins: dict[str, int], name: str = "kernel"
) -> tuple[Path, int]:
    """Solve ``candidate`` (with ``pins``) as ``export --format ttlang`` does and write its kernel file: (the
    file, the model's l1_bytes)."""
    hw = load_hardware(HW)
    problem = make_problem(load_program(kernel), shape, target=KernelTarget.ttlang)  # as `export --format ttlang`
    (result,) = Session(hw, problem).solve(pins, SolveOptions(), candidates=[candidate])
    assert result.solution is not None, result.status
    doc = schedule_document(hw, HW, kernel, problem, result, SolveOptions())
    path = out_dir / f"{name}.py"
    path.write_text(ttlang_source(rebuild(doc), doc))
    return path, result.solution.l1_bytes


def _verify(tmp_path: Path, kernel: str, shape: str, candidate: str, pins: dict[str, int]) -> VerifyReport:
    """The simulator's verdict on the exported file (the compile runs once for every case, below)."""
    path, _ = _export(tmp_path, kernel, shape, candidate, pins)
    report = verify_kernel_file(path, timeout_seconds=300, compile_it=False)
    assert report.pcc >= PCC_MIN, report.pcc
    assert report.traffic_equal, report.differences()
    return report


QUICK = ("rmsnorm", "H=96,W=256", "H@y,W@x|x=dram,gamma=mcast_y,eps=dram", {"per_core_W": 4, "grid_y": 3})
CASES = [
    ("softmax", "H=300,W=256", "H@xy|x=dram", {"block_h": 2}),
    ("softmax", "H=32,W=256", "W@xy|x=dram", {"per_core_W": 2}),
    ("layernorm", "H=300,W=256", "W@y,H@x|x=dram,gamma=dram,beta=dram,eps=mcast_xy", {"per_core_W": 2}),
    ("layernorm", "H=300,W=512", "H@xy|x=dram,gamma=dram,beta=dram,eps=dram", {}),
    ("rmsnorm", "H=300,W=512", "W@y,H@x|x=dram,gamma=mcast_x,eps=mcast_y", {"per_core_W": 4}),
    ("rmsnorm", "H=64,W=1024", "W@xy|x=dram,gamma=dram,eps=mcast_xy", {"per_core_W": 8}),
    ("groupnorm", "G=4,E=256", "E@xy|x=dram,mask=dram,gamma=dram,beta=dram,eps=dram", {}),
]


@pytest.mark.slow
def test_rmsnorm_with_its_row_split_over_the_grid(tmp_path: Path) -> None:
    """The quick tier's one: rows on y, columns on x (4 tiles each): the mean of squares gathered to the first
    core of each row of cores and multicast back; gamma multicast down the columns of cores."""
    report = _verify(tmp_path, *QUICK)
    # 3 rows of 2 cores, one tile row each: core (1, y) sends its partial tile to (0, y), which sends the
    # result back; gamma (4 tiles a core) is read by row 0 and multicast to rows 1 and 2
    assert report.simulated.pipe_received_tiles == {
        (0, 0): 1,
        (1, 0): 1,
        (0, 1): 4 + 1,
        (1, 1): 4 + 1,
        (0, 2): 4 + 1,
        (1, 2): 4 + 1,
    }
    assert report.simulated.dram_read_tiles == {"x": 24, "gamma": 8, "eps": 6}


@pytest.mark.slow
@pytest.mark.parametrize(("kernel", "shape", "candidate", "pins"), CASES)
def test_every_layout_family(tmp_path: Path, kernel: str, shape: str, candidate: str, pins: dict[str, int]) -> None:
    _verify(tmp_path, kernel, shape, candidate, pins)


@pytest.mark.toolchain
def test_every_case_compiles_and_its_circular_buffers_are_the_models_l1(tmp_path: Path, toolchain) -> None:
    """One compile of every file above: the TT-Lang compiler accepts each (one producer and one consumer
    thread per buffer, a receiving site per pipe), and its circular buffers total the model's ``l1_bytes``."""
    files = [_export(tmp_path, *case, name=f"case_{n}") for n, case in enumerate([QUICK, *CASES])]
    for (path, l1_bytes), report in zip(files, compile_files([p for p, _ in files], toolchain), strict=True):
        assert report.passed, (path.name, report.message)
        assert report.cb_l1_bytes == l1_bytes, (path.name, report.circular_buffers)


def test_columns_that_do_not_fill_whole_tiles_or_split_evenly_are_refused(tmp_path: Path) -> None:
    hw = load_hardware(HW)
    ragged = make_problem(load_program("softmax"), "H=64,W=200", target=KernelTarget.ttlang)
    (result,) = Session(hw, ragged).solve({}, SolveOptions(), candidates=["H@xy|x=dram"])
    doc = schedule_document(hw, HW, "softmax", ragged, result, SolveOptions())
    with pytest.raises(ExportError, match="W=200 is not a multiple of 32"):
        ttlang_source(rebuild(doc), doc)
    # 10 column tiles, 4 a core: solved for TTNN's kernels the writer refuses it; solved for the TT-Lang
    # kernels the pin conflicts with their rule (``ttlang_export``)
    uneven = make_problem(load_program("softmax"), "H=32,W=320")
    (result,) = Session(hw, uneven).solve({"per_core_W": 4}, SolveOptions(), candidates=["W@xy|x=dram"])
    doc = schedule_document(hw, HW, "softmax", uneven, result, SolveOptions())
    with pytest.raises(ExportError, match="splits the columns evenly"):
        ttlang_source(rebuild(doc), doc)
    uneven = make_problem(load_program("softmax"), "H=32,W=320", target=KernelTarget.ttlang)
    (result,) = Session(hw, uneven).solve({"per_core_W": 4}, SolveOptions(), candidates=["W@xy|x=dram"])
    assert result.solution is None and result.conflict is not None
    assert "ttlang_export[per_core_W|W]" in result.conflict.constraints, result.conflict
