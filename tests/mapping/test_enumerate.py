"""Mapping candidates follow from the access maps only.

The reference used here is written from the DSL's definition (a tensor is *shared* along every
dimension it does not mention), independently of ``mapping/enumerate.py``: an input may be multicast
along exactly the grid axes whose dimension does not index it, 2-D multicast needs both axes shared, and
an L1-resident input is never read from DRAM.
"""

from __future__ import annotations

import pytest
from loom_helpers import broadcast_program, transposed_program

from loom_explorer.families.contraction.program import analyse_contraction
from loom_explorer.families.contraction.quantities import build_quantities
from loom_explorer.mapping import Comm, enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.dram_reads import dram_readers
from loom_explorer.model.expr import Const
from loom_explorer.model.latency import read_cycles
from loom_explorer.problem import Placement, make_problem
from loom_explorer.program import load_program

GEMM = load_program("gemm")
BATCHED = load_program("batched_gemm")


def expected_options(program, tensor, axes, placement=Placement.dram):
    """The comm options of ``tensor`` on a layout, from the access maps (independent reference)."""
    dims = set(program.tensor(tensor).dims)
    shared = {axis for axis, d in axes if d not in dims}
    mcasts = set()
    if "xy" in shared:
        mcasts.add(Comm.mcast_xy)
    if "x" in shared:
        mcasts.add(Comm.mcast_x)
    if "y" in shared:
        mcasts.add(Comm.mcast_y)
    if {"x", "y"} <= shared:
        mcasts.add(Comm.mcast_xy)
    if placement is Placement.l1:
        if not shared:
            return {Comm.local}
        # the data sits in L1 of the cores that own it; sharing must cover every shared axis
        return {m for m in mcasts if m is Comm.mcast_xy or {m.axis} == shared}
    return {Comm.dram} | mcasts


def options_by_layout(candidates, tensor):
    out: dict = {}
    for c in candidates:
        out.setdefault(c.axes, set()).add(c.comm(tensor))
    return out


def check_against_maps(problem):
    candidates = enumerate_candidates(problem)
    assert candidates
    con = analyse_contraction(problem.program)
    for tensor in (con.matmul.a, con.matmul.b):
        for axes, got in options_by_layout(candidates, tensor).items():
            want = expected_options(problem.program, tensor, axes, problem.placement(tensor))
            assert got == want, f"{tensor} on {axes}: {sorted(got)} != {sorted(want)}"
    return candidates


# ------------------------------------------------------------------------------------------------ gemm


def test_gemm_has_20_candidates_with_unique_names():
    cands = enumerate_candidates(make_problem(GEMM, "M=256,K=256,N=256"))
    assert len(cands) == 20
    names = [c.name for c in cands]
    assert len(set(names)) == len(names)
    assert len(set(cands)) == 20  # hashable and distinct
    for c in cands:
        assert c.description
        layout = {d for _, d in c.axes}
        if "K" in layout:  # a reduction dim on the grid is split-K, gathered along its axis
            assert c.gather_axis == c.axis_of("K")
        else:
            assert c.gather_axis is None


def test_gemm_layouts():
    cands = enumerate_candidates(make_problem(GEMM, "M=256,K=256,N=256"))
    layouts = {c.axes for c in cands}
    two_d = {a for a in layouts if len(a) == 2}
    assert len(two_d) == 6  # every ordered pair of M, N, K (only one reduction dim)
    assert {a for a in layouts if len(a) == 1} == {(("xy", "M"),), (("xy", "N"),)}  # K is never 1-D


def test_gemm_multicast_only_where_maps_share():
    cands = check_against_maps(make_problem(GEMM, "M=256,K=256,N=256"))
    mn = [c for c in cands if c.axes == (("y", "M"), ("x", "N"))]
    assert {c.comm("in0") for c in mn} == {Comm.dram, Comm.mcast_x}  # in0[M, K] is shared along N (x)
    assert {c.comm("in1") for c in mn} == {Comm.dram, Comm.mcast_y}  # in1[K, N] is shared along M (y)
    assert all(c.comm("in0") is not Comm.mcast_y for c in mn)
    assert len(mn) == 4
    # split-K M@y,K@x: in0[M, K] is indexed by both axes, so it is never multicast
    mk = [c for c in cands if c.axes == (("y", "M"), ("x", "K"))]
    assert {c.comm("in0") for c in mk} == {Comm.dram}
    assert {c.comm("in1") for c in mk} == {Comm.dram, Comm.mcast_y}
    # 1-D M: in1 is shared by every core
    m1 = [c for c in cands if c.axes == (("xy", "M"),)]
    assert {c.comm("in1") for c in m1} == {Comm.dram, Comm.mcast_xy}
    assert {c.comm("in0") for c in m1} == {Comm.dram}


