"""Each constraint family, checked by the referee on hand-built concrete assignments.

For every family (grid, coverage, divisibility, dst_capacity, l1_capacity, multicast) there is a legal
assignment and, for each family, a change that breaks exactly that family: the verdict is illegal and
every violation it lists is a constraint of that family, with the numbers in words.

Problem: gemm M=K=N=512 (16 tiles each) on a 4x4 chip, candidate ``M@y,N@x|in0=mcast_x,in1=mcast_y``
(it has every family: the two multicasts need receivers).
"""

from __future__ import annotations

import dataclasses

import pytest
from loom_helpers import families_of, numbers

from loom_explorer.mapping import Candidate, Comm
from loom_explorer.model.build import build_schedule
from loom_explorer.model.constraints import FAMILIES
from loom_explorer.model.expr import evaluate
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.validate import referee

GEMM = load_program("gemm")
MCAST = Candidate(axes=(("y", "M"), ("x", "N")), comms=(("in0", Comm.mcast_x), ("in1", Comm.mcast_y)))
SPLIT_K = Candidate(axes=(("y", "M"), ("x", "K")), comms=(("in0", Comm.dram), ("in1", Comm.dram)), gather_axis="x")
ONE_D = Candidate(axes=(("xy", "M"),), comms=(("in0", Comm.dram), ("in1", Comm.dram)))

# legal: 2x2 cores, 8x8 tiles per core in 4x4 blocks, 2x2 sub-blocks, double-buffered
BASE = dict(
    grid_x=2,
    grid_y=2,
    per_core_M=8,
    per_core_N=8,
    per_core_K=16,
    in0_block_w=2,
    out_block_h=4,
    out_block_w=4,
    out_subblock_h=2,
    out_subblock_w=2,
    in0_buffer_depth=2,
    in1_buffer_depth=2,
)

FAMILY_NAMES = ("grid", "coverage", "divisibility", "dst_capacity", "l1_capacity", "multicast")


@pytest.fixture(scope="module")
def problem():
    return make_problem(GEMM, "M=512,K=512,N=512")


@pytest.fixture(scope="module")
def schedule(tiny_hw, problem):
    return build_schedule(tiny_hw, problem, MCAST)


def test_every_family_is_built(schedule):
    # and the TT-Lang writers' rules, only for the TT-Lang kernels (tests/model/test_ttlang_export.py), and
    # TTNN's even shards, only for the families with sharded layouts (tests/model/test_ttnn_sharding.py)
    assert [f.__name__ for f in FAMILIES] == [*FAMILY_NAMES, "ttlang_export", "ttnn_sharding"]
    assert set(schedule.families) == set(FAMILY_NAMES)
    for c in schedule.constraints:
        assert c.name.startswith(c.family), c.name
        assert c.text()


def test_base_assignment_is_legal(schedule):
    verdict = referee(schedule, BASE)
    assert verdict.legal and verdict.violations == ()
    sol = verdict.solution
    assert sol is not None
    assert sol.latency_cycles == evaluate(schedule.latency, BASE)
    assert sum(v for _, v in sol.breakdown) == sol.latency_cycles
    assert sol.latency_cycles >= schedule.ideal_cycles
    assert sol.latency_cycles >= evaluate(schedule.latency_lower_bound, BASE)
    # the L1 figure is the sum of the named buffers: in0 and in1 double-buffered 4x2 / 2x4 blocks, out 4x4
    assert sol.l1_bytes == (2 * 8 + 2 * 8 + 16) * 2048


# change -> (family, numbers the explanation must carry)
VIOLATIONS = {
    "coverage": (dict(grid_y=3), {16}),  # (3-1)*8 = 16 tiles already cover M = 16: an idle row
    "divisibility": (dict(out_block_h=3, out_subblock_h=1), {3, 8}),  # per_core_M = 8 vs block 3
    "dst_capacity": (dict(out_subblock_h=4, out_subblock_w=4), {16, 8}),  # 16 tiles > 8 Dst tiles
    "l1_capacity": (
        dict(in0_block_w=16, out_block_h=8, out_block_w=8, in0_buffer_depth=3, in1_buffer_depth=3),
        {(3 * 8 * 16 * 2 + 64) * 2048, 1_395_424},
    ),
    "multicast": (dict(grid_x=1, per_core_N=16), {1, 2}),  # in0 multicast along a single column
}


@pytest.mark.parametrize("family", sorted(VIOLATIONS))
def test_change_breaks_exactly_one_family(schedule, family):
    change, expected_numbers = VIOLATIONS[family]
    values = {**BASE, **change}
    verdict = referee(schedule, values)
    assert not verdict.legal and verdict.solution is None
    assert verdict.violations
    assert families_of(schedule, verdict.violations) == {family}
    assert expected_numbers <= numbers(" ".join(verdict.violations)), verdict.violations


