"""The kernel-family registries: every program family has model hooks, shipped kernels land in the family
that models them, and a program of no known shape keeps the contraction's explanation."""

from __future__ import annotations

import pytest

from loom_explorer.model.families import model_families, model_family
from loom_explorer.model.schedule import Constraint
from loom_explorer.program import (
    ProgramStructureError,
    analyse_program,
    load_program,
    program_families,
    program_family,
)
from loom_explorer.program.dsl import Dim, Eltwise, Tensor, TileProgram
from loom_explorer.program.structure import variant_families


def test_every_program_family_has_model_hooks_and_no_other() -> None:
    names = [f.name for f in program_families()] + [f.name for f in variant_families()]
    assert len(set(names)) == len(names)
    assert set(names) == set(model_families())
    assert program_families()[-1].name == "contraction" and program_families()[-1].fallback  # the fallback last


@pytest.mark.parametrize(
    ("kernel", "family"),
    [
        ("gemm", "contraction"),
        ("batched_gemm", "contraction"),
        ("linear_gelu", "contraction"),
        ("flash_attention", "attention"),
        ("unary", "elementwise"),
        ("binary", "elementwise"),
    ],
)
def test_shipped_kernels_belong_to_their_family(kernel: str, family: str) -> None:
    program = load_program(kernel)
    assert program_family(program).name == family
    assert model_family(program).name == family
    analyse_program(program)


def test_a_program_of_no_known_shape_gets_the_contraction_error() -> None:
    # a reduction without a matmul (a row sum): no family models it yet
    program = TileProgram(
        name="rowsum",
        description="y[H] = sum_W x[H, W]",
        dims=(Dim("H", "parallel"), Dim("W", "reduction")),
        tensors=(Tensor("x", ("H", "W"), "input"), Tensor("y", ("H",), "output")),
        ops=(Eltwise("add", "y", unit="fpu", operand="x"),),
    )
    assert program_family(program).name == "contraction"
    with pytest.raises(ProgramStructureError, match="exactly one Matmul op, found 0"):
        analyse_program(program)


def test_family_constraints_must_name_a_constraint_family(n150) -> None:
    from loom_explorer.families.contraction.quantities import build_quantities
    from loom_explorer.mapping.enumerate import enumerate_candidates
    from loom_explorer.model.constraints import constraints
    from loom_explorer.model.expr import const
    from loom_explorer.problem import make_problem

    problem = make_problem(load_program("gemm"), "M=256,K=256,N=256")
    q = build_quantities(n150, problem, enumerate_candidates(problem)[0])
    stray = Constraint("stray", "no_such_family", "le", const(0), const(1), "")
    with pytest.raises(ValueError, match="no_such_family"):
        constraints(q, [], [stray])
