"""The explorer's state (``ui/state.py``) without any widget: problem inputs, solving every candidate,
pins per candidate, conflicts, bad input, the download contract, L1 and NoC traffic of the selection.

Every solve is a real CP-SAT solve on small shapes; sessions are solved once per module and the tests that
pin restore the pins they set (the ``gemm`` fixture frees every pin and re-selects the best candidate).
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from loom_helpers import assert_result_sound, numbers

from loom_explorer.noc.graph import NocGraph
from loom_explorer.problem import example_shape
from loom_explorer.program import load_program
from loom_explorer.report import SCHEMA_VERSION
from loom_explorer.solve.pins import PinError
from loom_explorer.ui.catalog import Catalog, InputError
from loom_explorer.ui.state import (
    DEFAULT_HW,
    DEFAULT_KERNEL,
    ExplorerState,
    ProblemInputs,
    Snapshot,
    open_session,
)
from loom_explorer.validate import evaluate_schedule

GEMM_1K = "M=1024,K=1024,N=1024"
BEST_1K = "M@y,N@x|in0=mcast_x,in1=mcast_y"  # the best candidate of gemm 1024^3 on the n150
SMALL = "M=256,K=256,N=256"
FEASIBLE = {"optimal", "feasible"}


def _latency(result):
    return result.solution.latency_cycles if result.solution else None


def restore(st: ExplorerState, best: str) -> None:
    """Free every pin of every candidate, select ``best`` and drop the kept comparison."""
    for r in list(st.results):
        if r.pins:
            st.select(r.candidate_name)
            st.free()
    st.select(best)
    st.compare = None


@pytest.fixture(scope="module")
def solved_1k():
    """gemm 1024^3 on the n150, every candidate solved without pins; and the unpinned latencies."""
    st = ExplorerState(shape=GEMM_1K)
    st.solve_all()
    return st, {r.candidate_name: _latency(r) for r in st.results}


@pytest.fixture
def gemm(solved_1k):
    st, _ = solved_1k
    restore(st, BEST_1K)
    assert st.pins == {} and st.candidate == BEST_1K
    yield st
    restore(st, BEST_1K)


@pytest.fixture
def optimum(solved_1k):
    """Unpinned optimum latency per candidate."""
    return solved_1k[1]


# ------------------------------------------------------------------------------------------ inputs


def test_defaults_are_the_documented_problem():
    st = ExplorerState()
    assert (st.hw, st.kernel, st.shape, st.dtype, st.fidelity, st.causal) == (
        "wormhole_n150",
        "gemm",
        "M=4096,K=4096,N=4096",
        "bfloat16",
        "hifi2",
        False,
    )
    assert (DEFAULT_HW, DEFAULT_KERNEL) == ("wormhole_n150", "gemm")
    assert st.program_options == []
    assert st.inputs == ProblemInputs("wormhole_n150", "gemm", "M=4096,K=4096,N=4096", "bfloat16", "hifi2")
    assert st.options.time_limit_seconds == st.time_limit_seconds
    # nothing solved yet: no session, no selection, and reading the result says so
    assert st.session is None and st.candidate == "" and st.pins == {} and st.results == [] and st.compare is None
    with pytest.raises(RuntimeError, match="solve_all"):
        st.result  # noqa: B018
    # the default inputs open (models only, no solve): 4096^3 in tiles of 32
    session = open_session(st.inputs)
    assert dict(session.problem.shape) == {"M": 4096, "N": 4096, "K": 4096}
    assert session.problem.tiles("M") == 128 and session.schedules


def test_a_kernel_without_a_shape_takes_its_example_shape():
    st = ExplorerState(kernel="flash_attention")
    assert st.shape == example_shape(load_program("flash_attention"))
    assert st.shape != ExplorerState().shape and "Sq=" in st.shape
    # a shape given alongside the kernel is kept
    assert (
        ExplorerState(kernel="flash_attention", shape="B=1,H=2,Sq=512,Skv=512,D=64").shape
        == "B=1,H=2,Sq=512,Skv=512,D=64"
    )
    st.kernel = "batched_gemm"
    st.use_example_shape()
    assert st.shape == example_shape(load_program("batched_gemm"))


# ------------------------------------------------------------------------------------- solve_all


def test_solve_all_ranks_every_candidate_and_selects_the_best(gemm, optimum):
    st = gemm
    names = [s.candidate.name for s in st.session.schedules]
    assert sorted(r.candidate_name for r in st.results) == sorted(names)
    for r in st.results:
        assert_result_sound(st.session.schedule(r.candidate_name), r)
        assert r.pins == ()
    feasible = [r for r in st.results if r.solution]
    assert feasible, "gemm 1024^3 has schedules"
    # ranked: feasible first, by latency
    assert st.results[: len(feasible)] == feasible
    lat = [r.solution.latency_cycles for r in feasible]
    assert lat == sorted(lat)
    best = min(lat)
    assert st.candidate == st.results[0].candidate_name == BEST_1K
    assert st.solution.latency_cycles == best == optimum[BEST_1K]
    assert st.result.status == "optimal"
    sch = st.schedule
    assert sch.candidate == BEST_1K and sch.pins == {} and sch.conflict is None
    assert sch.params == st.solution.values() and sch.latency_cycles == best
    assert sch.latency_us == pytest.approx(st.hardware.cycles_to_us(best), abs=1e-3)
    assert sum(sch.breakdown.values()) == best
    assert sch.roofline_pct == pytest.approx(100.0 * st.symbolic.ideal_cycles / best, abs=0.01)


def test_the_page_plan_shows_the_proven_best_first(optimum):
    """What the page does (explorer.solve_async): the fastest candidate first, every other one proven
    slower, then each of those solved to its own optimum; the end state equals solving every candidate."""
    st = ExplorerState(shape=GEMM_1K)
    job = st.plan_problem()
    first = job.run_fastest()
    st.apply(job)
    assert st.candidate == BEST_1K and st.result.status == "optimal"
    assert st.solution.latency_cycles == optimum[BEST_1K] == min(v for v in optimum.values() if v is not None)
    dominated = [r for r in first if r.status == "dominated"]
    assert dominated and all(optimum[r.candidate_name] >= r.best_bound_cycles >= optimum[BEST_1K] for r in dominated)
    for i, (name, _) in enumerate(job.tasks):
        if name in {r.candidate_name for r in dominated}:
            job.run_one(i)
    st.apply(job)
    assert {r.candidate_name: _latency(r) for r in st.results} == optimum
    assert all(r.status == "optimal" for r in st.results) and st.candidate == BEST_1K
    with pytest.raises(ValueError, match="without pins"):
        type(job)(job.session, ((BEST_1K, (("in0_block_w", 1),)),), job.options).run_fastest()


# ------------------------------------------------------------------------------------------- pins


def _check_referee(st: ExplorerState) -> None:
    assert evaluate_schedule(st.symbolic, st.solution.values()).latency_cycles == st.solution.latency_cycles
    assert_result_sound(st.symbolic, st.result)


def test_pin_sets_the_value_everywhere_and_never_beats_the_optimum(gemm, optimum):
    st = gemm
    opt = optimum[BEST_1K]
    chosen = st.solution.values()
    # both pins cost here, so no optimal schedule takes these values on its own
    assert chosen["in0_block_w"] != 16 and chosen["in1_buffer_depth"] != 1

    r = st.pin("in0_block_w", 16)
    assert r is st.result and r.status == "optimal"
    assert st.solution.values()["in0_block_w"] == 16
    assert st.pins == {"in0_block_w": 16} == st.schedule.pins
    assert r.pins == (("in0_block_w", 16),)
    assert st.schedule.params == st.solution.values()
    assert st.candidate == BEST_1K
    one_pin = st.solution.latency_cycles
    assert one_pin >= opt
    _check_referee(st)

    st.pin("in1_buffer_depth", 1)
    assert st.pins == {"in0_block_w": 16, "in1_buffer_depth": 1} == st.schedule.pins
    assert st.solution.values()["in0_block_w"] == 16 and st.solution.values()["in1_buffer_depth"] == 1
    assert st.solution.latency_cycles >= one_pin >= opt  # a further pin can only cost
    _check_referee(st)

    # free one pin: back to the optimum under the other one
    st.free("in1_buffer_depth")
    assert st.pins == {"in0_block_w": 16}
    assert st.solution.latency_cycles == one_pin
    # free the last: back to the unpinned optimum
    st.free("in0_block_w")
    assert st.pins == {} and st.result.pins == ()
    assert st.solution.latency_cycles == opt


def test_free_all_restores_the_unpinned_optimum(gemm, optimum):
    st = gemm
    st.pin("in0_block_w", 16)
    st.pin("in1_buffer_depth", 1)
    assert st.solution.latency_cycles > optimum[BEST_1K]  # these pins cost here
    st.free()
    assert st.pins == {} and st.schedule.pins == {}
    assert st.solution.latency_cycles == optimum[BEST_1K]
    _check_referee(st)


def test_pinning_the_optimal_value_keeps_the_optimum(gemm, optimum):
    st = gemm
    value = st.solution.values()["in0_block_w"]
    st.pin("in0_block_w", value)
    assert st.pins == {"in0_block_w": value}
    assert st.solution.latency_cycles == optimum[BEST_1K]


def test_conflicting_pins_name_the_pins_and_the_constraint(gemm):
    st = gemm
    st.pin("out_block_h", 32)
    r = st.pin("in0_block_w", 32)
    assert r.status == "conflict" and r.solution is None
    assert st.pins == {"out_block_h": 32, "in0_block_w": 32}
    c = r.conflict
    assert c is not None
    assert c.pins == (("in0_block_w", 32), ("out_block_h", 32))
    assert "l1_capacity" in c.families
    msg = c.message
    assert "in0_block_w=32" in msg and "out_block_h=32" in msg and "l1_capacity" in msg
    usable = st.hardware.l1.usable_bytes
    found = numbers(msg)
    assert usable in found, msg  # the usable L1 of the chip ...
    assert max(found) > usable, msg  # ... and what the pins need beyond it
    # the selection shows the conflict and nothing schedule-like
    sch = st.schedule
    assert sch.status == "conflict" and sch.conflict == msg and sch.pins == st.pins
    assert sch.params == {} and sch.latency_cycles is None and sch.l1_bytes is None and sch.breakdown == {}
    assert st.solution is None and st.traffic() is None and st.transfers() == [] and st.l1_usage() == []
    # ranked after every candidate that has a schedule
    assert st.results[-1].candidate_name == BEST_1K
    assert all(x.solution for x in st.results[:-1])


def test_a_pin_outside_the_domain_is_a_domain_conflict(gemm):
    st = gemm
    r = st.pin("in0_block_w", 3)  # the domain is the divisors of per_core_K
    assert r.status == "conflict" and r.conflict.families == ("domain",)
    assert "in0_block_w=3" in r.conflict.message and "domain" in r.conflict.message
    st.free()
    fixed = [p for p in st.symbolic.params if p.fixed]
    assert fixed, "per_core_K is fixed when K is not spread"
    p = fixed[0]
    r = st.pin(p.name, p.values[0] + 1)
    assert r.status == "conflict" and "fixes" in r.conflict.message and p.name in r.conflict.message


def test_bad_pins_raise_pin_errors_and_change_nothing(gemm):
    st = gemm
    before = st.result
    with pytest.raises(PinError, match="no_such_param"):
        st.pin("no_such_param", 4)
    with pytest.raises(PinError, match="integer"):
        st.pin("in0_block_w", "4")
    with pytest.raises(PinError, match="integer"):
        st.pin("in0_block_w", True)
    with pytest.raises(PinError, match="in0_block_w"):
        st.free("in0_block_w")  # not pinned
    assert st.pins == {} and st.result is before and st.candidate == BEST_1K
    st.pin("in0_block_w", 16)
    with pytest.raises(PinError, match="out_block_h.*pinned: in0_block_w"):
        st.free("out_block_h")
    assert st.pins == {"in0_block_w": 16}


def test_switching_candidates_keeps_each_ones_pins(gemm, optimum):
    st = gemm
    a = BEST_1K
    b = st.results[1].candidate_name
    ra = st.pin("in0_block_w", 16)
    st.select(b)
    assert st.candidate == b and st.pins == {} and st.result.pins == ()
    assert st.solution.latency_cycles == optimum[b]
    st.select(a)
    assert st.candidate == a and st.pins == {"in0_block_w": 16}
    assert st.result is ra and st.solution.values()["in0_block_w"] == 16
    assert st.result_of(a) is ra and st.result_of(b).pins == ()
    with pytest.raises(KeyError, match="no candidate named"):
        st.select("no-such-candidate")
    assert st.candidate == a


# ------------------------------------------------------------------------------------ bad input


@pytest.fixture(scope="module")
def small():
    st = ExplorerState(shape=SMALL)
    st.solve_all()
    return st


@pytest.mark.parametrize("shape", ["M=abc,K=256,N=256", "M=256,K=256", "M=0,K=256,N=256", "", "M=256,K=256,N=256,Q=4"])
def test_a_bad_shape_is_an_input_error_and_keeps_the_state(small, shape):
    st = small
    session, results, candidate, pins = st.session, list(st.results), st.candidate, dict(st.pins)
    st.shape = shape
    try:
        with pytest.raises(InputError) as info:
            st.solve_all()
        assert info.value.field == "shape" and str(info.value).startswith("shape: ")
        assert st.session is session and st.results == results and st.candidate == candidate and st.pins == pins
        assert st.solution is not None
    finally:
        st.shape = SMALL


@pytest.mark.parametrize(
    "field,value",
    [
        ("hw", "no_such_chip"),
        ("hw", "/nonexistent/chip.yaml"),
        ("kernel", "no_such_kernel"),
        ("dtype", "float7"),
        ("fidelity", "ultra"),
        ("shape", "M=1,K=1"),
    ],
)
def test_open_session_names_the_bad_field(field, value):
    inputs = {
        "hw": "wormhole_n150",
        "kernel": "gemm",
        "shape": SMALL,
        "dtype": "bfloat16",
        "fidelity": "hifi2",
        "options": frozenset(),
    }
    inputs[field] = value
    with pytest.raises(InputError) as info:
        open_session(ProblemInputs(**inputs))  # type: ignore[arg-type]
    assert info.value.field == field
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "field,value",
    [("hw", "no_such_chip"), ("hw", "/etc/passwd"), ("kernel", "nope"), ("dtype", "float7"), ("fidelity", "ultra")],
)
def test_the_state_refuses_unknown_choices_on_assignment_and_keeps_its_problem(small, field, value):
    """A choice outside the state's own lists is refused when set (naming the field), and neither the
    state's lists nor its solved problem change."""
    st = small
    session, results, before = st.session, list(st.results), getattr(st, field)
    objects = list(st.param[field].objects)
    with pytest.raises(ValueError, match=field):
        setattr(st, field, value)
    assert getattr(st, field) == before and list(st.param[field].objects) == objects
    assert value not in ExplorerState.param[field].objects
    assert st.session is session and st.results == results and st.solution is not None


