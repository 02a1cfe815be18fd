"""Parameter domains as intervals (``model/domain.py``): the same sets, texts and CP-SAT domains as the
explicit tuples they replace, divisor sets equal to the naive ones, and the cuts of the domains (L1,
coverage) exact: every value cut is one the constraints reject anyway."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from loom_explorer.families.attention.quantities import slowest_pair_steps
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import DataFormat
from loom_explorer.mapping import Candidate, Comm
from loom_explorer.model.build import build_schedule
from loom_explorer.model.domain import Domain, divisors_up_to
from loom_explorer.model.expr import Var, evaluate
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.cpsat import domain as cp_domain
from loom_explorer.validate import referee

SETS = st.lists(st.integers(-50, 200), min_size=1, max_size=40)


def old_text(v: tuple[int, ...]) -> str:
    """The domain text of the explicit tuples the intervals replace."""
    if len(v) > 2 and v == tuple(range(v[0], v[-1] + 1)):
        return f"{v[0]}..{v[-1]}"
    if len(v) > 12:
        return "{" + ", ".join(map(str, v[:6])) + ", ..., " + ", ".join(map(str, v[-3:])) + "}"
    return "{" + ", ".join(map(str, v)) + "}"


@given(SETS)
def test_a_domain_is_the_sorted_set_of_its_values(values: list[int]) -> None:
    explicit = tuple(sorted(set(values)))
    d = Domain.of(values)
    assert tuple(d) == explicit and len(d) == d.size == len(explicit)
    assert (d.min, d.max) == (explicit[0], explicit[-1]) == (d[0], d[-1])
    assert [d[i] for i in range(-len(explicit), len(explicit))] == list(explicit) * 2
    for x in range(-52, 203):
        assert (x in d) == (x in explicit)
    assert d.text() == old_text(explicit)
    assert d == Domain.of(reversed(values)) and hash(d) == hash(Domain.of(explicit))
    assert d.fixed == (len(explicit) == 1)


@given(SETS)
def test_cp_sat_domain_equals_the_old_explicit_one(values: list[int]) -> None:
    old = cp_model.Domain.from_values(sorted(set(values)))
    assert cp_domain(Var("x", tuple(values))).flattened_intervals() == old.flattened_intervals()  # type: ignore[arg-type]


def test_a_huge_range_costs_no_more_than_a_small_one() -> None:
    d = Domain.range(1, 10**18)
    assert d.size == 10**18 and d.intervals == ((1, 10**18),)
    assert 10**18 in d and 10**18 + 1 not in d and 0 not in d
    assert d[-1] == 10**18 and d[10**17] == 10**17 + 1
    assert d.text() == "1..1000000000000000000"
    assert cp_domain(Var("x", Domain.range(1, 2**40))).flattened_intervals() == [1, 2**40]
    choices = d.choices(100, keep=(123_456_789,))
    assert len(choices) <= 102 and 123_456_789 in choices and choices[0] == 1 and choices[-1] == 10**18


def test_malformed_intervals_are_refused() -> None:
    with pytest.raises(ValueError, match="sorted, disjoint"):
        Domain(((1, 3), (4, 6)))  # adjacent: one interval
    with pytest.raises(ValueError, match="empty domain"):
        Var("x", Domain.range(2, 1))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 10**5), st.integers(1, 5000))
def test_divisors_match_the_naive_ones(n: int, limit: int) -> None:
    naive = tuple(d for d in range(1, n + 1) if n % d == 0)
    assert divisors_up_to(n, limit) == tuple(d for d in naive if d <= limit)


def test_divisors_of_huge_numbers_are_bounded_work() -> None:
    n = 2**40 * 3**10 * 1_000_003
    assert divisors_up_to(n, 100) == tuple(d for d in range(1, 101) if n % d == 0)
    assert divisors_up_to(2**60, 1024) == tuple(2**k for k in range(11))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 400), st.integers(1, 400), st.integers(1, 32), st.integers(1, 32))
def test_slowest_pair_matches_the_enumeration(sq_t: int, skv_t: int, qc: int, kc: int) -> None:
    n_q, n_k = -(-sq_t // qc), -(-skv_t // kc)
    need = [min(-(-(i + 1) * qc // kc), n_k) for i in range(n_q)]
    naive = max(need[j] + (need[n_q - 1 - j] if n_q - 1 - j != j else 0) for j in range(-(-n_q // 2)))
    assert slowest_pair_steps(sq_t, skv_t, qc, kc) == naive


# ------------------------------------------------------------------------- cuts of the domains are exact

GEMM = load_program("gemm")
MCAST = Candidate(axes=(("y", "M"), ("x", "N")), comms=(("in0", Comm.mcast_x), ("in1", Comm.mcast_y)))
ONE_D = Candidate(axes=(("xy", "M"),), comms=(("in0", Comm.dram), ("in1", Comm.dram)))


def least_point(schedule) -> dict[str, int]:
    return {p.name: p.values.min for p in schedule.params}


@pytest.mark.parametrize("candidate", [MCAST, ONE_D], ids=["2d", "1d"])
@pytest.mark.parametrize("dtype", [DataFormat.bfloat16, DataFormat.bfloat8_b, DataFormat.float32])
def test_block_domains_stop_where_l1_alone_rejects_larger_blocks(candidate: Candidate, dtype: DataFormat) -> None:
    hw = load_hardware("wormhole_n150")
    problem = make_problem(GEMM, "M=131072,K=131072,N=131072", dtype)  # 4096 tiles: more than L1 holds
    schedule = build_schedule(hw, problem, candidate)
    l1 = next(c for c in schedule.constraints if c.name == "l1_capacity")
    for name in ("in0_block_w", "out_block_h", "out_block_w"):
        p = schedule.param(name)
        assert p.values.max < 4096 and p.bound  # cut, and says why
        beyond = {**least_point(schedule), name: p.values.max + 1}
        if name == "in0_block_w":  # a divisor set: the next divisor of per_core_K is the next candidate value
            beyond[name] = next(d for d in range(p.values.max + 1, 4097) if 4096 % d == 0)
        assert not l1.holds(beyond), (name, beyond)  # every cut value breaks L1 with everything else least
        assert l1.holds({**least_point(schedule), name: p.values.max}) or name == "in0_block_w"


def test_per_core_domains_start_where_the_most_cores_still_cover_the_extent() -> None:
    hw = load_hardware("wormhole_n150")  # 8x8
    problem = make_problem(GEMM, "M=4096,K=512,N=1024")  # 128 x 16 x 32 tiles
    two_d, one_d = build_schedule(hw, problem, MCAST), build_schedule(hw, problem, ONE_D)
    assert two_d.param("per_core_M").values == Domain.range(16, 128)  # 8 rows
    assert two_d.param("per_core_N").values == Domain.range(4, 32)  # 8 columns
    assert one_d.param("per_core_M").values == Domain.range(2, 128)  # 64 cores
    coverage = [c for c in two_d.constraints if c.family == "coverage"]
    for name in ("per_core_M", "per_core_N"):
        below = {**least_point(two_d), "grid_x": 8, "grid_y": 8, name: two_d.param(name).values.min - 1}
        assert not all(c.holds(below) for c in coverage), name  # one value lower cannot be covered
    verdict = referee(two_d, {**least_point(two_d), "per_core_M": 15})
    assert not verdict.legal and any("per_core_M: 15 is outside its domain 16..128" in v for v in verdict.violations)


def test_domains_of_a_huge_shape_are_intervals() -> None:
    """M = 10**12 elements: 31,250,000,000 tiles, held as one interval; nothing enumerates it."""
    hw = load_hardware("wormhole_n150")
    problem = make_problem(GEMM, "M=1000000000000,K=4096,N=4096")
    schedule = build_schedule(hw, problem, MCAST)
    per_core_m = schedule.param("per_core_M").values
    assert per_core_m == Domain.range(3_906_250_000, 31_250_000_000)
    assert all(len(p.values.intervals) <= 64 for p in schedule.params)
    assert schedule.param("out_block_h").values.max <= hw.l1.usable_bytes // 2048
    point = {**least_point(schedule), "grid_x": 8, "grid_y": 8}
    assert evaluate(schedule.latency, point) > 2**39  # beyond the model's range, which the session says


def test_random_points_of_compact_domains_are_members() -> None:
    rng = random.Random(7)
    for _ in range(100):
        lo = rng.randint(1, 10**12)
        r = Domain.range(lo, lo + rng.randint(0, 10**12))
        x = rng.randint(r.min, r.max)
        assert x in r and r.index(x) == x - r.min and r[r.index(x)] == x
    assert math.prod(len(Domain.range(1, k)) for k in (2, 3, 4)) == 24
