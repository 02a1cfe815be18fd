"""A convolution problem as the GEMM ttnn's conv kernel computes (``program.py``'s docstring):

    M = the output pixels, N = the output channels, K = KH * 32 * ceil(KWC / 32) elements

(each filter row's window padded to whole tiles: the K the sharded factory steps through is the weight
matrix's padded height, ``weight_matrix_height = b.padded_shape()[2]`` in tenstorrent/tt-metal
``ttnn/cpp/ttnn/operations/conv/conv2d/device/conv2d_op_sharded_program_factory.cpp`` @
55e3268f4a5804bee2240c6abda418cadb7e9f04, and the captured weight matrices are padded filter row by filter
row: OFT's 7x7 conv of 8 channels has 448 = 7 x 64 rows, not 416 = 32 * ceil(392/32)). The tensors keep
their names (``in0``, ``in1``, ``bias``, ``out``), formats and placements, so a conv candidate (a layout of
``M`` and ``N`` and the inputs' communication options) is a candidate of the GEMM too, and the contraction
family's model costs it.
"""

from __future__ import annotations

from functools import cache

from loom_explorer.families.convolution.program import analyse_convolution
from loom_explorer.problem import Problem, make_problem
from loom_explorer.program import Dim, Eltwise, Matmul, Tensor, TileProgram

IMPLICIT_GEMM = TileProgram(
    name="conv2d_implicit_gemm",
    description="a convolution's implicit GEMM: in0 [M, K] @ in1 [K, N] -> out [M, N]",
    dims=(
        Dim("M", "parallel", description="output pixels"),
        Dim("N", "parallel", description="output channels"),
        Dim("K", "reduction", description="filter rows x a filter row's window, tile padded"),
    ),
    tensors=(
        Tensor("in0", ("M", "K"), "input"),
        Tensor("in1", ("K", "N"), "input"),
        Tensor("bias", ("N",), "input", optional=True),
        Tensor("out", ("M", "N"), "output"),
    ),
    ops=(
        Matmul("in0", "in1", "out"),
        Eltwise("add", "out", unit="fpu", operand="bias"),
        Eltwise("activation", "out", unit="sfpu"),
    ),
)
"""The GEMM every convolution program maps to (its tensors named as ``kernels/conv2d.py``'s)."""


def k_tiles(problem: Problem) -> int:
    """The implicit GEMM's K in tiles: filter rows times a filter row's window in tiles."""
    conv = analyse_convolution(problem.program)
    return problem.elements(conv.rows_dim) * problem.tiles(conv.window_dim)


def gemm_problem(problem: Problem) -> Problem:
    """``problem``'s implicit GEMM (module docstring), with its formats, placements, fidelity, bias and
    activation."""
    return _gemm_problem(problem)


@cache
def _gemm_problem(problem: Problem) -> Problem:
    conv = analyse_convolution(problem.program)
    names = {conv.matmul.a: "in0", conv.matmul.b: "in1", conv.matmul.out: "out"}
    names.update({t.name: t.name for t in problem.program.tensors if t.name not in names})
    shape = {"M": problem.elements(conv.m_dim), "N": problem.elements(conv.n_dim), "K": 32 * k_tiles(problem)}
    return make_problem(
        IMPLICIT_GEMM,
        shape,
        problem.data_format(conv.matmul.a),
        problem.fidelity,
        formats={names[t]: f for t, f in problem.formats if names.get(t) in IMPLICIT_GEMM_TENSORS},
        placements={names[t]: p for t, p in problem.placements if names.get(t) in IMPLICIT_GEMM_TENSORS},
        fp32_acc=problem.fp32_acc,
        enabled={names[t] for t in problem.enabled if names.get(t) in IMPLICIT_GEMM_TENSORS},
        activation=problem.activation,
        target=problem.target,
    )


IMPLICIT_GEMM_TENSORS = frozenset(t.name for t in IMPLICIT_GEMM.tensors)