@pytest.mark.parametrize(
    "field,value",
    [
        ("hw", "no_such_chip"),
        ("hw", "/etc/passwd"),
        ("kernel", "/tmp/x.py"),
        ("dtype", "float7"),
        ("fidelity", "ultra"),
    ],
)
def test_a_served_state_refuses_unknown_names_and_paths_naming_the_field(field, value):
    with pytest.raises(InputError) as info:
        ExplorerState(Catalog.shipped(), shape=SMALL, **{field: value})
    assert info.value.field == field
    assert "/" not in str(info.value)  # a path is never quoted back


def test_each_state_has_its_own_lists():
    """A path offered to one (notebook) state appears in its hardware list only: not in the class's, not in
    another state's (the served page builds one state per browser session)."""
    from loom_explorer.hardware.load import resolve_hardware_path

    path = str(resolve_hardware_path("blackhole_p150a"))
    mine = ExplorerState(hw=path, shape=SMALL)
    other = ExplorerState(Catalog.shipped(), shape=SMALL)
    assert path in mine.param.hw.objects
    assert path not in other.param.hw.objects and path not in ExplorerState.param.hw.objects


def test_aliases_and_hardware_paths_are_accepted():
    from loom_explorer.hardware.load import resolve_hardware_path

    path = str(resolve_hardware_path("blackhole_p150a"))
    st = ExplorerState(hw=path, dtype="bf16", fidelity="HiFi4", shape="M=256,K=256,N=256")
    assert st.dtype == "bfloat16" and st.fidelity == "hifi4" and path in st.param.hw.objects
    st.solve_all()
    assert st.hardware.name == "blackhole_p150a" and st.solution is not None


