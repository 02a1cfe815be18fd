"""A kernel written only in the tile DSL, as docs/dsl.md teaches: the shipped ``linear_gelu`` and a user's copy.

``y[B, S, N] = gelu(x[B, S, K] @ w[K, N] + bias[N])``: the weight is broadcast over the batch ``B`` and the
sequence ``S``. The checks here are written from the DSL's definitions (a tensor is shared along every
dimension it does not mention; of several row dimensions the last declared is ``M``), not from the
engine's code: roles, multicast options, a solve on wormhole_n150 accepted by the referee with the fused
epilogue costed, the worked example of docs/dsl.md loaded from a file of its own and solved through the
CLI, and malformed user kernels reported with the file or the problem named.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from loom_helpers import assert_result_sound

from loom_explorer import cli
from loom_explorer.families.contraction.program import analyse_contraction
from loom_explorer.mapping import Comm, enumerate_candidates
from loom_explorer.mapping.candidate import Axis
from loom_explorer.problem import ProblemError, make_problem
from loom_explorer.program import (
    Eltwise,
    KernelError,
    Matmul,
    ProgramStructureError,
    TileProgram,
    list_kernels,
    load_program,
)
from loom_explorer.validate import referee

ROOT = Path(__file__).resolve().parents[2]
SHAPE = "B=2,S=128,K=128,N=128"  # 2 sequences, 4 tiles each of S, K and N: every dimension can be spread


def docs_listing() -> str:
    """The complete kernel file of docs/dsl.md's worked example (the one block defining PROGRAM)."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "dsl.md").read_text(), flags=re.S)
    full = [b for b in blocks if "PROGRAM = TileProgram(" in b]
    assert len(full) == 1, "docs/dsl.md should hold exactly one complete kernel listing"
    return full[0]


@pytest.fixture(scope="module")
def program() -> TileProgram:
    return load_program("linear_gelu")


@pytest.fixture()
def user_kernel(tmp_path) -> Path:
    path = tmp_path / "my_linear.py"
    path.write_text(docs_listing())
    return path


# ------------------------------------------------------------------------------------ the shipped kernel


def test_shipped_kernel_loads(program):
    assert "linear_gelu" in list_kernels()
    assert load_program(ROOT / "kernels" / "linear_gelu.py") == program  # by name or by path
    assert program.name == "linear_gelu"
    assert [t.name for t in program.inputs] == ["x", "w", "bias"]
    assert [t.name for t in program.outputs] == ["y"]
    assert not any(t.optional for t in program.tensors)  # the bias is always on
    assert program.dim("B").tile == 1 and program.dim("S").tile == 32
    assert [op for op in program.ops if isinstance(op, Matmul)] == [Matmul("x", "w", "y")]


def test_roles_from_the_access_maps(program):
    con = analyse_contraction(program)
    assert (con.matmul.a, con.matmul.b, con.matmul.out) == ("x", "w", "y")
    assert con.m_dim == "S"  # the innermost row dim; B is the outer one that only x mentions
    assert (con.n_dim, con.k_dim) == ("N", "K")
    assert con.batch_dims == ("B",)
    assert con.epilogue == (Eltwise("add", "y", unit="fpu", operand="bias"), Eltwise("gelu", "y", unit="sfpu"))
    # the weight is shared along B and S (it mentions neither); x along N only
    assert [d for d in ("B", "S", "N", "K") if program.shared_along("w", d)] == ["B", "S"]
    assert [d for d in ("B", "S", "N", "K") if program.shared_along("x", d)] == ["N"]


def test_gelu_is_costed_by_every_shipped_chip():
    from loom_explorer.hardware import list_hardware, load_hardware

    for name in list_hardware():
        assert "gelu" in load_hardware(name).compute.sfpu_tile_cycles, name


def _mcast_axes(comm: Comm, axes) -> set[Axis]:
    """Grid axes (x/y/xy) a comm multicasts along; mcast_xy covers every axis of the layout."""
    if comm is Comm.mcast_xy:
        return {a for a, _ in axes}
    return {comm.axis} if comm.axis else set()


def test_weight_is_multicast_exactly_where_it_is_shared(program):
    candidates = enumerate_candidates(make_problem(program, SHAPE))
    assert candidates
    w_dims = set(program.tensor("w").dims)
    x_dims = set(program.tensor("x").dims)
    by_layout: dict = {}
    for c in candidates:
        on_axis = dict(c.axes)
        for tensor, dims in (("w", w_dims), ("x", x_dims)):
            comm = c.comm(tensor)
            assert comm is not Comm.local  # nothing lives in L1 here
            for axis in _mcast_axes(comm, c.axes):
                assert on_axis[axis] not in dims, f"{c.name}: {tensor} multicast along {on_axis[axis]}"
        by_layout.setdefault(c.axes, set()).add(c.comm("w"))
    for axes, offered in by_layout.items():
        shared = {a for a, d in axes if d not in w_dims}
        expected = {Comm.dram}
        expected |= {Comm(f"mcast_{a}") for a in shared}
        if {"x", "y"} <= shared:
            expected.add(Comm.mcast_xy)
        assert offered == expected, f"w on {axes}: {sorted(offered)} != {sorted(expected)}"
    # both kinds of reuse show up: w travels along an axis carrying the batch and one carrying the sequence
    carried = {dict(c.axes)[a] for c in candidates for a in _mcast_axes(c.comm("w"), c.axes)}
    assert carried == {"B", "S"}


