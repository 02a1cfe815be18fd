"""The tile DSL refuses a program that cannot be, at construction, with one line naming what is at fault.

Each case below was once accepted (and mis-costed, or crashed later with a bare Python error): a tile of
0 or fewer elements, an unknown dimension kind, a dimension twice in one access map, an output read by
the matmul, an output no op writes, a boolean where a number is meant. A kernel file that builds such a
program, exits (``sys.exit``, any code) or raises is a ``KernelError`` naming the file: exit 2 on the
command line, never 0 and never 70.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_explorer import cli
from loom_explorer.errors import EXIT_BAD_INPUT, LoomError
from loom_explorer.program import (
    Dim,
    Eltwise,
    Gather,
    KernelError,
    Matmul,
    ProgramError,
    ProgramStructureError,
    Reduce,
    Tensor,
    TileProgram,
    load_program,
)

MNK = (Dim("M", "parallel"), Dim("N", "parallel"), Dim("K", "reduction"))
GEMM_TENSORS = (Tensor("a", ("M", "K"), "input"), Tensor("b", ("K", "N"), "input"), Tensor("c", ("M", "N"), "output"))


def gemm(
    dims: tuple[Dim, ...] = MNK,
    tensors: tuple[Tensor, ...] = GEMM_TENSORS,
    ops: tuple[Matmul | Eltwise | Reduce, ...] = (Matmul("a", "b", "c"),),
) -> TileProgram:
    return TileProgram(name="probe", description="", dims=dims, tensors=tensors, ops=ops)


def test_the_well_formed_probe_is_accepted() -> None:
    assert gemm().dim("M").tiles(33) == 2


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (lambda: Dim("M", "parallel", tile=0), r"dimension M: tile 0 must be a whole number of elements >= 1"),
        (lambda: Dim("M", "parallel", tile=-32), r"dimension M: tile -32 must be"),
        (lambda: Dim("M", "parallel", tile=True), r"dimension M: tile True must be"),
        (lambda: Dim("M", "parallel", tile=32.0), r"dimension M: tile 32.0 must be"),  # type: ignore[arg-type]
        (lambda: Dim("M", "sideways"), r"dimension M: kind 'sideways' is not one of 'parallel', 'reduction'"),  # type: ignore[arg-type]
        (lambda: Dim("M", "parallel", spread=1), r"dimension M: spread 1 must be True or False"),  # type: ignore[arg-type]
        (lambda: Dim("M N", "parallel"), r"dimension name 'M N' must be an identifier"),
        (lambda: Dim("", "parallel"), r"dimension name '' must be an identifier"),
        (lambda: Tensor("a", ("M", "M"), "input"), r"tensor a: its access map \['M', 'M'\] names dimension M twice"),
        (lambda: Tensor("a", "MK", "input"), r"tensor a: dims \(its access map\) 'MK' must be a tuple of names"),  # type: ignore[arg-type]
        (lambda: Tensor("a", ("M", 3), "input"), r"tensor a: .* holds 3, which is not a name"),  # type: ignore[arg-type]
        (
            lambda: Tensor("a", ("M",), "inout"),  # type: ignore[arg-type]
            r"tensor a: role 'inout' is not one of 'input', 'output', 'intermediate'",
        ),
        (lambda: Tensor("a", ("M",), "input", optional="yes"), r"tensor a: optional 'yes' must be True or False"),  # type: ignore[arg-type]
        (lambda: Eltwise("gelu", "c", unit="gpu"), r"Eltwise gelu: unit 'gpu' is not one of 'fpu', 'sfpu'"),  # type: ignore[arg-type]
        (lambda: Eltwise("gelu", "c", when="sometimes"), r"Eltwise gelu: when 'sometimes' is not one of"),  # type: ignore[arg-type]
        (lambda: Eltwise("", "c"), r"op '' must name the operation"),
        (lambda: Matmul("a", None, "c"), r"Matmul: b None must name a tensor of the program"),  # type: ignore[arg-type]
        (lambda: Reduce("min", "r", "x"), r"Reduce: op 'min' is not one of 'sum', 'max', 'mean'"),  # type: ignore[arg-type]
    ],
)
def test_a_part_that_cannot_be_is_refused_naming_it(build, says) -> None:
    with pytest.raises(ProgramError, match=says) as caught:
        build()
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        (
            {
                "tensors": (
                    Tensor("a", ("M", "K"), "input"),
                    Tensor("b", ("K", "N"), "input"),
                    Tensor("c", ("M", "N"), "output"),
                    Tensor("d", ("M", "N"), "output"),
                )
            },
            r"program probe: no op writes output d \(every output is the result of an op\)",
        ),
        ({"ops": (Matmul("a", "c", "c"),)}, r"program probe: Matmul\(a='a', b='c', out='c'\) reads output c"),
        ({"ops": (Matmul("a", "b", "a"),)}, r"program probe: op Matmul\(a='a', b='b', out='a'\) writes input a"),
        ({"ops": (Matmul("a", "b", "c"), Eltwise("gelu", "a"))}, r"op Eltwise\(op='gelu', tensor='a'.* writes input a"),
        (
            {"ops": (Matmul("a", "b", "c"), "gelu")},
            r"program probe: ops\[1\] is a str, not a Matmul, Eltwise, Reduce, Gather or Move",
        ),
        ({"dims": (Dim("M", "parallel"), Dim("N", "parallel"), "K")}, r"program probe: dims\[2\] is a str, not a Dim"),
        (
            {"dims": (Dim("M", "parallel"), Dim("N", "parallel"), Dim("K", "reduction"), Dim("M", "parallel"))},
            r"repeated dimension names",
        ),
    ],
)
def test_a_program_that_cannot_be_is_refused_naming_the_tensor(kwargs, says) -> None:
    with pytest.raises(ProgramError, match=says):
        gemm(**kwargs)


def test_options_given_as_a_bare_string_are_refused() -> None:
    """``options=("causal")`` is the string "causal", not a tuple: refused rather than read letter by letter."""
    with pytest.raises(ProgramError, match=r"options 'causal' must be a tuple of names"):
        TileProgram(
            name="p",
            description="",
            dims=MNK,
            tensors=GEMM_TENSORS,
            ops=(Matmul("a", "b", "c"),),
            options="causal",  # type: ignore[arg-type]
        )


def test_lists_are_kept_as_the_tuples_they_mean() -> None:
    program = TileProgram(
        name="p",
        description="",
        dims=list(MNK),  # type: ignore[arg-type]
        tensors=[
            Tensor("a", ["M", "K"], "input"),  # type: ignore[arg-type]
            Tensor("b", ("K", "N"), "input"),
            Tensor("c", ("M", "N"), "output"),
        ],
        ops=[Matmul("a", "b", "c")],  # type: ignore[arg-type]
    )
    assert program.tensor("a").dims == ("M", "K") and isinstance(program.dims, tuple)
    hash(program)  # the results store keys a problem by its program


def test_the_family_s_refusals_are_program_errors_too() -> None:
    assert issubclass(ProgramStructureError, ProgramError) and issubclass(ProgramError, LoomError)
    assert issubclass(ProgramError, ValueError)  # the explorer's page reports ValueErrors as the message


# ------------------------------------------------------------------------------------ kernel files

GOOD = """from loom_explorer.program import Dim, Matmul, Tensor, TileProgram
PROGRAM = TileProgram(name="k", description="", dims=(Dim("M", "parallel"), Dim("N", "parallel"),
    Dim("K", "reduction")), tensors=(Tensor("a", ("M", "K"), "input"), Tensor("b", ("K", "N"), "input"),
    Tensor("c", ("M", "N"), "output")), ops=(Matmul("a", "b", "c"),))
