"""A kernel file is its schedule: ``verify`` holds every module-level constant of an exported TT-Lang file
(shape, grid, chunks, blocks, buffer depths ...) to the export of the schedule the file embeds, for every
writer (GEMM, FlashAttention, flash-decoding, element-wise, row reduction), and names each one that differs
with its value in the file and in the schedule. Grouped-query attention keeps its key/value heads in the
export (attention and flash-decoding). No simulator runs here: a file whose constants differ is not simulated."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from loom_explorer.deploy.verify import embedded_document, verify_kernel_file
from loom_explorer.export.schedule_json import rebuild, schedule_document
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttlang.contract import constant_mismatches, kernel_contract, module_constants
from loom_explorer.targets.ttlang.exporter import ttlang_source, unsupported_reason

HW = "wormhole_n150"
# (kernel, shape, options, candidate or None for the best one the export writes, pins): one per writer
KERNELS: dict[str, tuple[str, str, tuple[str, ...], str | None, dict[str, int]]] = {
    "gemm": ("gemm", "M=64,K=64,N=64", (), None, {}),
    "attention": (
        "flash_attention",
        "B=1,H=4,Hkv=2,Sq=128,Skv=128,D=64",
        ("causal",),
        "H*Sq@xy|q=dram,k=dram,v=dram|balanced",
        {},
    ),
    "decode": ("flash_attention", "B=1,H=8,Hkv=2,Sq=1,Skv=256,D=64", (), "Hkv@xy|q=dram,k=dram,v=dram|kv_split", {}),
    "elementwise": ("binary", "H=64,W=64", (), None, {}),
    "row_reduction": ("softmax", "H=64,W=64", (), None, {}),
}


def _export(out_dir: Path, which: str) -> Path:
    """The TT-Lang file of ``KERNELS[which]``, written as ``export --format ttlang`` writes it."""
    kernel, shape, options, candidate, pins = KERNELS[which]
    hw = load_hardware(HW)
    problem = make_problem(load_program(kernel), shape, options=set(options), target=KernelTarget.ttlang)
    session = Session(hw, problem)
    names = (
        [candidate] if candidate else [s.candidate.name for s in session.schedules if unsupported_reason(s) is None][:1]
    )
    (result,) = session.solve(pins, SolveOptions(), candidates=names)
    assert result.solution is not None, result.status
    doc = schedule_document(hw, HW, kernel, problem, result, SolveOptions())
    path = out_dir / f"{which}.py"
    path.write_text(ttlang_source(rebuild(doc), doc))
    return path


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, Path]:
    out_dir = tmp_path_factory.mktemp("contract")
    return {which: _export(out_dir, which) for which in KERNELS}


def _edit(source: str, name: str) -> tuple[str, str]:
    """``source`` with the module-level constant ``name`` changed (an int + 1, a bool negated, anything else
    replaced by ``0``), and its new value's text."""
    tree = ast.parse(source)
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        target = node.targets[0]
        pairs = (
            [(target, node.value)]
            if isinstance(target, ast.Name)
            else list(zip(target.elts, node.value.elts, strict=True))
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
            else []
        )
        for t, value in pairs:
            if isinstance(t, ast.Name) and t.id == name:
                old = ast.get_source_segment(source, value)
                assert old is not None and value.lineno == value.end_lineno
                if isinstance(value, ast.Constant) and isinstance(value.value, bool):
                    new = repr(not value.value)
                elif isinstance(value, ast.Constant) and isinstance(value.value, int):
                    new = repr(value.value + 1)
                else:
                    new = "0"
                lines = source.splitlines(keepends=True)
                line = lines[value.lineno - 1]
                lines[value.lineno - 1] = line[: value.col_offset] + new + line[value.end_col_offset :]
                return "".join(lines), new
    raise AssertionError(f"no constant {name}")


def test_module_constants_reads_literals_as_values_and_the_rest_as_expressions() -> None:
    source = "A, B = 1, 2  # two\nC = 3\nD = -(-A // 2) if C else B\nE = True\nF = f\ndef g():\n    H = 5\n"
    assert module_constants(source) == {
        "A": "1",
        "B": "2",
        "C": "3",
        "D": "-(-A // 2) if C else B",
        "E": "True",
        "F": "f",
    }
    assert [str(m) for m in constant_mismatches("A, B = 1, 3\nX = 0\n", "A, B = 1, 2\nC = 4\n")] == [
        "constant B: 3 in the file, 2 in the schedule",
        "constant C: missing from the file (the schedule gives 4)",
        "constant X: 0 in the file, not a constant of the schedule's export",
    ]


