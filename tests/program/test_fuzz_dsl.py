"""Fuzzing the tile DSL: random dimensions, tensors, access maps and ops either build a program the engine
can use or raise the project's input error (``ProgramError``, ``ProblemError``: a ``LoomError`` of exit
status 2 with a one-line message), never another exception.

Two generators, both starting from a shipped program (GEMM, an element-wise op, RMSNorm, attention):

* one to three well-typed structural changes: an access map, a role, a kind, a tile, a spread flag, an
  op's tensor, an op or a dimension dropped, the causal option toggled (so access maps name unknown
  dimensions, outputs go unwritten or are read by a matmul, statistics lose their rows, ...);
* one field of one part replaced by a value that once got through or crashed later: a tile of 0, a kind
  "sideways", booleans for numbers, ``None``, names that are no identifiers, a dimension twice in an
  access map.

A program that builds is analysed by its family; one its family accepts is made a problem (every dimension
64 elements, a grouped one its group's), its mapping candidates enumerated and the first one's schedule
built on wormhole_n150. Each test runs a bounded number of examples (no deadline: a slow machine must not
fail them).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom_explorer.errors import EXIT_BAD_INPUT, LoomError
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import make_problem
from loom_explorer.program import (
    ProgramError,
    TileProgram,
    analyse_program,
    load_program,
)

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
N150 = load_hardware("wormhole_n150")

VALID = [load_program(k) for k in ("gemm", "binary", "rmsnorm", "flash_attention")]
ODD: list[Any] = [0, -1, -32, True, False, 32.0, "32", None, "", "sideways", "M N", "1x", ("M", "M"), "MK", 3]


@st.composite
def programs(draw: st.DrawFn) -> TileProgram:
    """A shipped program (GEMM, element-wise, RMSNorm, attention) with one to three well-typed structural
    changes: an access map, a role, a kind, a tile, a spread flag, an op's tensor, an op or a dimension
    dropped, the causal option toggled. Most are refused; some are other valid programs."""
    program = draw(st.sampled_from(VALID))
    dims, tensors, ops = list(program.dims), list(program.tensors), list(program.ops)
    options = program.options
    names = [d.name for d in dims]
    for change in draw(
        st.lists(
            st.sampled_from(
                ["access", "role", "kind", "tile", "spread", "op_tensor", "drop_op", "drop_dim", "options"]
            ),
            min_size=1,
            max_size=3,
        )
    ):
        t = draw(st.integers(0, len(tensors) - 1))
        d = draw(st.integers(0, len(dims) - 1))
        o = draw(st.integers(0, len(ops) - 1)) if ops else None
        if change == "access":
            tensors[t] = dataclasses.replace(
                tensors[t], dims=tuple(draw(st.lists(st.sampled_from(names), max_size=3, unique=True)))
            )
        elif change == "role":
            tensors[t] = dataclasses.replace(
                tensors[t], role=draw(st.sampled_from(["input", "output", "intermediate"]))
            )
        elif change == "kind":
            dims[d] = dataclasses.replace(dims[d], kind=draw(st.sampled_from(["parallel", "reduction"])))
        elif change == "tile":
            dims[d] = dataclasses.replace(dims[d], tile=draw(st.sampled_from([1, 32])))
        elif change == "spread":
            dims[d] = dataclasses.replace(dims[d], spread=not dims[d].spread)
        elif change == "op_tensor" and o is not None:
            fields = [
                f.name for f in dataclasses.fields(ops[o]) if f.name in ("a", "b", "out", "tensor", "operand", "source")
            ]
            ops[o] = dataclasses.replace(
                ops[o],
                **{
                    draw(st.sampled_from(fields)):  # type: ignore[arg-type]
                    draw(st.sampled_from([t.name for t in tensors]))
                },
            )
        elif change == "drop_op" and o is not None:
            del ops[o]
        elif change == "drop_dim" and len(dims) > 1:
            del dims[d]
        elif change == "options":
            options = () if options else ("causal",)
    return TileProgram(
        name="fuzzed", description="", dims=tuple(dims), tensors=tuple(tensors), ops=tuple(ops), options=options
    )


def built(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """What ``strategy`` builds, or the ProgramError its constructor raised (re-raised by the test)."""

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        try:
            return draw(strategy)
        except ProgramError as exc:
            return exc

    return build()


def shape_of(program: TileProgram) -> dict[str, int]:
    extents = {d.name: 64 for d in program.dims if d.group_of is None}
    return {**extents, **{d.name: extents.get(d.group_of, 64) for d in program.dims if d.group_of is not None}}


def use(program: TileProgram) -> None:
    """Analyse the program, make a problem of it, enumerate its candidates and build the first's schedule."""
    analyse_program(program)
    problem = make_problem(program, shape_of(program))
    candidates = enumerate_candidates(problem)
    if candidates:
        build_schedule(N150, problem, candidates[0])


def refused_cleanly(exc: LoomError) -> None:
    assert exc.exit_status == EXIT_BAD_INPUT and str(exc) and "\n" not in str(exc), repr(exc)


@FUZZ
@given(built(programs()))
def test_random_programs_build_or_raise_the_input_error(program) -> None:
    try:
        if isinstance(program, ProgramError):  # the DSL refused it while it was built
            raise program
        use(program)
    except LoomError as exc:  # ProgramError, ProblemError
        refused_cleanly(exc)


@FUZZ
@given(st.sampled_from(VALID), st.sampled_from(["dims", "tensors", "ops"]), st.integers(0, 20), st.data())
def test_a_valid_program_with_one_field_replaced_builds_or_raises_the_input_error(program, part, at, data) -> None:
    items = list(getattr(program, part))
    at %= len(items)
    field = data.draw(st.sampled_from([f.name for f in dataclasses.fields(items[at])]))
    try:
        items[at] = dataclasses.replace(items[at], **{field: data.draw(st.sampled_from(ODD))})
        use(dataclasses.replace(program, **{part: tuple(items)}))
    except LoomError as exc:  # ProgramError, ProblemError
        refused_cleanly(exc)