"""


@pytest.mark.parametrize(
    ("source", "says"),
    [
        (
            GOOD.replace('Dim("M", "parallel")', 'Dim("M", "parallel", tile=0)'),
            r"k\.py: dimension M: tile 0 must be a whole number of elements >= 1",
        ),
        (GOOD.replace('Dim("K", "reduction")', 'Dim("K", "sideways")'), r"k\.py: dimension K: kind 'sideways'"),
        ("import sys\nsys.exit(0)\n", r"k\.py: exits while being imported \(SystemExit\(0\)\)"),
        ("import sys\nsys.exit(3)\n", r"k\.py: exits while being imported \(SystemExit\(3\)\)"),
        ("raise SystemExit('bye')\n", r"k\.py: exits while being imported \(SystemExit\('bye'\)\)"),
        ("exit()\n", r"k\.py: exits while being imported"),
        ("raise RuntimeError('two\\nlines')\n", r"k\.py: failed to import: RuntimeError: two lines$"),
        ("PROGRAM = 3\n", r"k\.py: defines no PROGRAM = TileProgram"),
    ],
    ids=["tile0", "sideways", "exit0", "exit3", "exit_text", "exit_builtin", "raises", "no_program"],
)
def test_a_kernel_file_that_exits_raises_or_builds_nonsense_is_a_kernel_error(
    tmp_path: Path, source: str, says: str
) -> None:
    path = tmp_path / "k.py"
    path.write_text(source)
    with pytest.raises(KernelError, match=says) as caught:
        load_program(path)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "source",
    [GOOD.replace('Dim("M", "parallel")', 'Dim("M", "parallel", tile=0)'), "import sys\nsys.exit(0)\n"],
    ids=["tile0", "exits"],
)
def test_the_command_line_exits_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str
) -> None:
    path = tmp_path / "k.py"
    path.write_text(source)
    status = cli.main(["solve", str(path), "--hw", "wormhole_n150", "--shape", "M=64,N=64,K=64"])
    err = capsys.readouterr().err
    assert status == EXIT_BAD_INPUT, err
    assert err.startswith(f"loom-explorer: error: {path}: ") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("source", "says"),
    [
        (GOOD.replace('Dim("M", "parallel")', 'Dim("M", "parallel", tile=0)'), "dimension M: tile 0 must be"),
        ("import sys\nsys.exit(0)\n", "exits while being imported"),
    ],
    ids=["tile0", "exits"],
)
def test_the_explorer_reports_the_kernel_s_message_not_a_python_error(tmp_path: Path, source: str, says: str) -> None:
    """What the explorer's page shows (``state.error``) for a kernel that cannot be: the field and the message."""
    from loom_explorer.ui.catalog import InputError
    from loom_explorer.ui.state import ProblemInputs, open_session

    path = tmp_path / "k.py"
    path.write_text(source)
    with pytest.raises(InputError) as caught:
        open_session(ProblemInputs("wormhole_n150", str(path), "M=64,N=64,K=64", "bf16", "hifi2"))
    assert str(caught.value).startswith(f"kernel: {path}: ") and says in str(caught.value)