def test_causal_is_ignored_by_kernels_without_it():
    session = open_session(ProblemInputs("wormhole_n150", "gemm", SMALL, "bfloat16", "hifi2", frozenset({"causal"})))
    assert session.problem.options == frozenset()


def test_causal_is_short_for_the_program_option_causal():
    """``causal`` (keyword, attribute) reads and writes the option ``causal`` of ``program_options``, which
    a kernel without it keeps for the next kernel that has it."""
    st = ExplorerState(kernel="flash_attention", shape="B=1,H=1,Sq=64,Skv=64,D=64", causal=True)
    assert st.program_options == ["causal"] and st.causal
    assert st.inputs.options == frozenset({"causal"})
    st.causal = False
    assert st.program_options == [] and not st.causal
    st.program_options = ["causal"]
    assert st.causal
    assert ExplorerState(program_options=["causal"]).inputs.options == frozenset({"causal"})


# ------------------------------------------------------------------------------- problem changes


def test_a_new_problem_forgets_pins_and_results():
    st = ExplorerState(shape=SMALL)
    st.solve_all()
    old = st.session
    a = st.candidate
    st.pin("in0_block_w", 1)
    assert st.pins == {"in0_block_w": 1}
    gemm_flops = st.symbolic.flops

    st.shape = "M=256,K=256,N=512"
    st.solve_all()
    assert st.session is not old
    assert dict(st.problem.shape) == {"M": 256, "N": 512, "K": 256}
    assert st.pins == {} and all(r.pins == () for r in st.results)
    assert len(st.results) == len(st.session.schedules)
    assert st.result_of(a) is not None and st.result_of(a).pins == ()
    assert st.candidate == st.results[0].candidate_name

    # another kernel: batched gemm, two of the first problem
    st.kernel = "batched_gemm"
    st.shape = "B=2,M=256,K=256,N=256"
    st.solve_all()
    assert st.problem.program.name == "batched_gemm" and st.pins == {}
    assert sorted(r.candidate_name for r in st.results) == sorted(s.candidate.name for s in st.session.schedules)
    for r in st.results:
        assert_result_sound(st.session.schedule(r.candidate_name), r)
    feasible = [r.solution.latency_cycles for r in st.results if r.solution]
    assert st.solution.latency_cycles == min(feasible)
    assert st.symbolic.flops == 2 * gemm_flops
    _check_referee(st)


