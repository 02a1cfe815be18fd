"""Kernels the contraction model cannot cost are rejected with a reason, never silently mis-costed."""

from __future__ import annotations

import pytest

from loom_explorer.families.contraction.program import analyse_contraction
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import ProblemError, make_problem
from loom_explorer.program import Dim, Eltwise, Matmul, ProgramStructureError, Tensor, TileProgram, load_program

DIMS = (Dim("B", "parallel", tile=1), Dim("M", "parallel"), Dim("N", "parallel"), Dim("K", "reduction"))


def _program(out_dims: tuple[str, ...], a_dims: tuple[str, ...] = ("M", "K"), op: str = "gelu") -> TileProgram:
    return TileProgram(
        name="probe",
        description="",
        dims=DIMS,
        tensors=(Tensor("a", a_dims, "input"), Tensor("b", ("K", "N"), "input"), Tensor("c", out_dims, "output")),
        ops=(Matmul("a", "b", "c"), Eltwise(op, "c")),
    )


@pytest.mark.parametrize("out_dims, a_dims", [(("B", "M", "N"), ("M", "K")), (("M", "N"), ("B", "M", "K"))])
def test_a_dimension_without_a_role_is_an_error(out_dims, a_dims) -> None:
    with pytest.raises(ProgramStructureError, match=r"\['B'\] index no pair"):
        analyse_contraction(_program(out_dims, a_dims))


def test_an_sfpu_op_without_a_cost_names_the_op_and_the_hardware() -> None:
    program = _program(("B", "M", "N"), ("B", "M", "K"), op="swish")
    problem = make_problem(program, "B=2,M=64,N=64,K=64")
    candidate = enumerate_candidates(problem)[0]
    with pytest.raises(ProblemError, match=r"wormhole_n150 has no SFPU cost for op 'swish'"):
        build_schedule(load_hardware("wormhole_n150"), problem, candidate)


def test_activation_needs_an_activation_op() -> None:
    with pytest.raises(ProblemError, match="no activation op"):
        make_problem(load_program("linear_gelu"), "B=2,S=64,K=64,N=64", activation="relu")
