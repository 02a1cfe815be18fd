"""The DSL's data-movement parts: ``Move``, ``Tensor(layout=...)`` and ``Dim(part_of=...)`` are checked where
they are built, and a part of a dimension takes its extent from the shape."""

from __future__ import annotations

import pytest

from loom_explorer.problem import ProblemError, make_problem
from loom_explorer.program import Dim, Move, ProgramError, Tensor, TileProgram

DIMS = (Dim("H", "parallel"), Dim("Hx", "parallel", part_of="H"), Dim("W", "parallel"))


def _program(*tensors: Tensor, dims: tuple[Dim, ...] = DIMS, ops: tuple[Move, ...] = (Move("x", "y"),)) -> TileProgram:
    return TileProgram(name="moves", description="", dims=dims, tensors=tensors, ops=ops)


def test_a_transpose_with_padding_is_a_program() -> None:
    program = _program(Tensor("x", ("Hx", "W"), "input", layout="row_major"), Tensor("y", ("W", "H"), "output"))
    assert program.tensor("x").layout == "row_major" and program.tensor("y").layout == "tile"
    assert program.whole("Hx") == "H" and program.whole("W") == "W"
    # indexed by a part of H: x is not the same for every h, so it is never multicast along H
    assert not program.shared_along("x", "H")


def test_a_part_defaults_to_its_whole_and_may_not_exceed_it() -> None:
    program = _program(Tensor("x", ("Hx", "W"), "input"), Tensor("y", ("H", "W"), "output"))
    assert dict(make_problem(program, "H=64,W=96").shape)["Hx"] == 64
    assert dict(make_problem(program, "H=64,Hx=40,W=96").shape)["Hx"] == 40
    with pytest.raises(ProblemError, match="shape Hx=100 exceeds H=64"):
        make_problem(program, "H=64,Hx=100,W=96")


@pytest.mark.parametrize(
    ("tensors", "dims", "message"),
    [
        (
            (Tensor("x", ("Hx",), "input"), Tensor("y", ("H", "W"), "output")),
            DIMS,
            r"index different dimensions \(\['W'\]",
        ),
        (
            (Tensor("x", ("Hx", "H", "W"), "input"), Tensor("y", ("H", "W"), "output")),
            DIMS,
            "indexes dimension H twice",
        ),
        (
            (Tensor("x", ("Hx", "W"), "input"), Tensor("y", ("H", "W"), "output")),
            (Dim("H", "parallel"), Dim("Hx", "parallel", part_of="Q"), Dim("W", "parallel")),
            "part of unknown dimension 'Q'",
        ),
        (
            (Tensor("x", ("Hx", "W"), "input"), Tensor("y", ("H", "W"), "output")),
            (Dim("H", "parallel"), Dim("Hx", "parallel", tile=1, part_of="H"), Dim("W", "parallel")),
            "differs in tile or kind",
        ),
    ],
)
def test_malformed_moves_are_refused_naming_the_fault(
    tensors: tuple[Tensor, ...], dims: tuple[Dim, ...], message: str
) -> None:
    with pytest.raises(ProgramError, match=message):
        _program(*tensors, dims=dims)


def test_a_move_reads_no_output_and_layouts_are_named() -> None:
    with pytest.raises(ProgramError, match="reads output y"):
        _program(
            Tensor("x", ("H", "W"), "input"),
            Tensor("y", ("H", "W"), "output"),
            Tensor("z", ("H", "W"), "output"),
            ops=(Move("x", "y"), Move("y", "z")),
        )
    with pytest.raises(ProgramError, match="layout 'sticks' is not one of 'tile', 'row_major'"):
        Tensor("x", ("H",), "input", layout="sticks")  # type: ignore[arg-type]
