"""Attention through the solver: constraint families at the referee, CP-SAT vs brute force, pins.

Families: a legal schedule is taken from a CP-SAT solution (chunk sizes pinned so that the changes below
stay inside every domain), then one parameter is changed to break one family; the referee must reject
it with violations that name that family's constraints, with the numbers in words. A nearby change
that keeps the family satisfied is accepted.

Solver: on the 4x4 chip every candidate of small attention problems (plain, causal, grouped heads)
solves to optimality, the referee accepts every schedule and recomputes its latency exactly, and the
exhaustive walk over every parameter assignment finds the same optimum.
"""

from __future__ import annotations

import dataclasses

import pytest
from loom_helpers import assert_result_sound, families_of, numbers

from loom_explorer.brute import brute_force, space_size
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.pins import PinError
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.validate import referee

FA = load_program("flash_attention")
FAMILIES = ("grid", "coverage", "divisibility", "dst_capacity", "l1_capacity", "multicast")


_SESSIONS: dict = {}
_RESULTS: dict = {}


def solve(hw, shape, causal=False, pins=None, candidates=None, **problem_kw):
    """``(session, results)`` of the flash_attention problem, cached for the module. (The suite's
    ``solve_cached`` fixture cannot switch the causal option on: its ``options`` is the SolveOptions.)"""
    key = (hw.name, shape, causal, tuple(sorted(problem_kw.items())))
    if key not in _SESSIONS:
        _SESSIONS[key] = Session(hw, make_problem(FA, shape, options={"causal"} if causal else set(), **problem_kw))
    session = _SESSIONS[key]
    rkey = (key, tuple(sorted((pins or {}).items())), tuple(candidates or ()))
    if rkey not in _RESULTS:
        _RESULTS[rkey] = session.solve(dict(pins or {}), SolveOptions(), candidates=candidates)
    return session, _RESULTS[rkey]


def solved(hw, shape, candidate, pins, causal=False):
    """(schedule, values) of the CP-SAT optimum of one candidate under pins."""
    session, results = solve(hw, shape, causal, pins=pins, candidates=(candidate,))
    (r,) = results
    schedule = session.schedule(candidate)
    assert_result_sound(schedule, r)
    assert r.status == "optimal", (candidate, r.status, r.conflict)
    return schedule, r.solution.values()


# ------------------------------------------------------------------------------ families at the referee

PLAIN = "B=1,H=2,Sq=256,Skv=256,D=64"
PLAIN_2D = "H@y,Sq@x|q=dram,k=dram,v=dram"
CHUNKS = {"q_chunk_size": 128, "k_chunk_size": 128}  # 4 x 4 tiles: room for sub-block changes


@pytest.fixture(scope="module")
def plain(tiny_hw):
    return solved(tiny_hw, PLAIN, PLAIN_2D, CHUNKS)


GQA = "B=1,H=8,Hkv=2,Sq=64,Skv=64,D=64"  # groups of 4 query heads share a k/v head
GQA_MCAST = "H@y,Sq@x|q=dram,k=mcast_y,v=mcast_y"


@pytest.fixture(scope="module")
def grouped(tiny_hw):
    return solved(tiny_hw, GQA, GQA_MCAST, {"q_chunk_size": 32})


def test_solver_schedule_builds_every_family(plain, grouped):
    schedule, values = plain
    # a candidate without multicast or split-K has no multicast constraint to state
    assert set(schedule.families) == set(FAMILIES) - {"multicast"}
    assert set(grouped[0].families) == set(FAMILIES)
    assert referee(schedule, values).legal
    assert (values["q_chunk_size"], values["k_chunk_size"]) == (128, 128)


def check_break(schedule, values, change, family, must_mention=()):
    verdict = referee(schedule, {**values, **change})
    assert not verdict.legal and verdict.solution is None, change
    assert families_of(schedule, verdict.violations) == {family}, verdict.violations
    text = " ".join(verdict.violations)
    assert set(must_mention) <= numbers(text), verdict.violations
    return verdict.violations


def check_keep(schedule, values, change):
    verdict = referee(schedule, {**values, **change})
    assert verdict.legal, (change, verdict.violations)
    return verdict.solution