def test_grid_family_via_a_schedule_written_for_a_bigger_grid(n150, tiny_hw, problem):
    """The solver can never break the grid family (grid_x/grid_y domains are 1..columns/rows), and the
    referee reports a value outside the domain as a domain violation first. The family exists for a
    hand-written schedule meant for a bigger chip: its parameters (domains of the 8x8 n150) checked
    against the 4x4 chip's constraints."""
    small = build_schedule(tiny_hw, problem, MCAST)
    big = build_schedule(n150, problem, MCAST)
    handwritten = dataclasses.replace(small, params=big.params)
    values = {**BASE, "grid_x": 8, "grid_y": 8, "per_core_M": 2, "per_core_N": 2, "out_block_h": 2, "out_block_w": 2}
    assert referee(big, values).legal  # fine on the 8x8 chip
    verdict = referee(handwritten, values)
    assert not verdict.legal
    assert families_of(handwritten, verdict.violations) == {"grid"}
    assert len(verdict.violations) == 2
    assert {8, 4} <= numbers(" ".join(verdict.violations))


def test_out_of_domain_value_is_a_domain_violation(schedule):
    verdict = referee(schedule, {**BASE, "grid_x": 5})
    assert not verdict.legal
    assert any(v.startswith("grid_x:") and "5" in v for v in verdict.violations)


def test_referee_names_missing_and_unknown_parameters(schedule):
    values = dict(BASE)
    del values["out_block_w"]
    values["warp_size"] = 32
    verdict = referee(schedule, values)
    assert not verdict.legal
    text = " ".join(verdict.violations)
    assert "out_block_w" in text and "warp_size" in text


# ------------------------------------------------------------------------------ other shapes of families


@pytest.mark.parametrize(
    "values, family, name",
    [
        # 1-D: u = ceil(16 / per_core_M) cores, filled row-major into grid_x columns
        (dict(grid_x=2, grid_y=2, per_core_M=2), "coverage", "coverage[M]"),  # 8 cores > 4
        (dict(grid_x=4, grid_y=4, per_core_M=2), "coverage", "coverage[M,last_row]"),  # 8 cores leave row 4 idle
        (dict(grid_x=4, grid_y=1, per_core_M=8), "coverage", "coverage[M,columns]"),  # 2 cores < 4 columns
        (dict(grid_x=4, grid_y=2, per_core_M=2), None, None),  # 8 cores = 4x2 exactly
    ],
)
def test_one_d_coverage(tiny_hw, problem, values, family, name):
    schedule = build_schedule(tiny_hw, problem, ONE_D)
    full = dict(
        per_core_N=16,
        per_core_K=16,
        in0_block_w=2,
        out_block_h=1,
        out_block_w=4,
        out_subblock_h=1,
        out_subblock_w=4,
        in0_buffer_depth=2,
        in1_buffer_depth=2,
        **values,
    )
    verdict = referee(schedule, full)
    if family is None:
        assert verdict.legal, verdict.violations
    else:
        assert families_of(schedule, verdict.violations) == {family}
        assert [v.split(":")[0] for v in verdict.violations] == [name]


def test_split_k_needs_partners(tiny_hw, problem):
    schedule = build_schedule(tiny_hw, problem, SPLIT_K)
    legal = dict(
        grid_x=4,
        grid_y=4,
        per_core_M=4,
        per_core_N=16,
        per_core_K=4,
        in0_block_w=4,
        out_block_h=2,
        out_block_w=4,
        out_subblock_h=2,
        out_subblock_w=4,
        in0_buffer_depth=2,
        in1_buffer_depth=2,
    )
    assert referee(schedule, legal).legal
    assert {b.name for b in schedule.l1_buffers} >= {"partials"}
    verdict = referee(schedule, {**legal, "grid_x": 1, "per_core_K": 16})
    assert [v.split(":")[0] for v in verdict.violations] == ["multicast[split_k]"]


def test_dst_capacity_is_halved_by_fp32_accumulation(tiny_hw):
    problem = make_problem(GEMM, "M=512,K=512,N=512", fp32_acc=True)
    schedule = build_schedule(tiny_hw, problem, MCAST)
    ok = {**BASE, "out_subblock_h": 2, "out_subblock_w": 2}
    assert referee(schedule, ok).legal
    verdict = referee(schedule, {**BASE, "out_subblock_h": 2, "out_subblock_w": 4})  # 8 tiles > 4
    assert families_of(schedule, verdict.violations) == {"dst_capacity"}
    assert {8, 4} <= numbers(verdict.violations[0])
    # fp32 partials into a bf16 output take their own buffer
    assert "interm" in {b.name for b in schedule.l1_buffers}
