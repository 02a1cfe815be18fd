"""Exported element-wise kernels run in Tenstorrent's simulator (tt-lang-sim) and compiler: the result
matches torch and the simulator moves exactly the tiles the model predicts, for every layout family (rows
and columns on the grid both ways, rows or columns over a 1-D layout, all tiles flattened) and every way a
broadcast input travels (DRAM, multicast along a row, a column, the grid), on a ragged shape whose tiles
no grid divides evenly, with elements that fill no whole tile.

The kernels with broadcast inputs are written here, in the DSL only, as a user's kernel file: the engine,
candidates, solver, exporter and verifier take them with no change."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_explorer.deploy.verify import PCC_MIN, VerifyReport, verify_kernel_file
from loom_explorer.export.schedule_json import rebuild, schedule_document
from loom_explorer.export.ttlang import ttlang_source
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions

pytest.importorskip("ttl.sim", reason="tt-lang-sim is not installed (pip install 'loom-explorer[sim]')")

HW = "wormhole_n150"
RAGGED = "H=300,W=190"  # 10 x 6 tiles, the last row and column of tiles partly filled

# y = x * sigmoid(x) + bias[W]: the sigmoid of x times x, then a row vector added to every row
SILU_BIAS = '''\
from loom_explorer.program import Dim, Eltwise, Tensor, TileProgram

PROGRAM = TileProgram(
    name="silu_bias", description="y = x * sigmoid(x) + bias[W]", example_shape="H=300,W=190",
    dims=(Dim("H", "parallel"), Dim("W", "parallel")),
    tensors=(Tensor("x", ("H", "W"), "input"), Tensor("bias", ("W",), "input"),
             Tensor("y", ("H", "W"), "output")),
    ops=(Eltwise("sigmoid", "y", source="x"), Eltwise("mul", "y", unit="fpu", operand="x"),
         Eltwise("add", "y", unit="fpu", operand="bias")),
)
'''

# y = exp(x) * s[H] - c: a column vector scales each row, a scalar is subtracted
SCALE_SHIFT = '''\
from loom_explorer.program import Dim, Eltwise, Tensor, TileProgram

PROGRAM = TileProgram(
    name="scale_shift", description="y = exp(x) * s[H] - c", example_shape="H=300,W=190",
    dims=(Dim("H", "parallel"), Dim("W", "parallel")),
    tensors=(Tensor("x", ("H", "W"), "input"), Tensor("s", ("H",), "input"), Tensor("c", (), "input"),
             Tensor("y", ("H", "W"), "output")),
    ops=(Eltwise("exp", "y", operand="x"), Eltwise("mul", "y", unit="fpu", operand="s"),
         Eltwise("sub", "y", unit="fpu", operand="c")),
)
'''

SOURCES = {"silu_bias": SILU_BIAS, "scale_shift": SCALE_SHIFT}


def _verify(tmp_path: Path, kernel: str, candidate: str, pins: dict[str, int] | None = None,
            activation: str | None = None, shape: str = RAGGED) -> tuple[str, VerifyReport]:
    """Solve ``candidate`` (with ``pins``) as ``export --format ttlang`` does, write its kernel file, verify it."""
    kernel_file = None
    if kernel in SOURCES:
        kernel_file = tmp_path / f"{kernel}.py"
        kernel_file.write_text(SOURCES[kernel])
    hw = load_hardware(HW)
    program = load_program(str(kernel_file) if kernel_file else kernel)
    problem = make_problem(program, shape, activation=activation, target=KernelTarget.ttlang)
    (result,) = Session(hw, problem).solve(pins or {}, SolveOptions(), candidates=[candidate])
    assert result.solution is not None, result.status
    doc = schedule_document(hw, HW, str(kernel_file) if kernel_file else kernel, problem, result, SolveOptions())
    path = tmp_path / "kernel.py"
    source = ttlang_source(rebuild(doc, kernel_file=kernel_file), doc)
    path.write_text(source)
    report = verify_kernel_file(path, timeout_seconds=300, kernel_file=kernel_file)
    assert report.pcc >= PCC_MIN, report.pcc
    assert report.traffic_equal, report.differences()
    assert report.compile_passed is not False, report.compiled
    if report.compiled is not None:  # the compiler's circular buffers are the model's L1
        assert report.compiled.cb_l1_bytes == result.solution.l1_bytes, report.compiled.circular_buffers
    return source, report


def test_a_dsl_kernel_with_a_row_vector_verifies(tmp_path: Path) -> None:
    """The quick tier's one: the rows on y, bias[W] multicast down the column, 5 x 3 blocks pinned."""
    source, report = _verify(tmp_path, "silu_bias", "H@y,W@x|x=dram,bias=mcast_y",
                             {"grid_x": 1, "grid_y": 2, "block_h": 5, "block_w": 3})
    assert "BLOCK_H, BLOCK_W = 5, 3" in source
    # each core: 5 x 6 tiles in 2 blocks; bias: 3 tiles per block, read by core (0, 0) and sent to (0, 1)
    assert report.simulated.dram_read_tiles == {"x": 60, "bias": 2 * 3}
    assert report.simulated.pipe_received_tiles == {(0, 1): 2 * 3}


@pytest.mark.slow
@pytest.mark.parametrize(("kernel", "candidate", "pins"), [
    ("silu_bias", "W@y,H@x|x=dram,bias=dram", {}),
    ("silu_bias", "W@y,H@x|x=dram,bias=mcast_x", {}),
    ("silu_bias", "H@xy|x=dram,bias=mcast_xy", {}),
    ("silu_bias", "W@xy|x=dram,bias=dram", {}),
    ("silu_bias", "H*W@xy|x=dram,bias=dram", {"per_core_H*W": 6, "block": 3}),
    ("scale_shift", "H@y,W@x|x=dram,s=mcast_x,c=mcast_xy", {}),
    ("scale_shift", "W@y,H@x|x=dram,s=mcast_y,c=mcast_x", {"block_h": 2}),
    ("scale_shift", "W@xy|x=dram,s=mcast_xy,c=dram", {}),
    ("scale_shift", "H*W@xy|x=dram,s=dram,c=mcast_xy", {}),
    ("binary", "H@xy|a=dram,b=dram", {"grid_x": 3, "grid_y": 1, "block_h": 2, "block_w": 3}),
])
def test_every_layout_and_every_way_a_broadcast_travels(tmp_path: Path, kernel: str, candidate: str,
                                                        pins: dict[str, int]) -> None:
    _verify(tmp_path, kernel, candidate, pins)


@pytest.mark.slow
@pytest.mark.parametrize(("activation", "pins"), [("gelu", {"grid_x": 1, "grid_y": 1}), ("recip", {})])
def test_unary_on_one_core_and_spread(tmp_path: Path, activation: str, pins: dict[str, int]) -> None:
    """The thin tensor of the issue, at a ragged width: on one core (pinned) and as the solver spreads it."""
    _, report = _verify(tmp_path, "unary", "W@xy|x=dram", pins, activation, "H=32,W=1000")
    assert report.simulated.dram_read_tiles == {"x": 32}


def test_what_the_writer_cannot_express_is_refused_naming_it(tmp_path: Path) -> None:
    from loom_explorer.export.ttlang_elementwise import elementwise_unsupported

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