def test_dst_capacity(plain):
    schedule, values = plain
    violations = check_break(schedule, values, {"qk_subblock_h": 4, "qk_subblock_w": 4}, "dst_capacity", {16, 8})
    assert [v.split(":")[0] for v in violations] == ["dst_capacity[q@k]"]
    check_keep(schedule, values, {"qk_subblock_h": 4, "qk_subblock_w": 2})  # exactly 8 Dst tiles
    # the second matmul's sub-block is checked separately: out 4 x 2 = 8 fits, with D = 2 tiles
    check_keep(schedule, values, {"out_subblock_h": 4, "out_subblock_w": 2})


def test_dst_capacity_with_fp32_accumulation(tiny_hw):
    session, results = solve(tiny_hw, PLAIN, pins=CHUNKS, candidates=(PLAIN_2D,), fp32_acc=True)
    schedule = session.schedule(PLAIN_2D)
    values = results[0].solution.values()
    violations = check_break(
        schedule,
        values,
        {"qk_subblock_h": 4, "qk_subblock_w": 2, "out_subblock_h": 1, "out_subblock_w": 1},
        "dst_capacity",
        {8, 4},
    )
    assert [v.split(":")[0] for v in violations] == ["dst_capacity[q@k]"]
    violations = check_break(
        schedule,
        values,
        {"qk_subblock_h": 1, "qk_subblock_w": 1, "out_subblock_h": 4, "out_subblock_w": 2},
        "dst_capacity",
        {8, 4},
    )
    assert [v.split(":")[0] for v in violations] == ["dst_capacity[s@v]"]
    assert "fp32 accumulation" in violations[0]
    check_keep(schedule, values, {"qk_subblock_h": 2, "qk_subblock_w": 2})


def test_divisibility(plain):
    schedule, values = plain
    violations = check_break(schedule, values, {"qk_subblock_h": 3, "qk_subblock_w": 1}, "divisibility", {3, 4})
    assert [v.split(":")[0] for v in violations] == ["divisibility[qk_subblock_h|q chunk tiles]"]
    violations = check_break(schedule, values, {"qk_subblock_w": 3, "qk_subblock_h": 1}, "divisibility", {3, 4})
    assert [v.split(":")[0] for v in violations] == ["divisibility[qk_subblock_w|k chunk tiles]"]
    violations = check_break(schedule, values, {"out_subblock_h": 3, "out_subblock_w": 1}, "divisibility", {3, 4})
    assert [v.split(":")[0] for v in violations] == ["divisibility[out_subblock_h|q chunk tiles]"]
    check_keep(schedule, values, {"qk_subblock_h": 2, "qk_subblock_w": 1})


def test_divisibility_of_the_head_dim(tiny_hw):
    """out_subblock_w must divide D's tiles: D = 96 (3 tiles) rejects 2, accepts 3."""
    schedule, values = solved(tiny_hw, "B=1,H=2,Sq=128,Skv=128,D=96", "H@xy|q=dram,k=dram,v=dram", {"q_chunk_size": 32})
    violations = check_break(schedule, values, {"out_subblock_w": 2}, "divisibility", {2, 3})
    assert [v.split(":")[0] for v in violations] == ["divisibility[out_subblock_w|D tiles]"]
    check_keep(schedule, values, {"out_subblock_w": 3})


def test_coverage(plain):
    schedule, values = plain
    n_q = 256 // 128
    g, p = values["grid_x"], values["per_core_Sq"]
    assert g * p >= n_q > (g - 1) * p
    # one more column: the last one idle; one fewer: a query chunk without a core
    change = {"grid_x": g + 1} if g < 4 else {"grid_x": g - 1}
    check_break(schedule, values, change, "coverage")
    check_break(schedule, values, {"grid_x": 1, "per_core_Sq": 1}, "coverage", {1, 2})
    # per_core_Sq counts query chunks: more than there are is excess
    check_break(schedule, values, {"grid_x": 1, "per_core_Sq": 3}, "coverage", {3, 2})
    check_keep(schedule, values, {"grid_x": 1, "per_core_Sq": 2})


def test_coverage_ragged_tail_is_legal(plain):
    """Sq = 8 tiles in chunks of 3 tiles: 3 chunks, 2 per core on 2 columns (the last gets one)."""
    schedule, values = plain
    legal = {
        "q_chunk_size": 96,
        "qk_subblock_h": 3,
        "qk_subblock_w": 1,
        "out_subblock_h": 1,
        "grid_x": 2,
        "per_core_Sq": 2,
    }
    check_keep(schedule, values, legal)
    check_break(schedule, values, {**legal, "grid_x": 3}, "coverage")  # (3-1)*2 >= 3: idle column


