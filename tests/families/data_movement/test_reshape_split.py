"""The row-major reshape run by two RISC-Vs a core (``families/data_movement/reshape_split.py``): which rows ran
it, and the steady state it gives."""

from __future__ import annotations

import math
from functools import cache

import pytest

from loom_explorer.accuracy.ingest import IngestReport, read_ops_perf
from loom_explorer.data import capture_path
from loom_explorer.export.exporter import SolvedSchedule
from loom_explorer.export.formats import export_blocker
from loom_explorer.families.data_movement.reshape_split import TWO_RISCS, two_riscs_of_row
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttnn.defaults import evaluate_interleaved_default

LATER = (
    "{'logical_output_shape': 'Shape([1408; 42])'; 'recreate_mapping_tensor': 'false'; 'sub_core_grid': 'std::nullopt'}"
)
OLDER = "{'logical_output_shape': 'Shape([1408; 42])'; 'padded_output_shape': 'Shape([1408; 42])'}"


@cache
def _report(name: str) -> IngestReport:
    return read_ops_perf(capture_path(name))


def _default(shape: str, options: frozenset[str]) -> tuple[dict[str, int], int]:
    """(latency terms, rows of the busiest core) of ttnn's interleaved default of a row-major copy on a p150a."""
    problem = make_problem(load_program("copy_rows"), shape, options=options)
    _, evaluated = evaluate_interleaved_default(load_hardware("blackhole_p150a"), problem)
    solution = evaluated.result.solution
    assert solution is not None
    return {"total": solution.latency_cycles, **dict(solution.breakdown)}, dict(solution.params)["per_core_H"]


@pytest.mark.parametrize(
    ("op", "attributes", "in_bytes", "out_bytes", "out_in_dram", "two"),
    [
        ("reshapedeviceoperation", LATER, 12, 84, True, True),  # 84 = 7 * 12: divisible
        ("reshapedeviceoperation", LATER, 50562, 318, False, True),  # 50562 = 159 * 318
        ("reshapedeviceoperation", LATER, 12, 80, True, False),  # neither divides the other
        ("reshapedeviceoperation", OLDER, 12, 84, True, False),  # the older factory: one instance
        ("reshapeviewdeviceoperation", LATER, 12, 84, True, False),  # latest: unaligned DRAM destination
        ("reshapeviewdeviceoperation", LATER, 12, 84, False, True),  # ... but an L1 destination
        ("reshapeviewdeviceoperation", LATER, 64, 512, True, True),  # ... or 16 B-aligned pages
        ("movedeviceoperation", LATER, 12, 84, True, False),
    ],
)
def test_which_reshape_rows_ran_two_riscs(
    op: str, attributes: str, in_bytes: int, out_bytes: int, out_in_dram: bool, two: bool
) -> None:
    """``can_use_dual_kernel``: the later factory's attributes (``sub_core_grid``) and page sizes of which one
    divides the other; the latest (ReshapeView) also wants 16 B-aligned pages or a destination outside DRAM."""
    assert two_riscs_of_row(op, attributes, in_bytes, out_bytes, out_in_dram) is two


def test_two_riscs_halve_the_steps_of_a_core_s_sticks() -> None:
    """9,856 sticks of 6 bfloat16 (12 B) on the p150a's 130 cores: 76 a core, each a step of one stick's read
    (the same step with or without the option, a 12 B page costing the table's smallest transaction). Two
    RISC-Vs take 38 each, so the steady state is 38 steps, not 76; the chip's DRAM share (76 sticks of 12 B at
    the chip's rate, far below) does not bind; launch, fill and drain are unchanged."""
    one, rows = _default("H=9856,W=6", frozenset())
    two, rows_two = _default("H=9856,W=6", frozenset({TWO_RISCS}))
    assert rows == rows_two == math.ceil(9856 / 130) == 76
    assert one["data_movement"] % rows == 0
    step = one["data_movement"] // rows
    assert two["data_movement"] == math.ceil(rows / 2) * step
    assert {k: two[k] for k in ("launch", "fill", "write_back")} == {
        k: one[k] for k in ("launch", "fill", "write_back")
    }


def test_a_core_of_one_stick_is_not_split() -> None:
    """9 sticks over 130 cores: one a core, which only one of the two RISC-Vs gets (``half_pages = 0``): the
    cost is the single RISC-V's."""
    one, _ = _default("H=9,W=25281", frozenset())
    two, _ = _default("H=9,W=25281", frozenset({TWO_RISCS}))
    assert one == two


def test_the_captures_reshape_rows_by_factory() -> None:
    """bh20 OFT's row-major reshapes print ``sub_core_grid``: those whose pages divide (``[N, 6] -> [M, 42]``,
    12 B into 84 B) carry ``two_riscs``; the older OFT capture's print the older attributes and carry none."""
    newer = [op for op in _report("bh20_oft.csv.gz").ops if op.op_code == "ReshapeDeviceOperation"]
    rows = [op for op in newer if op.kernel == "copy_rows"]
    assert rows and all(TWO_RISCS in op.options for op in rows if op.shape["W"] == 6)
    assert not any(TWO_RISCS in op.options for op in newer if op.kernel != "copy_rows")
    older = [
        op
        for op in _report("ops_perf_results_2025_09_18_11_39_20.csv.gz").ops
        if op.op_code == "ReshapeDeviceOperation" and op.kernel == "copy_rows"
    ]
    assert older and not any(op.options for op in older)


def test_a_two_riscs_copy_is_not_exported_as_a_clone() -> None:
    """The option costs ttnn's reshape on two RISC-Vs; the ttnn export writes a clone, which runs one."""
    hw = "blackhole_p150a"
    problem = make_problem(load_program("copy_rows"), "H=256,W=6", options=frozenset({TWO_RISCS}))
    session = Session(load_hardware(hw), problem)
    options = SolveOptions(time_limit_seconds=20)
    result = next(r for r in session.solve({}, options) if r.solution is not None)
    solved = SolvedSchedule(session.schedule(result.candidate_name), result, hw, "copy_rows", options)
    why = export_blocker("ttnn", solved)
    assert why is not None and TWO_RISCS in why
