"""The attention structure of a program, read from its access maps, and the problem input around it.

``analyse_attention`` must find the roles of the shipped kernel's dimensions, and reject malformed
attention programs (defined here) with a :class:`ProgramStructureError` that names what is wrong. Shape
parsing fills grouped dims (``Hkv`` defaults to ``H``) and checks them; the ``causal`` option exists only
where the program declares it, and needs equal query and key/value lengths (checked when the schedule
is built).
"""

from __future__ import annotations

import dataclasses

import pytest

from loom_explorer.families.attention.program import Attention, analyse_attention, is_attention
from loom_explorer.families.contraction.program import Contraction
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import Placement, ProblemError, make_problem, parse_shape
from loom_explorer.program import (
    Dim,
    Eltwise,
    Matmul,
    ProgramError,
    ProgramStructureError,
    Tensor,
    TileProgram,
    analyse_program,
    load_program,
)
from loom_explorer.solve.solver import Session

FA = load_program("flash_attention")


# ------------------------------------------------------------------------------ the shipped kernel


def test_shipped_kernel_roles():
    st = analyse_attention(FA)
    assert isinstance(st, Attention)
    assert st.q_dim == "Sq"
    assert st.kv_dim == "Skv"
    assert st.head_dim == "D"
    assert st.batch_dims == ("B", "H")
    assert (st.qk, st.pv) == (Matmul("q", "k", "s"), Matmul("s", "v", "o"))
    assert (st.scores, st.output) == ("s", "o")
    assert st.streamed == ("q", "k", "v")
    assert st.spread_dims == ("B", "H", "Sq")  # D is spread=False, Hkv is a grouped index
    assert st.split_dims == ()  # the key/value reduction runs as online-softmax steps on one core
    assert st.flatten is True
    assert st.diagonal == ("Sq", "Skv")
    # per-step, diagonal and final ops as the kernel declares them
    assert [(op.op, op.tensor) for op in st.step_ops("diagonal")] == [("mask", "s")]
    assert [(op.op, op.tensor) for op in st.step_ops("final")] == [("recip", "l"), ("mul", "o")]
    assert len(st.step_ops("step")) == 8
    assert {t.name for t in FA.intermediates} == {"s", "m", "l"}


def test_shipped_kernel_is_dispatched_as_attention_and_gemm_is_not():
    assert is_attention(FA) and isinstance(analyse_program(FA), Attention)
    gemm = load_program("gemm")
    assert not is_attention(gemm) and isinstance(analyse_program(gemm), Contraction)
    with pytest.raises(ProgramStructureError, match="two chained matmuls"):
        analyse_attention(gemm)


def test_grouped_dim_is_declared_on_the_heads():
    hkv = FA.dim("Hkv")
    assert hkv.group_of == "H" and hkv.tile == 1
    assert FA.grouped_by("k", "H") == "Hkv" and FA.grouped_by("v", "H") == "Hkv"
    assert FA.grouped_by("q", "H") is None  # q mentions H directly
    assert not FA.shared_along("k", "H")  # shared only by groups, not along all of H
    assert FA.shared_along("k", "Sq") and not FA.shared_along("q", "Sq")


# ------------------------------------------------------------------------------ malformed programs


def attention(dims=None, tensors=None, ops=None, options=("causal",), name="attn_under_test") -> TileProgram:
    """A well-formed attention program (renamed dims and tensors), with any part replaced."""
    return TileProgram(
        name=name,
        description="attention defined in the test",
        dims=dims
        or (
            Dim("Z", "parallel", tile=1),
            Dim("Q", "parallel"),
            Dim("K", "reduction"),
            Dim("W", "parallel", spread=False),
        ),
        tensors=tensors
        or (
            Tensor("a", ("Z", "Q", "W"), "input"),
            Tensor("b", ("Z", "K", "W"), "input"),
            Tensor("c", ("Z", "K", "W"), "input"),
            Tensor("p", ("Z", "Q", "K"), "intermediate"),
            Tensor("mx", ("Z", "Q"), "intermediate"),
            Tensor("sm", ("Z", "Q"), "intermediate"),
            Tensor("r", ("Z", "Q", "W"), "output"),
        ),
        ops=ops
        or (
            Matmul("a", "b", "p"),
            Eltwise("exp", "p", when="step"),
            Matmul("p", "c", "r"),
            Eltwise("mul", "r", unit="fpu"),
        ),
        options=options,
    )


def replace_dim(program: TileProgram, dim: Dim) -> tuple[Dim, ...]:
    return tuple(dim if d.name == dim.name else d for d in program.dims)


def replace_tensor(program: TileProgram, tensor: Tensor) -> tuple[Tensor, ...]:
    return tuple(tensor if t.name == tensor.name else t for t in program.tensors)


def test_the_well_formed_test_program_is_attention():
    st = analyse_attention(attention())
    assert (st.q_dim, st.kv_dim, st.head_dim, st.batch_dims) == ("Q", "K", "W", ("Z",))
    assert st.spread_dims == ("Z", "Q")