def test_l1_capacity(tiny_hw):
    """D = 256 (8 tiles) with 16-tile chunks and deep buffers needs far more than the usable L1."""
    schedule, values = solved(tiny_hw, "B=1,H=2,Sq=512,Skv=512,D=256", "H@xy|q=dram,k=dram,v=dram", CHUNKS)
    big = {"q_chunk_size": 512, "k_chunk_size": 512, "q_buffer_depth": 2, "k_buffer_depth": 3, "v_buffer_depth": 3}
    qc = kc = 16
    dt = 8
    # ttnn's streaming kernel: q, k, v, reciprocal scratch, identity, scores, two output blocks, statistics, out
    tiles = 2 * qc * dt + 3 * kc * dt + 3 * kc * dt + 1 + 2 + qc * kc + 2 * qc * dt + 5 * qc + qc * dt
    usable = tiny_hw.l1.usable_bytes
    violations = check_break(schedule, values, big, "l1_capacity", {tiles * 2048, usable})
    assert [v.split(":")[0] for v in violations] == ["l1_capacity"]
    sol = check_keep(schedule, values, {})
    assert sol.l1_bytes <= usable


def test_l1_capacity_counts_the_causal_mask(tiny_hw):
    """The same schedule with the causal mask needs two qc x kc mask blocks in bfp4 (and drops the
    one-tile reciprocal scratch): find chunk sizes that fit only without the mask."""
    plain_s, values = solved(tiny_hw, "B=1,H=2,Sq=512,Skv=512,D=256", "H@xy|q=dram,k=dram,v=dram", CHUNKS)
    causal_s = build_schedule(
        tiny_hw, make_problem(FA, "B=1,H=2,Sq=512,Skv=512,D=256", options={"causal"}), plain_s.candidate
    )
    usable = tiny_hw.l1.usable_bytes
    found = None
    for qc in (4, 8, 12, 16):
        for kc in (4, 8, 12, 16):
            change = {
                "q_chunk_size": 32 * qc,
                "k_chunk_size": 32 * kc,
                "qk_subblock_h": 1,
                "qk_subblock_w": 1,
                "out_subblock_h": 1,
                "q_buffer_depth": 1,
                "k_buffer_depth": 1,
                "v_buffer_depth": 1,
            }
            p, c = referee(plain_s, {**values, **change}), referee(causal_s, {**values, **change})
            if p.legal and not c.legal:
                found = (qc, kc, p, c)
    assert found, "no chunk sizes where only the mask overflows L1"
    qc, kc, p, c = found
    assert families_of(causal_s, c.violations) == {"l1_capacity"}
    assert p.solution.l1_bytes <= usable < p.solution.l1_bytes + 2 * qc * kc * 576 - 2048


def test_multicast_grouped(grouped):
    schedule, values = grouped
    assert values["per_core_H"] in (1, 2)  # a group of 4 heads over >= 2 cores
    # per_core_H = 4 divides the group but leaves one core per group: a multicast to nobody
    violations = check_break(schedule, values, {"per_core_H": 4, "grid_y": 2}, "multicast", {1, 2})
    assert {v.split(":")[0] for v in violations} == {"multicast[k]", "multicast[v]"}
    # per_core_H = 3 does not divide the group of 4: the group constraint and the multicast both fail
    verdict = referee(schedule, {**values, "per_core_H": 3, "grid_y": 3})
    assert not verdict.legal
    names = {v.split(":")[0] for v in verdict.violations}
    assert "multicast[k]" in names and "multicast[v]" in names
    assert "divisibility[per_core_H|k's group of H]" in names
    assert families_of(schedule, verdict.violations) == {"multicast", "divisibility"}
    # feasible: two heads per core, two cores per group, four rows
    check_keep(schedule, values, {"per_core_H": 2, "grid_y": 4})


def test_multicast_along_the_queries(tiny_hw):
    """k/v multicast along a row of query chunks needs at least two columns."""
    schedule, values = solved(tiny_hw, PLAIN, "H@y,Sq@x|q=dram,k=mcast_x,v=mcast_x", CHUNKS)
    assert values["grid_x"] == 2
    violations = check_break(schedule, values, {"grid_x": 1, "per_core_Sq": 2}, "multicast", {1, 2})
    assert {v.split(":")[0] for v in violations} == {"multicast[k]", "multicast[v]"}