@pytest.mark.parametrize("which", list(KERNELS))
def test_every_writers_file_has_its_schedules_constants(exported, which: str) -> None:
    """Unedited, each writer's file has every constant of its schedule's export (and the check reads many)."""
    source = exported[which].read_text()
    assert len(module_constants(source)) >= 10
    doc = embedded_document(exported[which])
    built = rebuild(doc)
    assert constant_mismatches(source, ttlang_source(built, doc)) == []
    assert kernel_contract(built).outputs  # verify has a reference for every writer's family


GEMM_CONSTANTS = [
    "GRID_X",
    "GRID_Y",
    "WORKING_CORES",
    "PER_CORE_M",
    "PER_CORE_N",
    "PER_CORE_K",
    "OUT_BLOCK_H",
    "OUT_BLOCK_W",
    "IN0_BLOCK_W",
    "IN0_BUFFER_DEPTH",
    "IN1_BUFFER_DEPTH",
    "CORES_ALONG_K",
    "PARTIAL_BLOCKS",
    "M",
    "N",
    "K",
    "M_PAD",
    "N_PAD",
    "K_PAD",
    "KERNEL",
]


def test_the_gemm_list_is_every_constant_of_the_file(exported) -> None:
    assert sorted(module_constants(exported["gemm"].read_text())) == sorted(GEMM_CONSTANTS)


@pytest.mark.parametrize("name", GEMM_CONSTANTS)
def test_verify_fails_on_each_edited_constant_naming_it(exported, tmp_path, name: str) -> None:
    source = exported["gemm"].read_text()
    old = module_constants(source)[name]
    edited, new = _edit(source, name)
    path = tmp_path / "edited.py"
    path.write_text(edited)
    report = verify_kernel_file(path, compile_it=False)
    assert not report.passed and not report.constants_ok
    assert [str(m) for m in report.constants] == [f"constant {name}: {new} in the file, {old} in the schedule"]
    assert report.to_json()["constants"] == {"equal": False, "differences": [str(report.constants[0])]}
    assert report.to_json()["pcc"] is None and "not simulated" in report.numerics_note


def test_grouped_attention_keeps_its_key_value_heads(exported) -> None:
    attention = module_constants(exported["attention"].read_text())
    assert (attention["B"], attention["H"], attention["HKV"], attention["GROUP"]) == ("1", "4", "2", "H // HKV")
    decode = module_constants(exported["decode"].read_text())
    assert (decode["N_GROUPS"], decode["GROUP"]) == ("2", "4")  # B * Hkv groups of H / Hkv query heads


@pytest.mark.parametrize(
    "which,name",
    [
        ("attention", "HKV"),
        ("attention", "QC"),
        ("decode", "GROUP"),
        ("decode", "KV_CORES"),
        ("elementwise", "COLS"),
        ("row_reduction", "BLOCK_H"),
    ],
)
def test_an_edited_constant_of_every_writer_fails_verify(exported, tmp_path, which: str, name: str) -> None:
    source = exported[which].read_text()
    old = module_constants(source)[name]
    edited, new = _edit(source, name)
    path = tmp_path / f"{which}.py"
    path.write_text(edited)
    report = verify_kernel_file(path, compile_it=False)
    assert [str(m) for m in report.constants] == [f"constant {name}: {new} in the file, {old} in the schedule"]
    assert not report.passed


def test_a_host_tensor_is_read_block_by_block_and_one_too_small_is_named() -> None:
    torch = pytest.importorskip("torch")
    from loom_explorer.targets.ttlang.contract import HostTensor, KernelContractError

    host = torch.arange(8 * 3, dtype=torch.float32).reshape(8, 3)  # 2 blocks of 4 rows, 2 x 2 used in each
    k = HostTensor("k", 0, items=2, rows_per_item=4, rows=2, cols=2)
    assert k.take([host]).tolist() == [[[0, 1], [3, 4]], [[12, 13], [15, 16]]]
    with pytest.raises(KernelContractError, match=r"kernel argument 0 \(k\) is \[6, 3\]: it cannot hold 2 x 2 x 2"):
        k.take([host[:6]])
    with pytest.raises(KernelContractError, match="kernel_arguments\\(\\) gives 0 tensors; k is argument 0"):
        k.take([])