@pytest.mark.parametrize(
    "stats",
    [
        (Tensor("mx", ("Z", "Q"), "intermediate"),),  # one statistic
        (Tensor("mx", ("Z", "Q"), "intermediate"), Tensor("sm", ("Z", "K"), "intermediate")),  # by the key/value dim
        (Tensor("mx", ("Z", "Q"), "intermediate"), Tensor("sm", ("Q",), "intermediate")),  # not per query row
    ],
)
def test_the_running_statistics_are_two_per_query_row(stats):
    """The model keeps the row maximum and the row sum, one value per query row: other statistics are refused
    (they once reached the buffer model and crashed it)."""
    tensors = tuple(t for t in attention().tensors if t.name not in ("mx", "sm")) + stats
    with pytest.raises(
        ProgramStructureError,
        match=r"two running statistics per query row .* indexed by "
        r"\['Q', 'Z'\]; found",
    ):
        analyse_attention(attention(tensors=tensors))


def test_head_dim_declared_spread():
    base = attention()
    bad = attention(dims=replace_dim(base, Dim("W", "parallel")))
    with pytest.raises(ProgramStructureError, match=r"head dimension W .*spread=False"):
        analyse_attention(bad)


@pytest.mark.parametrize(
    ("role", "says"),
    [
        ("input", r"Matmul\(a='a', b='b', out='p'\) writes input p"),
        ("output", r"Matmul\(a='p', b='c', out='r'\) reads output p"),
    ],
)
def test_scores_not_intermediate(role, says):
    """Scores that are an input (written by the first matmul) or an output (read by the second): the DSL
    refuses the program itself."""
    base = attention()
    with pytest.raises(ProgramError, match=says):
        attention(tensors=replace_tensor(base, Tensor("p", ("Z", "Q", "K"), role)))


def test_second_matmul_must_write_the_output():
    base = attention()
    tensors = replace_tensor(base, Tensor("r", ("Z", "Q", "W"), "intermediate")) + (
        Tensor("out2", ("Z", "Q", "W"), "output"),
    )
    with pytest.raises(ProgramError, match=r"no op writes output out2"):
        attention(tensors=tensors)


def test_roleless_dim():
    """A dim only the query mentions is neither batch, head, query nor key/value."""
    base = attention()
    dims = base.dims + (Dim("X", "parallel", tile=1),)
    tensors = replace_tensor(base, Tensor("a", ("Z", "Q", "W", "X"), "input"))
    with pytest.raises(ProgramStructureError, match=r"\['X'\] have no role in attention"):
        analyse_attention(attention(dims=dims, tensors=tensors))


def test_three_matmuls():
    base = attention()
    ops = base.ops + (Matmul("a", "b", "p"),)
    bad = attention(ops=ops)
    with pytest.raises(ProgramStructureError, match=r"two chained matmuls"):
        analyse_attention(bad)
    # whichever model the dispatcher picks, the engine refuses the program with a structure error
    with pytest.raises(ProgramStructureError):
        analyse_program(bad)
    with pytest.raises(ProgramStructureError):
        enumerate_candidates(make_problem(bad, "Z=2,Q=64,K=64,W=64"))


def test_two_unchained_matmuls():
    """o = c @ p (the scores as the second operand) is not the s = q@k, o = s@v chain."""
    ops = (Matmul("a", "b", "p"), Matmul("c", "p", "r"))
    with pytest.raises(ProgramStructureError, match=r"two chained matmuls"):
        analyse_attention(attention(ops=ops))
    assert not is_attention(attention(ops=ops))


def test_key_value_dim_declared_parallel():
    base = attention()
    bad = attention(dims=replace_dim(base, Dim("K", "parallel")))
    with pytest.raises(ProgramStructureError, match=r"K is summed over but declared parallel"):
        analyse_attention(bad)


def test_output_batch_dim_missing_from_the_query():
    base = attention()
    dims = base.dims + (Dim("Y", "parallel", tile=1),)
    tensors = (
        Tensor("a", ("Z", "Q", "W"), "input"),
        Tensor("b", ("Z", "Y", "K", "W"), "input"),
        Tensor("c", ("Z", "Y", "K", "W"), "input"),
        Tensor("p", ("Z", "Y", "Q", "K"), "intermediate"),
        Tensor("r", ("Z", "Y", "Q", "W"), "output"),
    )
    with pytest.raises(ProgramStructureError, match=r"\['Y'\] of r do not index a"):
        analyse_attention(attention(dims=dims, tensors=tensors))


def test_heads_not_in_keys_make_two_query_dims():
    """Heads that the key/value tensors do not mention (directly or grouped) look like query dims."""
    base = attention()
    dims = base.dims + (Dim("Y", "parallel", tile=1),)
    tensors = (
        Tensor("a", ("Z", "Y", "Q", "W"), "input"),
        Tensor("b", ("Z", "K", "W"), "input"),
        Tensor("c", ("Z", "K", "W"), "input"),
        Tensor("p", ("Z", "Y", "Q", "K"), "intermediate"),
        Tensor("r", ("Z", "Y", "Q", "W"), "output"),
    )
    with pytest.raises(ProgramStructureError, match=r"one query .*\['Q', 'Y'\]"):
        analyse_attention(attention(dims=dims, tensors=tensors))