def test_grid_family_for_a_schedule_written_for_a_bigger_chip(n150, tiny_hw):
    """The 4x4 chip's domains stop grid_x at 4; a schedule written for the 8x8 n150 breaks the grid family."""
    prob = make_problem(FA, PLAIN)
    small = build_schedule(tiny_hw, prob, _candidate(prob, PLAIN_2D))
    big = build_schedule(n150, prob, small.candidate)
    handwritten = dataclasses.replace(small, params=big.params)
    values = {
        "grid_x": 8,
        "grid_y": 2,
        "per_core_H": 1,
        "per_core_Sq": 1,
        "q_chunk_size": 32,
        "k_chunk_size": 64,
        "qk_subblock_h": 1,
        "qk_subblock_w": 2,
        "out_subblock_h": 1,
        "out_subblock_w": 2,
        "q_buffer_depth": 2,
        "k_buffer_depth": 2,
        "v_buffer_depth": 2,
    }
    assert referee(big, values).legal
    verdict = referee(handwritten, values)
    assert families_of(handwritten, verdict.violations) == {"grid"}
    assert {8, 4} <= numbers(" ".join(verdict.violations))


def _candidate(prob, name):
    from loom_explorer.mapping import enumerate_candidates

    (c,) = [c for c in enumerate_candidates(prob) if c.name == name]
    return c


# ------------------------------------------------------------------------------ solver soundness

SOLVE = [
    ("B=2,H=2,Sq=256,Skv=256,D=64", False, 15),
    ("B=2,H=2,Sq=256,Skv=256,D=64", True, 15),
    ("B=1,H=4,Hkv=2,Sq=128,Skv=128,D=64", False, 12),
    ("B=1,H=4,Hkv=2,Sq=128,Skv=128,D=64", True, 12),
]


def _id(case):
    return case[0] + ("-causal" if case[1] else "")


@pytest.mark.parametrize("case", SOLVE, ids=_id)
def test_every_candidate_solves_optimally_and_soundly(tiny_hw, case):
    shape, causal, count = case
    session, results = solve(tiny_hw, shape, causal)
    assert len(results) == len(session.schedules) == count
    for r in results:
        schedule = session.schedule(r.candidate_name)
        assert r.status == "optimal", (r.candidate_name, r.status)
        assert_result_sound(schedule, r)
        assert [n for n, _ in r.solution.breakdown] == [
            "launch",
            "fill",
            "q_load",
            "qk_matmul",
            "softmax",
            "pv_matmul",
            "kv_streaming",
            "normalize",
            "write_back",
        ]
    lat = [r.solution.latency_cycles for r in results]
    assert lat == sorted(lat)  # ranked best first


# 4-8 s each, with the slow tests; the quick tier's walks are below: the two best candidates under a pinned query
# chunk, and every candidate of the cross-attention kernel (grouped heads, 3 x 3 tiles under the mask)
BRUTE = [
    ("B=2,H=2,Sq=128,Skv=128,D=64", False),
    ("B=2,H=2,Sq=128,Skv=128,D=64", True),
    ("B=1,H=4,Hkv=2,Sq=128,Skv=128,D=64", False),
    ("B=1,H=4,Hkv=2,Sq=128,Skv=128,D=64", True),
    ("B=2,H=2,Sq=96,Skv=160,D=64", False),  # ragged: 3 query tiles, 5 key tiles
    ("B=1,H=2,Sq=160,Skv=160,D=32", True),  # odd tiles under the mask
]


@pytest.mark.slow
@pytest.mark.parametrize("case", BRUTE, ids=_id)
def test_cpsat_optimum_equals_brute_force(tiny_hw, case):
    shape, causal = case
    session, results = solve(tiny_hw, shape, causal)
    assert results
    mismatches = []
    for r in results:
        schedule = session.schedule(r.candidate_name)
        assert_result_sound(schedule, r)
        assert r.status == "optimal", r.candidate_name
        brute = brute_force(schedule, time_limit_seconds=60)
        assert brute.complete, f"{r.candidate_name}: brute force did not finish ({space_size(schedule)} points)"
        assert brute.legal_points > 0
        if brute.best_latency_cycles != r.solution.latency_cycles:
            mismatches.append((r.candidate_name, r.solution.latency_cycles, brute.best_latency_cycles))
        assert brute.best_values is not None
        verdict = referee(schedule, brute.best_values)
        assert verdict.legal and verdict.solution.latency_cycles == brute.best_latency_cycles
    assert not mismatches, f"(candidate, CP-SAT, brute force): {mismatches}"


