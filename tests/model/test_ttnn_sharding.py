"""TTNN's even shards are constraints of the solve for TTNN's kernels (``ttnn_sharding``,
``model/constraints/ttnn_sharding.py``), solved with the real CP-SAT: the best schedule of an L1-sharded
norm is one TTNN can lay out (the export writes its memory config), and an uneven split is
refused naming the rule."""

from __future__ import annotations

from loom_explorer.hardware import load_hardware
from loom_explorer.problem import KernelTarget, Placement, Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttnn.op import ttnn_memory
from loom_explorer.validate import referee

HW = load_hardware("wormhole_n150")
WIDTH = "W@xy|x=local,gamma=dram,eps=dram"  # the width-sharded RMS norm: W's 128 tiles over a 1-D layout


def _problem(kernel: str, shape: str, placement: str, tensors: tuple[str, ...], target=KernelTarget.ttnn) -> Problem:
    placements = {t: Placement(placement) for t in tensors}
    return make_problem(load_program(kernel), shape, placements=placements, target=target)


def _rules(session: Session, candidate: str) -> list[str]:
    return [c.name for c in session.schedule(candidate).constraints if c.family == "ttnn_sharding"]


def test_a_width_sharded_rms_norm_is_solved_to_shards_ttnn_lays_out() -> None:
    session = Session(HW, _problem("rmsnorm", "H=32,W=4096", "l1_width", ("x", "y")))
    assert _rules(session, WIDTH) == ["ttnn_sharding[per_core_W|W]"]
    (result,) = session.solve({}, SolveOptions(), candidates=[WIDTH])
    v = result.solution.values()
    assert 128 % v["per_core_W"] == 0
    shard = ttnn_memory(session.schedule(WIDTH), v)["x"]  # ExportError on a split TTNN has no layout of
    assert isinstance(shard, dict) and shard["shard_shape"] == [32, 32 * v["per_core_W"]]


def test_an_uneven_split_is_refused_naming_the_rule() -> None:
    session = Session(HW, _problem("rmsnorm", "H=32,W=4096", "l1_width", ("x", "y")))
    (result,) = session.solve({}, SolveOptions(), candidates=[WIDTH])
    verdict = referee(session.schedule(WIDTH), {**result.solution.values(), "per_core_W": 6})
    assert not verdict.legal
    assert any(
        v.startswith(
            "ttnn_sharding[per_core_W|W]: TTNN's l1_width sharding needs even shards: per_core_W = 6 does not "
            "divide the 128 tiles of W"
        )
        for v in verdict.violations
    ), verdict.violations


def test_block_shards_fill_the_grid() -> None:
    candidate = "H@y,W@x|x=local,gamma=dram,beta=dram,eps=dram"
    session = Session(HW, _problem("layernorm", "H=256,W=1000", "l1_block", ("x", "y")))
    assert sorted(_rules(session, candidate)) == [
        "ttnn_sharding[per_core_H*grid_y=H]",
        "ttnn_sharding[per_core_W*grid_x=W]",
    ]
    (result,) = session.solve({}, SolveOptions(), candidates=[candidate])
    v = result.solution.values()
    assert v["per_core_H"] * v["grid_y"] == 8 and v["per_core_W"] * v["grid_x"] == 32  # 1000 columns: 32 tiles


def test_element_wise_ops_take_uneven_shards() -> None:
    # TTNN's element-wise ops run uneven shards (the shipped captures ran some): no rule
    session = Session(HW, _problem("binary", "H=3200,W=64", "l1_height", ("a", "b", "y")))
    assert all(not _rules(session, s.candidate.name) for s in session.schedules)


def test_no_rule_for_dram_tensors_nor_for_the_tt_lang_kernels() -> None:
    for problem in (
        make_problem(load_program("rmsnorm"), "H=32,W=4096"),
        _problem("rmsnorm", "H=32,W=4096", "l1_width", ("x", "y"), target=KernelTarget.ttlang),
    ):
        session = Session(HW, problem)
        assert all(not _rules(session, s.candidate.name) for s in session.schedules)