# ------------------------------------------------------------------------------- reading results


def test_schedule_json_is_the_solve_contract_for_the_selection(gemm):
    st = gemm
    st.pin("in0_block_w", 16)
    doc = json.loads(st.schedule_json())
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["hardware"] == "wormhole_n150" and doc["kernel"] == "gemm"
    assert doc["shape"] == {"M": 1024, "N": 1024, "K": 1024}
    assert doc["dtype"] == "bfloat16" and doc["fidelity"] == "hifi2"
    assert doc["pins"] == {"in0_block_w": 16}
    assert len(doc["candidates"]) == 1
    (c,) = doc["candidates"]
    assert c["name"] == st.candidate == BEST_1K
    assert c["status"] == st.result.status
    assert c["params"] == st.solution.values()
    assert c["latency_cycles"] == st.solution.latency_cycles
    assert c["breakdown"] == dict(st.solution.breakdown) and c["l1_bytes"] == st.solution.l1_bytes
    assert c["conflict"] is None

    st.pin("out_block_h", 32)
    st.pin("in0_block_w", 32)
    (c,) = json.loads(st.schedule_json())["candidates"]
    assert c["status"] == "conflict" and c["params"] == {} and c["latency_cycles"] is None
    assert c["conflict"]["message"] == st.result.conflict.message
    assert c["conflict"]["pins"] == {"in0_block_w": 32, "out_block_h": 32}