def test_candidate_names_round_trip_through_the_session_lookup(tiny_hw):
    from loom_explorer.solve.solver import Session

    session = Session(tiny_hw, make_problem(GEMM, "M=128,K=128,N=128"))
    for s in session.schedules:
        assert session.schedule(s.candidate.name) is s
    with pytest.raises(KeyError, match="no candidate named"):
        session.schedule("Q@y|in0=dram")


def test_dimension_of_one_tile_is_not_spread():
    cands = check_against_maps(make_problem(GEMM, "M=32,K=256,N=256"))
    assert cands
    assert all("M" not in {d for _, d in c.axes} for c in cands)


@pytest.mark.parametrize("shape", ["M=32,K=32,N=32", "M=32,K=64,N=32"])
def test_single_tile_gemm_has_a_candidate(shape):
    assert enumerate_candidates(make_problem(GEMM, shape))


# ----------------------------------------------------------------------------------------- batched gemm


def test_batched_gemm_candidates_follow_maps():
    cands = check_against_maps(make_problem(BATCHED, "B=3,M=128,K=96,N=64"))
    names = [c.name for c in cands]
    assert len(set(names)) == len(names)
    # nothing is shared across the batch: no multicast along the axis carrying B
    for c in cands:
        b_axis = c.axis_of("B")
        if b_axis is not None:
            for t in ("in0", "in1"):
                assert c.comm(t).axis != b_axis


# ------------------------------------------------------------------------- kernels defined in the test


def test_transposed_contraction_roles_and_multicast():
    program = transposed_program()
    con = analyse_contraction(program)
    assert (con.matmul.a, con.m_dim, con.n_dim, con.k_dim) == ("w", "N", "M", "K")
    cands = check_against_maps(make_problem(program, "M=96,K=64,N=160"))
    assert len(cands) == 20
    layout = [c for c in cands if c.axes == (("y", "M"), ("x", "N"))]
    # w[N, K] is shared along M (rows here), x[K, M] along N (columns here): the opposite of gemm's in0/in1
    assert {c.comm("w") for c in layout} == {Comm.dram, Comm.mcast_y}
    assert {c.comm("x") for c in layout} == {Comm.dram, Comm.mcast_x}


def test_broadcast_operand_is_multicast_across_the_batch():
    program = broadcast_program()
    con = analyse_contraction(program)
    assert (con.m_dim, con.n_dim, con.k_dim, con.batch_dims) == ("M", "N", "K", ("B",))
    cands = check_against_maps(make_problem(program, "B=4,M=64,K=64,N=64"))
    by_layout = options_by_layout(cands, "w")
    # w[K, N] is shared along B and M: multicast on both axes (and 2-D) when they carry B and M
    assert by_layout[(("y", "B"), ("x", "M"))] == {Comm.dram, Comm.mcast_x, Comm.mcast_y, Comm.mcast_xy}
    assert by_layout[(("xy", "B"),)] == {Comm.dram, Comm.mcast_xy}
    assert options_by_layout(cands, "x")[(("y", "B"), ("x", "M"))] == {Comm.dram}


# ---------------------------------------------------------------------------------------- L1 placement


@pytest.mark.parametrize(
    "placements",
    [
        {"in0": Placement.l1},
        {"in1": Placement.l1},
        {"in0": Placement.l1, "in1": Placement.l1, "out": Placement.l1},
    ],
)
def test_l1_inputs_are_local_or_multicast_and_never_read_from_dram(tiny_hw, placements):
    problem = make_problem(GEMM, "M=128,K=96,N=160", placements=placements)
    cands = check_against_maps(problem)
    resident = [t for t in ("in0", "in1") if placements.get(t) is Placement.l1]
    for cand in cands:
        q = build_quantities(tiny_hw, problem, cand)
        for t in resident:
            assert cand.comm(t) in (Comm.local, Comm.mcast_x, Comm.mcast_y, Comm.mcast_xy)
            assert dram_readers(q, t) == Const(0)
            assert read_cycles(q, t) == Const(0)
        sched = build_schedule(tiny_hw, problem, cand)
        shards = {b.name for b in sched.l1_buffers}
        for t in resident:
            assert f"{t}_shard" in shards  # the resident shard takes L1
    if len(resident) == 2:
        for cand in cands:
            assert build_schedule(tiny_hw, problem, cand).dram_read_bytes == Const(0)


def test_l1_in0_options_per_layout():
    cands = enumerate_candidates(make_problem(GEMM, "M=128,K=96,N=160", placements={"in0": Placement.l1}))
    opts = options_by_layout(cands, "in0")
    assert opts[(("y", "M"), ("x", "N"))] == {Comm.mcast_x}  # shared along N: it must travel
    assert opts[(("y", "M"), ("x", "K"))] == {Comm.local}  # each core holds exactly its block
    assert opts[(("xy", "M"),)] == {Comm.local}
    assert opts[(("xy", "N"),)] == {Comm.mcast_xy}
    assert all(c.comm("in0") is not Comm.dram for c in cands)
    assert all(c.comm("in1") is not Comm.local for c in cands)  # in1 stays in DRAM
