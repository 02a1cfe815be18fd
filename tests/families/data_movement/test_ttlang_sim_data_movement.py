"""Exported tiled copies and transposes run in Tenstorrent's simulator (tt-lang-sim) and compiler: the result
matches torch and the simulator moves exactly the tiles the model predicts, for a rectangular layout (blocks
along the columns), a 1-D layout of whole tile rows and all tiles flattened, on a ragged shape whose tiles no
grid divides evenly, with elements that fill no whole tile."""

from __future__ import annotations

from pathlib import Path

import pytest
from loom_helpers import NEEDS_SIM

from loom_explorer.deploy.verify import PCC_MIN, verify_kernel_file
from loom_explorer.export.schedule_json import rebuild, schedule_document
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttlang.exporter import ttlang_source

pytestmark = NEEDS_SIM
HW = "wormhole_n150"
RAGGED = "H=300,W=190"  # 10 x 6 tiles, the last row and column of tiles partly filled

CASES = [
    ("transpose", "H@y,W@x|x=dram", {}, True),
    ("copy", "H*W@xy|x=dram", {"per_core_H*W": 6, "block": 3}, False),
    ("transpose", "W@xy|x=dram", {}, False),
    ("copy", "W@y,H@x|x=dram", {"grid_x": 2}, False),
]


@pytest.mark.slow
@pytest.mark.parametrize(("kernel", "candidate", "pins", "compile_it"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_a_tiled_move_verifies_in_the_simulator(
    tmp_path: Path, kernel: str, candidate: str, pins: dict[str, int], compile_it: bool
) -> None:
    hw = load_hardware(HW)
    problem = make_problem(load_program(kernel), RAGGED, target=KernelTarget.ttlang)
    (result,) = Session(hw, problem).solve(pins, SolveOptions(), candidates=[candidate])
    assert result.solution is not None, result.status
    doc = schedule_document(hw, HW, kernel, problem, result, SolveOptions())
    path = tmp_path / f"{kernel}.py"
    path.write_text(ttlang_source(rebuild(doc), doc))
    report = verify_kernel_file(path, timeout_seconds=300, compile_it=compile_it)
    assert report.pcc >= PCC_MIN, report.pcc
    assert report.traffic_equal, report.differences()