def _check_l1_and_traffic(st: ExplorerState) -> None:
    s = st.solution
    usage = st.l1_usage()
    assert usage and len({n for n, _ in usage}) == len(usage)
    assert sum(b for _, b in usage) == s.l1_bytes <= st.hardware.l1.usable_bytes
    assert all(b >= 0 for _, b in usage)

    transfers = st.transfers()
    report = st.traffic()
    assert transfers and report.latency_cycles == s.latency_cycles
    assert report.bytes_sent == sum(t.bytes * t.count for t in transfers)
    assert report.bytes_received == sum(t.bytes * t.count * len(t.dsts) for t in transfers)
    assert report.bytes_received >= report.bytes_sent > 0
    total = {(x.noc, x.src, x.dst): x.bytes for x in report.links}

    graph = NocGraph(st.hardware)
    tensors = st.tensors_moved()
    assert set(tensors) == {t.tensor for t in transfers}
    summed: dict = defaultdict(int)
    sent = 0
    for tensor in tensors:
        part = st.traffic(tensor)
        mine = [t for t in transfers if t.tensor == tensor]
        assert part.bytes_sent == sum(t.bytes * t.count for t in mine) > 0
        assert part.bytes_received == sum(t.bytes * t.count * len(t.dsts) for t in mine)
        links = {(x.noc, x.src, x.dst): x.bytes for x in part.links}
        # only this tensor's links: exactly the routes of its own transfers
        assert set(links) == {link for t in mine for link in graph.tree(t.noc, t.src, t.dsts)}, tensor
        assert set(links) <= set(total)
        assert sum(links.values()) <= sum(total.values())
        for k, v in links.items():
            assert v <= total[k]
            summed[k] += v
        sent += part.bytes_sent
    # the tensors' loads add up to the total, link by link
    assert dict(summed) == total and sent == report.bytes_sent
    empty = st.traffic("no_such_tensor")
    assert empty.links == () and empty.bytes_sent == 0 and empty.bytes_received == 0


