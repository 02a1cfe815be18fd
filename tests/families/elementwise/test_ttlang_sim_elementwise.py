"""Exported element-wise kernels run in Tenstorrent's simulator (tt-lang-sim) and compiler: the result
matches torch and the simulator moves exactly the tiles the model predicts (and, in one compile of every
case, the TT-Lang compiler accepts each file and allocates the model's L1), for every layout family (rows
and columns on the grid both ways, rows or columns over a 1-D layout, all tiles flattened) and every way a
broadcast input travels (DRAM, multicast along a row, a column, the grid), on a ragged shape whose tiles
no grid divides evenly, with elements that fill no whole tile.

The kernels with broadcast inputs are written here, in the DSL only, as a user's kernel file: the engine,
candidates, solver, exporter and verifier take them with no change."""

from __future__ import annotations

from pathlib import Path

import pytest
from loom_helpers import NEEDS_SIM

from loom_explorer.deploy.compiler import compile_files
from loom_explorer.deploy.verify import PCC_MIN, VerifyReport, verify_kernel_file
from loom_explorer.export.schedule_json import rebuild, schedule_document
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttlang.exporter import ttlang_source

pytestmark = NEEDS_SIM

HW = "wormhole_n150"
RAGGED = "H=300,W=190"  # 10 x 6 tiles, the last row and column of tiles partly filled

# y = x * sigmoid(x) + bias[W]: the sigmoid of x times x, then a row vector added to every row
SILU_BIAS = """\
from loom_explorer.program import Dim, Eltwise, Tensor, TileProgram

PROGRAM = TileProgram(
    name="silu_bias", description="y = x * sigmoid(x) + bias[W]", example_shape="H=300,W=190",
    dims=(Dim("H", "parallel"), Dim("W", "parallel")),
    tensors=(Tensor("x", ("H", "W"), "input"), Tensor("bias", ("W",), "input"),
             Tensor("y", ("H", "W"), "output")),
    ops=(Eltwise("sigmoid", "y", source="x"), Eltwise("mul", "y", unit="fpu", operand="x"),
         Eltwise("add", "y", unit="fpu", operand="bias")),
)
"""

# y = exp(x) * s[H] - c: a column vector scales each row, a scalar is subtracted
SCALE_SHIFT = """\
from loom_explorer.program import Dim, Eltwise, Tensor, TileProgram

PROGRAM = TileProgram(
    name="scale_shift", description="y = exp(x) * s[H] - c", example_shape="H=300,W=190",
    dims=(Dim("H", "parallel"), Dim("W", "parallel")),
    tensors=(Tensor("x", ("H", "W"), "input"), Tensor("s", ("H",), "input"), Tensor("c", (), "input"),
             Tensor("y", ("H", "W"), "output")),
    ops=(Eltwise("exp", "y", operand="x"), Eltwise("mul", "y", unit="fpu", operand="s"),
         Eltwise("sub", "y", unit="fpu", operand="c")),
)
"""

SOURCES = {"silu_bias": SILU_BIAS, "scale_shift": SCALE_SHIFT}


def _export(
    out_dir: Path,
    kernel: str,
    candidate: str,
    pins: dict[str, int] | None = None,
    activation: str | None = None,
    shape: str = RAGGED,
    name: str = "kernel",
) -> tuple[Path, Path | None, int]:
    """Solve ``candidate`` (with ``pins``) as ``export --format ttlang`` does and write its kernel file: (the
    file, the DSL kernel file it was made from or None for a shipped kernel, the model's l1_bytes)."""
    kernel_file = None
    if kernel in SOURCES:
        kernel_file = out_dir / f"{kernel}.py"
        kernel_file.write_text(SOURCES[kernel])
    hw = load_hardware(HW)
    program = load_program(str(kernel_file) if kernel_file else kernel)
    problem = make_problem(program, shape, activation=activation, target=KernelTarget.ttlang)
    (result,) = Session(hw, problem).solve(pins or {}, SolveOptions(), candidates=[candidate])
    assert result.solution is not None, result.status
    doc = schedule_document(hw, HW, str(kernel_file) if kernel_file else kernel, problem, result, SolveOptions())
    path = out_dir / f"{name}.py"
    path.write_text(ttlang_source(rebuild(doc, kernel_file=kernel_file), doc))
    return path, kernel_file, result.solution.l1_bytes


def _verify(
    tmp_path: Path,
    kernel: str,
    candidate: str,
    pins: dict[str, int] | None = None,
    activation: str | None = None,
    shape: str = RAGGED,
) -> tuple[str, VerifyReport]:
    """The simulator's verdict on the exported file (the compile runs once for every case, below)."""
    path, kernel_file, _ = _export(tmp_path, kernel, candidate, pins, activation, shape)
    report = verify_kernel_file(path, timeout_seconds=300, kernel_file=kernel_file, compile_it=False)
    assert report.pcc >= PCC_MIN, report.pcc
    assert report.traffic_equal, report.differences()
    return path.read_text(), report