# ------------------------------------------------------------------------------ pins

PIN_SHAPE = "B=2,H=2,Sq=256,Skv=256,D=64"


def test_pinning_the_query_chunk(tiny_hw):
    session, free = solve(tiny_hw, PIN_SHAPE)
    best_free = {r.candidate_name: r.solution for r in free}
    # a legal value that is not every candidate's free choice, so the pin changes something
    chosen = {s.values()["q_chunk_size"] for s in best_free.values()}
    pin = next(v for v in (32, 64, 128, 256) if v not in chosen or len(chosen) > 1)
    _, pinned = solve(tiny_hw, PIN_SHAPE, pins={"q_chunk_size": pin})
    assert len(pinned) == len(free)
    changed = 0
    for r in pinned:
        schedule = session.schedule(r.candidate_name)
        assert r.status == "optimal", (r.candidate_name, r.status, r.conflict)
        assert_result_sound(schedule, r)
        assert r.solution.values()["q_chunk_size"] == pin
        assert r.solution.latency_cycles >= best_free[r.candidate_name].latency_cycles
        changed += best_free[r.candidate_name].values()["q_chunk_size"] != pin
    assert changed > 0
    # the pinned optimum is the best the exhaustive walk finds under the same pin
    for r in pinned[:2]:
        brute = brute_force(session.schedule(r.candidate_name), pins={"q_chunk_size": pin}, time_limit_seconds=60)
        assert brute.complete and brute.best_latency_cycles == r.solution.latency_cycles


def test_pinning_a_too_large_score_sub_block_is_a_dst_conflict(tiny_hw):
    session, results = solve(tiny_hw, PIN_SHAPE, pins={"qk_subblock_h": 8, "qk_subblock_w": 2})
    assert len(results) == len(session.schedules)
    for r in results:
        assert_result_sound(session.schedule(r.candidate_name), r)
        assert r.status == "conflict", (r.candidate_name, r.status)
        assert r.conflict.families == ("dst_capacity",)
        assert r.conflict.constraints == ("dst_capacity[q@k]",)
        assert dict(r.conflict.pins) == {"qk_subblock_h": 8, "qk_subblock_w": 2}
        assert "dst_capacity" in r.conflict.message and {16, 8} <= numbers(r.conflict.message)


def test_pin_outside_every_domain_is_rejected(tiny_hw):
    session, _ = solve(tiny_hw, "B=1,H=4,Hkv=2,Sq=128,Skv=128,D=64")
    with pytest.raises(PinError, match="qk_subblock_h=8 is outside its domain"):
        session.solve({"qk_subblock_h": 8})  # 4 query tiles: sub-blocks up to 4
    with pytest.raises(PinError, match="unknown pin 'out_block_h'"):
        session.solve({"out_block_h": 1})  # a GEMM parameter


def test_pinned_grouped_multicast_conflict_names_the_group(tiny_hw):
    """Four heads per core on the grouped multicast (groups of 4): no receivers left."""
    session, results = solve(tiny_hw, GQA, pins={"per_core_H": 4}, candidates=(GQA_MCAST,))
    (r,) = results
    assert_result_sound(session.schedule(GQA_MCAST), r)
    assert r.status == "conflict"
    assert "multicast" in r.conflict.families
    assert dict(r.conflict.pins) == {"per_core_H": 4}


# ------------------------------------------------------------------------------ a kernel defined in the tests


def test_cross_attention_kernel_solves_and_matches_brute_force(tiny_hw):
    """The cross-attention of the candidate tests (other names, grouped heads, causal) goes through the
    whole engine: every candidate optimal, sound, and equal to the exhaustive walk."""
    from test_attention_candidates import XATTN

    prob = make_problem(XATTN, "N=1,G=4,Gkv=2,T=96,S=96,E=32", options={"causal"})
    session = Session(tiny_hw, prob)
    results = session.solve({}, SolveOptions())
    assert len(results) == len(session.schedules) >= 8
    assert any(r.candidate_name.endswith("|balanced") for r in results)
    assert any("mem_k=mcast" in r.candidate_name for r in results)  # grouped multicast along G
    for r in results:
        schedule = session.schedule(r.candidate_name)
        assert r.status == "optimal", r.candidate_name
        assert_result_sound(schedule, r)
        brute = brute_force(schedule, time_limit_seconds=60)
        assert brute.complete and brute.best_latency_cycles == r.solution.latency_cycles, r.candidate_name