def test_diagonal_op_needs_the_causal_option():
    with pytest.raises(ValueError, match="causal"):
        attention(
            ops=(Matmul("a", "b", "p"), Eltwise("mask", "p", unit="fpu", when="diagonal"), Matmul("p", "c", "r")),
            options=(),
        )


def test_grouped_dim_needs_unit_tiles_and_a_known_parent():
    base = attention()
    with pytest.raises(ValueError, match="tile=1"):
        attention(dims=base.dims + (Dim("Zg", "parallel", group_of="Z"),))
    with pytest.raises(ValueError, match="groups unknown dimension"):
        attention(dims=base.dims + (Dim("Zg", "parallel", tile=1, group_of="nope"),))


# ------------------------------------------------------------------------------ shape and options


def test_hkv_defaults_to_h():
    shape = dict(parse_shape("B=2,H=8,Sq=128,Skv=256,D=64", FA))
    assert shape == {"B": 2, "H": 8, "Hkv": 8, "Sq": 128, "Skv": 256, "D": 64}
    problem = make_problem(FA, "B=2,H=8,Sq=128,Skv=256,D=64")
    assert problem.elements("Hkv") == 8 and problem.tiles("Hkv") == 8
    assert [k for k, _ in problem.shape] == [d.name for d in FA.dims]  # program order


@pytest.mark.parametrize("hkv", [1, 2, 4, 8])
def test_hkv_dividing_h_is_accepted(hkv):
    assert dict(parse_shape(f"B=1,H=8,Hkv={hkv},Sq=64,Skv=64,D=64", FA))["Hkv"] == hkv


@pytest.mark.parametrize("hkv", [3, 5, 16])
def test_hkv_not_dividing_h_names_hkv(hkv):
    with pytest.raises(ProblemError, match=rf"Hkv={hkv} must divide H=8"):
        parse_shape(f"B=1,H=8,Hkv={hkv},Sq=64,Skv=64,D=64", FA)
    with pytest.raises(ProblemError, match="Hkv"):
        make_problem(FA, {"B": 1, "H": 8, "Hkv": hkv, "Sq": 64, "Skv": 64, "D": 64})


def test_missing_heads_is_reported():
    with pytest.raises(ProblemError, match=r"lacks H"):
        parse_shape("B=1,Hkv=2,Sq=64,Skv=64,D=64", FA)


def test_causal_option_on_gemm_is_a_problem_error():
    with pytest.raises(ProblemError, match=r"gemm has no option \['causal'\]"):
        make_problem(load_program("gemm"), "M=64,K=64,N=64", options={"causal"})


def test_unknown_option_on_attention_is_a_problem_error():
    with pytest.raises(ProblemError, match=r"no option \['sliding_window'\]; options: causal"):
        make_problem(FA, "B=1,H=2,Sq=64,Skv=64,D=64", options={"sliding_window"})


def test_causal_needs_equal_lengths_at_build_time(tiny_hw):
    problem = make_problem(FA, "B=1,H=2,Sq=64,Skv=128,D=64", options={"causal"})  # accepted as input
    assert problem.has_option("causal")
    candidate = enumerate_candidates(problem)[0]
    with pytest.raises(ProblemError, match=r"causal attention needs Sq == Skv \(got 64 and 128\)"):
        build_schedule(tiny_hw, problem, candidate)
    with pytest.raises(ProblemError, match=r"Sq == Skv"):
        Session(tiny_hw, problem)
    # equal lengths, or no mask, build fine
    Session(tiny_hw, make_problem(FA, "B=1,H=2,Sq=128,Skv=128,D=64", options={"causal"}))
    Session(tiny_hw, dataclasses.replace(problem, options=frozenset()))


def test_causal_length_check_uses_the_programs_own_dim_names(tiny_hw):
    prog = attention()
    problem = make_problem(prog, "Z=2,Q=64,K=96,W=64", options={"causal"})
    with pytest.raises(ProblemError, match=r"needs Q == K \(got 64 and 96\)"):
        Session(tiny_hw, problem)


def test_attention_rejects_l1_placements(tiny_hw):
    problem = make_problem(FA, "B=1,H=2,Sq=64,Skv=64,D=64", placements={"q": Placement.l1})
    with pytest.raises(ProblemError, match=r"q placed in L1"):
        Session(tiny_hw, problem)


def test_shipped_kernel_loads_on_shipped_hardware():
    """Every shipped chip has the SFPU costs the kernel's ops name (exp, recip)."""
    from loom_explorer.hardware import list_hardware

    problem = make_problem(FA, "B=1,H=2,Sq=64,Skv=64,D=64", options={"causal"})
    candidate = enumerate_candidates(problem)[0]
    for name in list_hardware():
        build_schedule(load_hardware(name), problem, candidate)