QUICK = ("silu_bias", "H@y,W@x|x=dram,bias=mcast_y", {"grid_x": 1, "grid_y": 2, "block_h": 5, "block_w": 3})
CASES = [
    ("silu_bias", "W@y,H@x|x=dram,bias=mcast_x", {}),
    ("silu_bias", "H@xy|x=dram,bias=mcast_xy", {}),
    ("silu_bias", "W@xy|x=dram,bias=dram", {}),
    ("silu_bias", "H*W@xy|x=dram,bias=dram", {"per_core_H*W": 6, "block": 3}),
    ("scale_shift", "H@y,W@x|x=dram,s=mcast_x,c=mcast_xy", {}),
    ("scale_shift", "W@y,H@x|x=dram,s=mcast_y,c=mcast_x", {"block_h": 2}),
    ("scale_shift", "W@xy|x=dram,s=mcast_xy,c=dram", {}),
    ("scale_shift", "H*W@xy|x=dram,s=dram,c=mcast_xy", {}),
    ("binary", "H@xy|a=dram,b=dram", {"grid_x": 3, "grid_y": 1, "block_h": 2, "block_w": 3}),
]
UNARY = [("gelu", {"grid_x": 1, "grid_y": 1}), ("recip", {})]  # the thin tensor of the issue at a ragged width


def test_a_dsl_kernel_with_a_row_vector_verifies(tmp_path: Path) -> None:
    """The quick tier's one: the rows on y, bias[W] multicast down the column, 5 x 3 blocks pinned."""
    source, report = _verify(tmp_path, *QUICK)
    assert "BLOCK_H, BLOCK_W = 5, 3" in source
    # each core: 5 x 6 tiles in 2 blocks; bias: 3 tiles per block, read by core (0, 0) and sent to (0, 1)
    assert report.simulated.dram_read_tiles == {"x": 60, "bias": 2 * 3}
    assert report.simulated.pipe_received_tiles == {(0, 1): 2 * 3}


@pytest.mark.slow
@pytest.mark.parametrize(("kernel", "candidate", "pins"), CASES)
def test_every_layout_and_every_way_a_broadcast_travels(
    tmp_path: Path, kernel: str, candidate: str, pins: dict[str, int]
) -> None:
    _verify(tmp_path, kernel, candidate, pins)


@pytest.mark.slow
@pytest.mark.parametrize(("activation", "pins"), UNARY)
def test_unary_on_one_core_and_spread(tmp_path: Path, activation: str, pins: dict[str, int]) -> None:
    _, report = _verify(tmp_path, "unary", "W@xy|x=dram", pins, activation, "H=32,W=1000")
    assert report.simulated.dram_read_tiles == {"x": 32}


@pytest.mark.toolchain
def test_every_case_compiles_and_its_circular_buffers_are_the_models_l1(tmp_path: Path, toolchain) -> None:
    """One compile of every file above: the TT-Lang compiler accepts each, and its circular buffers total the
    model's ``l1_bytes``."""
    files = [_export(tmp_path, *case, name=f"case_{n}") for n, case in enumerate([QUICK, *CASES])]
    files += [
        _export(tmp_path, "unary", "W@xy|x=dram", pins, activation, "H=32,W=1000", f"unary_{activation}")
        for activation, pins in UNARY
    ]
    for (path, _, l1_bytes), report in zip(files, compile_files([p for p, _, _ in files], toolchain), strict=True):
        assert report.passed, (path.name, report.message)
        assert report.cb_l1_bytes == l1_bytes, (path.name, report.circular_buffers)


def test_what_the_writer_cannot_express_is_refused_naming_it(tmp_path: Path) -> None:
    from loom_explorer.families.elementwise.ttlang import elementwise_unsupported

    clash = tmp_path / "clash.py"
    clash.write_text(SILU_BIAS.replace('"bias"', '"row"'))
    assert "rename tensor row" in (elementwise_unsupported(make_problem(load_program(str(clash)), RAGGED)) or "")
    tanh = make_problem(load_program("unary"), RAGGED, activation="tanh")
    assert elementwise_unsupported(tanh) is None  # the writer knows tanh (the model needs a cost to solve it)
    div = tmp_path / "div.py"
    div.write_text(SILU_BIAS.replace('"add", "y", unit="fpu"', '"div", "y", unit="fpu"'))
    assert '"div"' in div.read_text()
    why = elementwise_unsupported(make_problem(load_program(str(div)), RAGGED))
    assert why is not None and "FPU ops add, mul, sub" in why and "'div'" in why