def test_serve_refuses_a_kernel_file_that_exits_naming_the_flag_and_the_file(tmp_path: Path) -> None:
    """``serve --kernel FILE`` loads the file at startup: one that calls ``sys.exit(0)`` once stopped the server
    with status 0; now the catalog refuses it, as any kernel that cannot be."""
    from loom_explorer.ui.catalog import Catalog, CatalogError

    path = tmp_path / "k.py"
    path.write_text("import sys\nsys.exit(0)\n")
    with pytest.raises(CatalogError, match=rf"^--kernel {path}: {path}: exits while being imported"):
        Catalog.build(kernel_files=[path])


def _gather_program(op: Gather) -> TileProgram:
    return TileProgram(
        name="lookup",
        description="",
        dims=(Dim("P", "parallel", tile=1), Dim("C", "parallel"), Dim("R", "parallel", tile=1)),
        tensors=(
            Tensor("table", ("R", "C"), "input"),
            Tensor("index", ("P",), "input"),
            Tensor("y", ("P", "C"), "output"),
        ),
        ops=(op,),
    )


def test_a_gather_is_an_op_whose_tensors_are_checked_like_any_other() -> None:
    assert _gather_program(Gather("y", "table", "index", rows=4)).ops == (Gather("y", "table", "index", rows=4),)
    with pytest.raises(ProgramError, match="rows 0 must be a whole number >= 1"):
        Gather("y", "table", "index", rows=0)
    with pytest.raises(ProgramError, match="names unknown tensors"):
        _gather_program(Gather("y", "table", "idx"))
    with pytest.raises(ProgramError, match="writes input table"):
        _gather_program(Gather("table", "table", "index"))
