"""A data-movement kernel written only with the DSL, inside this file, gets its candidates, solves with CP-SAT
and exports, with no change to the engine: a transpose with padding (JSON; its export to ttnn refused, two ttnn
ops, and to TT-Lang, a pad) and a slice (exported as the ttnn call of ttnn's own split). The tiled copies and
transposes TT-Lang writes are verified in the simulator in test_ttlang_sim_data_movement.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loom_explorer.export.exporter import ExportError, SolvedSchedule
from loom_explorer.export.formats import export_blocker, export_text
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.problem import make_problem
from loom_explorer.program import TileProgram, load_program, program_family
from loom_explorer.solve.solver import Session, SolveOptions

HW = "wormhole_n150"

# the kernel files, as a user writes them (the exports embed the file they name)
TRANSPOSE_PADDED_SOURCE = """
from loom_explorer.program import Dim, Move, Tensor, TileProgram

PROGRAM = TileProgram(
    name="transpose_padded",
    description="y[W, H] = x[Hx, W] padded to H rows, then transposed",
    dims=(
        Dim("H", "parallel"),
        Dim("Hx", "parallel", part_of="H"),
        Dim("W", "parallel"),
    ),
    tensors=(Tensor("x", ("Hx", "W"), "input"), Tensor("y", ("W", "H"), "output")),
    ops=(Move("x", "y"),),
)
"""

SLICE_SOURCE = """
from loom_explorer.program import Dim, Move, Tensor, TileProgram

PROGRAM = TileProgram(
    name="slice_rows",
    description="y[Hy, W] = the leading Hy rows of x[H, W]",
    dims=(Dim("H", "parallel"), Dim("Hy", "parallel", part_of="H"), Dim("W", "parallel")),
    tensors=(Tensor("x", ("H", "W"), "input"), Tensor("y", ("Hy", "W"), "output")),
    ops=(Move("x", "y"),),
)
"""


def _program(source: str, tmp_path: Path, name: str) -> tuple[TileProgram, str]:
    """The kernel file ``source`` written to ``tmp_path`` and loaded as the command line loads it."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return load_program(str(path)), str(path)


def _solved(program: TileProgram, kernel: str, shape: str) -> list[SolvedSchedule]:
    session = Session(load_hardware(HW), make_problem(program, shape))
    options = SolveOptions(time_limit_seconds=20)
    results = session.solve({}, options)
    return [
        SolvedSchedule(session.schedule(r.candidate_name), r, HW, kernel, options)
        for r in results
        if r.solution is not None
    ]


def test_a_transpose_with_padding_gets_candidates_solves_and_exports(tmp_path: Path) -> None:
    program, kernel = _program(TRANSPOSE_PADDED_SOURCE, tmp_path, "transpose_padded")
    problem = make_problem(program, "H=512,Hx=400,W=256")
    assert program_family(program).name == "data_movement"
    names = {c.name for c in enumerate_candidates(problem)}
    # both output dimensions alone, both ways on a 2-D grid, and the tiles flattened; x read from DRAM only
    assert {"W@xy|x=dram", "H@xy|x=dram", "W@y,H@x|x=dram", "H@y,W@x|x=dram", "W*H@xy|x=dram"} <= names
    assert all(name.endswith("|x=dram") for name in names)
    solved = _solved(program, kernel, "H=512,Hx=400,W=256")
    assert {s.result.status for s in solved} == {"optimal"}
    best = solved[0]
    breakdown = dict(best.result.solution.breakdown)
    assert breakdown["compute"] > 0  # the compute core transposes every tile
    document = json.loads(export_text("json", best))
    assert document["candidate"] == best.result.candidate_name
    why = export_blocker("ttnn", best)
    assert why is not None and "pad and transpose" in why
    with pytest.raises(ExportError, match="pad and transpose"):
        export_text("ttnn", best)
    ttlang = export_blocker("ttlang", best)
    assert ttlang is not None and "pads or slices Hx" in ttlang


def test_a_slice_exports_as_the_ttnn_call_of_ttnns_own_split(tmp_path: Path) -> None:
    program, kernel = _program(SLICE_SOURCE, tmp_path, "slice_rows")
    solved = _solved(program, kernel, "H=512,Hy=300,W=256")
    by_name = {s.result.candidate_name: s for s in solved}
    default = by_name["H*W@xy|x=dram"]
    text = export_text("ttnn", default)
    assert "ttnn.slice(" in text and 'MEMORY = {"x": "DRAM", "y": "DRAM"}' in text.replace("'", '"')
    compile(text, "slice_rows_ttnn.py", "exec")  # the file is Python
    other = by_name["H@xy|x=dram"]
    assert "deals its tiles over the grid itself" in (export_blocker("ttnn", other) or "")