def test_l1_usage_and_traffic_of_the_selection(gemm):
    st = gemm
    _check_l1_and_traffic(st)
    # a split-K candidate (partial sums gathered) and a DRAM-only one as well
    for name in ("K@y,N@x|in0=dram,in1=dram", "M@xy|in0=dram,in1=dram"):
        st.select(name)
        _check_l1_and_traffic(st)
        if name.startswith("K@"):
            assert st.traffic().bytes_unicast > 0
    st.select(BEST_1K)
    assert st.traffic().bytes_multicast > 0


def test_keep_for_compare_snapshots_the_result(gemm, optimum):
    st = gemm
    snap = st.keep_for_compare()
    assert st.compare is snap and isinstance(snap, Snapshot)
    assert snap.candidate == BEST_1K and snap.pins == () and snap.label == BEST_1K
    assert snap.result is st.result
    st.pin("in0_block_w", 16)
    assert st.compare is snap
    assert snap.result.solution.latency_cycles == optimum[BEST_1K]
    assert snap.result.pins == () and st.result is not snap.result
    later = st.keep_for_compare()
    assert later.label == f"{BEST_1K} [in0_block_w=16]" and st.compare is later
    assert later.result.solution.latency_cycles == st.solution.latency_cycles >= snap.result.solution.latency_cycles


# ------------------------------------------------------------------------------ other kernels

FA = "B=1,H=2,Sq=512,Skv=512,D=64"


@pytest.fixture(scope="module")
def attention():
    out = {}
    for causal in (False, True):
        st = ExplorerState(kernel="flash_attention", shape=FA, causal=causal)
        st.solve_all()
        out[causal] = st
    return out


def test_flash_attention_solves_through_the_state(attention):
    causal, full = attention[True], attention[False]
    assert causal.problem.options == frozenset({"causal"}) and full.problem.options == frozenset()
    for st in (causal, full):
        assert st.problem.program.name == "flash_attention"
        for r in st.results:
            assert_result_sound(st.session.schedule(r.candidate_name), r)
        assert st.candidate == st.results[0].candidate_name
        assert st.solution.latency_cycles == min(r.solution.latency_cycles for r in st.results if r.solution)
        _check_referee(st)
        _check_l1_and_traffic(st)
    # the mask skips about half of the score blocks: less work, and a faster best schedule
    assert causal.symbolic.flops < full.symbolic.flops
    assert causal.solution.latency_cycles < full.solution.latency_cycles


def test_a_problem_proven_before_comes_back_from_the_store(tmp_path, monkeypatch, capsys):
    """The page's plan (explorer.solve_async): a problem whose every candidate was proven, here by the CLI's
    `solve`, is answered from the results store with the same results; one solved on the page is
    remembered once every candidate is proven."""
    from loom_explorer import cli

    monkeypatch.setenv("LOOM_EXPLORER_STORE", str(tmp_path / "results.sqlite"))
    st = ExplorerState(shape=SMALL)
    job = st.plan_problem()
    assert job.recall() == "" and job.results == []
    job.run().remember()
    assert job.note == ""
    again = ExplorerState(shape=SMALL).plan_problem()
    provenance = again.recall()
    assert provenance.startswith("from the store, proven ")
    assert {r.candidate_name: r for r in again.results} == {r.candidate_name: r for r in job.results}
    # the CLI's `solve` of the same problem shares the proof, and says so
    assert cli.main(["solve", "gemm", "--hw", DEFAULT_HW, "--shape", SMALL]) == 0
    assert "from the store, proven" in capsys.readouterr().err
    # a pinned job is never answered from the store
    pinned = ExplorerState(shape=SMALL)
    pinned.apply(again)
    assert pinned.plan_pins({"in0_block_w": 1}).recall() == ""