def test_solves_on_n150_with_the_epilogue_costed(n150, program, solve_cached):
    session, results = solve_cached(n150, program, SHAPE)
    assert len(results) == len(session.schedules) == len(enumerate_candidates(make_problem(program, SHAPE)))
    feasible = [r for r in results if r.solution is not None]
    assert feasible and all(r.status in ("optimal", "feasible") for r in results)
    per_tile = n150.compute.eltwise_tile_cycles + n150.compute.sfpu_tile_cycles["gelu"]
    for r in feasible:
        schedule = session.schedule(r.candidate_name)
        values = r.solution.values()
        verdict = referee(schedule, values)
        assert verdict.legal, f"{r.candidate_name}: {verdict.violations}"
        assert verdict.solution.latency_cycles == r.solution.latency_cycles
        assert_result_sound(schedule, r)
        breakdown = dict(r.solution.breakdown)
        out_tiles = values["per_core_B"] * values["per_core_S"] * values["per_core_N"]
        assert breakdown["epilogue"] == out_tiles * per_tile > 0, r.candidate_name


def test_bias_and_activation_are_fixed_by_the_kernel(program):
    with pytest.raises(ProblemError, match="no optional tensor"):
        make_problem(program, SHAPE, enabled={"bias"})


# ------------------------------------------------------------------------------ a kernel of the user's


def test_docs_listing_is_the_shipped_kernel(user_kernel, program):
    assert load_program(user_kernel) == program
    assert load_program(str(user_kernel)) == program


def test_user_kernel_file_solves_through_the_cli(user_kernel, capsys):
    code = cli.main(["solve", str(user_kernel), "--hw", "wormhole_n150", "--shape", SHAPE, "--top", "1"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith(f"linear_gelu {SHAPE.replace('K=128,N=128', 'N=128,K=128')} on wormhole_n150")
    assert re.search(r"^\s+epilogue\s+[1-9]", out, flags=re.M)


def _variant(old: str, new: str) -> str:
    text = docs_listing()
    assert old in text
    return text.replace(old, new)


@pytest.mark.parametrize(
    "text, culprit",
    [
        ("X = 1\n", "defines no PROGRAM"),
        ("raise RuntimeError('kernel boom')\n", "failed to import: RuntimeError: kernel boom"),
        ("PROGRAM = 'linear_gelu'\n", "defines no PROGRAM"),
    ],
)
def test_broken_kernel_files_name_the_file(tmp_path, text, culprit):
    path = tmp_path / "broken_kernel.py"
    path.write_text(text)
    with pytest.raises(KernelError) as err:
        load_program(path)
    assert str(path) in str(err.value) and culprit in str(err.value)


def test_unknown_dimension_names_the_file_and_the_tensor(tmp_path):
    path = tmp_path / "unknown_dim.py"
    path.write_text(_variant('Tensor("bias", ("N",)', 'Tensor("bias", ("Q",)'))
    with pytest.raises(KernelError) as err:
        load_program(path)
    message = str(err.value)
    assert str(path) in message and "tensor bias uses unknown dimensions ['Q']" in message


def test_two_matmuls_are_rejected_with_the_problem_named(tmp_path, capsys):
    path = tmp_path / "two_matmuls.py"
    path.write_text(_variant('Matmul("x", "w", "y"),', 'Matmul("x", "w", "y"), Matmul("x", "w", "y"),'))
    program = load_program(path)  # well-formed DSL: the structure check rejects it
    with pytest.raises(ProgramStructureError, match="exactly one Matmul op, found 2"):
        analyse_contraction(program)
    with pytest.raises(ProgramStructureError, match="linear_gelu"):
        enumerate_candidates(make_problem(program, SHAPE))
    assert cli.main(["solve", str(path), "--hw", "wormhole_n150", "--shape", SHAPE]) == 2
    err = capsys.readouterr().err
    assert "exactly one Matmul" in err and "Traceback" not in err


def test_a_summed_dimension_declared_parallel_is_rejected(tmp_path):
    path = tmp_path / "k_parallel.py"
    path.write_text(_variant('Dim("K", "reduction"', 'Dim("K", "parallel"'))
    with pytest.raises(ProgramStructureError, match="K is summed over but declared parallel"):
        analyse_contraction(load_program(path))
