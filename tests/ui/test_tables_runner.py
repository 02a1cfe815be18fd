"""The explorer's tables (``ui/tables.py``), its solver runner (``ui/runner.py``) and the Panel viewer
(``ui/explorer.py``) driven without a server or browser: every view follows the state after a pin, a
conflict, a free or a candidate switch.

Solves are real CP-SAT solves of gemm 256x512x512 on the n150 (one Explorer for the module; tests that pin
free their pins again).
"""

from __future__ import annotations

import asyncio
import threading

import pandas as pd
import pytest
from waits import WAIT_S

from loom_explorer.solve.pins import PinError
from loom_explorer.ui.explorer import ALL_TENSORS, Explorer
from loom_explorer.ui.runner import SolveRunner
from loom_explorer.ui.scene import grid_scene
from loom_explorer.ui.state import ExplorerState
from loom_explorer.ui.tables import (
    CANDIDATE_COLUMNS,
    candidate_frame,
    comparison_frame,
    param_frame,
)

SHAPE = "M=256,K=512,N=512"
BEST = "M@y,N@x|in0=mcast_x,in1=mcast_y"  # the best candidate of gemm 256x512x512 on the n150
FEASIBLE = {"optimal", "feasible"}


def restore(ex: Explorer) -> None:
    for r in list(ex.state.results):
        if r.pins:
            ex.select(r.candidate_name)
            ex.free()
    ex.select(BEST)
    ex.state.compare = None
    ex.state.error = ""


@pytest.fixture(scope="module")
def solved_explorer():
    ex = Explorer(shape=SHAPE, solve=True)
    yield ex, {r.candidate_name: r.solution.latency_cycles for r in ex.state.results if r.solution}
    ex.runner.shutdown()


@pytest.fixture
def explorer(solved_explorer):
    ex, _ = solved_explorer
    restore(ex)
    assert ex.state.candidate == BEST and ex.state.pins == {}
    yield ex
    restore(ex)


@pytest.fixture
def optimum(solved_explorer):
    return solved_explorer[1]


def schedules_of(st: ExplorerState) -> dict:
    return {s.candidate.name: s for s in st.session.schedules}


# ------------------------------------------------------------------------------------------ tables


def test_candidate_frame_one_ranked_row_per_candidate(explorer):
    st = explorer.state
    explorer.pin("out_block_h", 8)  # 8 tiles of M on one column: in1 has nobody to multicast to
    assert st.result.status == "conflict"
    frame = candidate_frame(st.hardware, schedules_of(st), st.results)
    n = len(st.session.schedules)
    assert list(frame.columns) == CANDIDATE_COLUMNS
    assert len(frame) == len(st.results) == n
    assert frame["rank"].tolist() == list(range(1, n + 1))
    assert frame["candidate"].tolist() == [r.candidate_name for r in st.results]
    assert sorted(frame["candidate"]) == sorted(schedules_of(st))
    assert frame["status"].tolist() == [r.status for r in st.results]
    assert frame["feasible"].tolist() == [r.status in FEASIBLE for r in st.results]  # every candidate settled
    feasible = frame[frame["feasible"] == True]  # noqa: E712 -- an object column: True, False or None
    assert 0 < len(feasible) < n
    assert frame["feasible"].tolist() == sorted(frame["feasible"].tolist(), reverse=True)  # feasible first
    assert feasible["latency_us"].tolist() == sorted(feasible["latency_us"].tolist())
    for r, (_, row) in zip(st.results, frame.iterrows(), strict=True):
        if r.solution:
            assert row["latency_us"] == pytest.approx(st.hardware.cycles_to_us(r.solution.latency_cycles), abs=1e-3)
            assert row["l1_kib"] == pytest.approx(r.solution.l1_bytes / 1024, abs=0.05)
        else:
            assert row["latency_us"] is None and row["l1_kib"] is None  # an empty cell, never NaN
    (row,) = frame[frame["candidate"] == BEST].to_dict("records")
    assert row["status"] == "conflict" and not row["feasible"] and row["pins"] == "out_block_h=8"
    assert row["rank"] > len(feasible)
    assert set(frame.loc[frame["candidate"] != BEST, "pins"]) == {""}
    # the viewer's candidate table is this frame under ttnn's default's own row
    shown = explorer.table.value.reset_index(drop=True)
    assert shown.iloc[0]["candidate"].startswith("ttnn default: ")
    pd.testing.assert_frame_equal(shown.iloc[1:].reset_index(drop=True), frame)


def test_ttnn_default_is_its_own_row_with_the_speedup_and_the_models_error(explorer):
    """ttnn's default is costed by the same model (as ``predict --ttnn-default``), shown as its own first row,
    the summary gives the selected schedule's predicted speed-up over it beside the model's measured error
    for matmuls, and selecting it shows its schedule: its candidate, every parameter pinned to the config."""
    from loom_explorer.accuracy.family_error import error_for_op, speedup_floor
    from loom_explorer.targets.ttnn.defaults import evaluate_ttnn_default

    st = explorer.state
    _, evaluated = evaluate_ttnn_default(st.hardware, st.problem)
    default = st.ttnn_default()
    assert default.result == evaluated.result and default.latency_cycles is not None
    assert default.call.startswith("ttnn.matmul: ttnn.MatmulMultiCoreReuse")
    top = explorer.table.value.iloc[0]
    assert top["candidate"] == f"ttnn default: {evaluated.result.candidate_name}" and top["rank"] is None
    assert top["status"] == "ttnn default"
    assert top["latency_us"] == pytest.approx(st.hardware.cycles_to_us(default.latency_cycles), abs=1e-3)
    speedup = default.latency_cycles / st.solution.latency_cycles
    error = error_for_op(st.problem.program.name, dict(st.problem.shape), st.hardware.name)
    assert error is not None  # the larger of the published matmuls' and the captures' contraction figure
    summary = explorer.summary.object
    assert f"**{speedup:.2f}x** predicted" in summary and error.figure() in summary and error.source() in summary
    assert f"at least {speedup_floor(speedup, error.median_abs_err_pct):.2f}x at the median error" in summary
    shown = explorer.show_ttnn_default()
    assert shown.candidate == evaluated.result.candidate_name and shown.pins == evaluated.values
    assert shown.latency_cycles == default.latency_cycles
    assert explorer.table.value.iloc[explorer.table.selection[0]]["candidate"].startswith("ttnn default: ")
    assert "**1.00x** predicted" in explorer.summary.object


def test_a_candidate_only_proven_no_faster_is_not_shown_infeasible():
    """While the page finds the fastest candidate first, the others are only proven no faster (``dominated``):
    whether they have a schedule is not known yet, so their ``feasible`` cell is empty, not false."""
    st = ExplorerState(shape=SHAPE)
    job = st.plan_problem()
    first = job.run_fastest()
    frame = candidate_frame(job.session.hw, schedules_of_session(job.session), first)
    dominated = frame[frame["status"] == "dominated"]
    assert len(dominated) > 0 and dominated["feasible"].tolist() == [None] * len(dominated)
    assert frame.loc[frame["status"] == "optimal", "feasible"].tolist() == [True]
    shown = frame.astype(str).to_numpy().ravel().tolist()
    assert "nan" not in shown and "NaN" not in shown


def schedules_of_session(session) -> dict:
    return {s.candidate.name: s for s in session.schedules}


def test_param_frame_lists_every_parameter_with_its_pin(explorer):
    st = explorer.state
    explorer.pin("in0_block_w", 16)
    frame = param_frame(st)
    assert frame["parameter"].tolist() == [p.name for p in st.symbolic.params] == list(st.solution.values())
    values = st.solution.values()
    for _, row in frame.iterrows():
        assert row["value"] == values[row["parameter"]]
        assert row["domain"] == st.symbolic.param(row["parameter"]).domain_text()
        if row["parameter"] == "in0_block_w":
            assert row["pinned"] == 16 == row["value"]
        else:
            assert row["pinned"] is None  # an empty cell, never NaN


def test_comparison_frame_has_headlines_every_parameter_and_term(explorer, optimum):
    st = explorer.state
    kept = st.keep_for_compare()
    explorer.pin("in0_block_w", 16)
    frame = comparison_frame(st, kept)
    assert list(frame.columns) == ["", "A (kept)", "B (selected)"]
    rows = {r[""]: (r["A (kept)"], r["B (selected)"]) for _, r in frame.iterrows()}
    assert len(rows) == len(frame)
    assert rows["schedule"] == (BEST, f"{BEST} [in0_block_w=16]")
    assert rows["status"] == ("optimal", st.result.status)
    assert rows["latency cycles"] == (str(optimum[BEST]), str(st.solution.latency_cycles))
    assert rows["L1 bytes"] == (str(kept.result.solution.l1_bytes), str(st.solution.l1_bytes))
    for p in st.symbolic.params:
        assert p.name in rows
    assert rows["in0_block_w"] == (str(kept.result.solution.values()["in0_block_w"]), "16")
    for term, cycles in st.solution.breakdown:
        assert rows[f"term {term}"][1] == str(cycles)
    # against a conflict: the selected side has no numbers
    explorer.pin("out_block_h", 8)
    rows = {r[""]: (r["A (kept)"], r["B (selected)"]) for _, r in comparison_frame(st, kept).iterrows()}
    assert rows["status"] == ("optimal", "conflict")
    assert rows["latency cycles"][0] == str(optimum[BEST])
    assert rows["in0_block_w"][0] == str(kept.result.solution.values()["in0_block_w"])
    for what in ("latency us", "latency cycles", "L1 bytes", "in0_block_w", "term compute"):
        b = rows[what][1]
        assert b == "-", (what, b)  # no number for the conflict


def test_comparison_frame_marks_missing_values_with_a_dash(explorer):
    st = explorer.state
    kept = st.keep_for_compare()
    explorer.pin("out_block_h", 8)
    assert st.result.status == "conflict"
    frame = comparison_frame(st, kept)
    rows = {r[""]: (r["A (kept)"], r["B (selected)"]) for _, r in frame.iterrows()}
    for what in ("latency us", "latency cycles", "L1 bytes", "in0_block_w", "term compute"):
        assert rows[what][1] == "-", (what, rows[what])
    assert all(isinstance(v, str) for col in ("A (kept)", "B (selected)") for v in frame[col])


def test_a_kept_schedule_is_dropped_when_the_hardware_changes():
    st = ExplorerState(shape="M=256,K=256,N=256")
    st.solve_all()
    n150 = st.hardware
    kept = st.keep_for_compare()
    kept_us = round(n150.cycles_to_us(kept.result.solution.latency_cycles), 2)
    st.hw = "blackhole_p150a"
    st.solve_all()
    assert st.hardware.clock_ghz != n150.clock_ghz
    assert kept_us > 0
    assert st.compare is None  # a kept schedule of another chip is dropped with its problem


# ------------------------------------------------------------------------------------------ runner


def test_a_superseded_request_returns_none_and_the_newest_its_value():
    runner = SolveRunner()
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def first() -> str:
        started.set()
        assert release.wait(WAIT_S)
        ran.append("first")
        return "first"

    def work(name: str):
        def run() -> str:
            ran.append(name)
            return name

        return run

    async def main():
        g1 = runner.new_request()
        t1 = asyncio.ensure_future(runner.run(g1, first))
        assert await asyncio.to_thread(started.wait, WAIT_S)  # the worker holds the first job
        g2 = runner.new_request()
        t2 = asyncio.ensure_future(runner.run(g2, work("second")))
        await asyncio.sleep(0)  # the second job is queued behind the first
        g3 = runner.new_request()
        t3 = asyncio.ensure_future(runner.run(g3, work("third")))
        await asyncio.sleep(0)
        assert not runner.is_current(g1) and not runner.is_current(g2) and runner.is_current(g3)
        release.set()
        return await asyncio.gather(t1, t2, t3)

    try:
        assert asyncio.run(main()) == [None, None, "third"]
        # the first ran but its answer was dropped; the second was skipped before it started
        assert ran == ["first", "third"]
    finally:
        runner.shutdown()


def test_a_request_already_superseded_does_no_work():
    runner = SolveRunner()
    ran: list[int] = []
    try:
        old = runner.new_request()
        new = runner.new_request()
        assert asyncio.run(runner.run(old, lambda: ran.append(1))) is None
        assert ran == []
        assert asyncio.run(runner.run(new, lambda: 7)) == 7
    finally:
        runner.shutdown()


def test_run_now_returns_the_value_and_supersedes_pending_requests():
    runner = SolveRunner()
    try:
        pending = runner.new_request()
        assert runner.run_now(lambda: 6 * 7) == 42
        assert not runner.is_current(pending)
        with pytest.raises(ZeroDivisionError):
            runner.run_now(lambda: 1 // 0)
        assert runner.run_now(lambda: "still works") == "still works"
    finally:
        runner.shutdown()


# ------------------------------------------------------------------------------------------ viewer


def test_the_viewer_shows_the_best_candidate(explorer, optimum):
    st = explorer.state
    assert st.candidate == BEST == st.results[0].candidate_name
    assert st.solution.latency_cycles == min(optimum.values())
    assert explorer.schedule == st.schedule
    frame = explorer.table.value
    assert len(frame) == len(st.session.schedules) + 1  # and ttnn's default's own row
    assert frame.iloc[explorer.table.selection[0]]["candidate"] == BEST
    assert explorer.params_table.value["parameter"].tolist() == [p.name for p in st.symbolic.params]
    assert f"`{BEST}`" in explorer.summary.object and "pins: none" in explorer.summary.object
    assert not explorer.conflict.visible and not explorer.alert.visible
    assert explorer.w_operand.options == [ALL_TENSORS, *st.tensors_moved()]
    assert explorer.w_pin_name.options == [p.name for p in st.symbolic.params if not p.fixed]


def _fresh_links(st: ExplorerState) -> dict:
    s = st.solution
    return grid_scene(
        st.hardware, st.symbolic if s else None, s.values() if s else {}, st.transfers(), st.traffic()
    ).links.data


def test_pin_updates_every_view(explorer, optimum):
    st = explorer.state
    before_links = dict(explorer.grid.links.data)
    assert st.solution.values()["in0_block_w"] != 16
    sch = explorer.pin("in0_block_w", 16)
    assert sch.pins == {"in0_block_w": 16} and sch.params["in0_block_w"] == 16
    assert sch.latency_cycles >= optimum[BEST]
    assert st.pins == {"in0_block_w": 16}
    # candidate table
    frame = explorer.table.value
    (row,) = frame[frame["candidate"] == BEST].to_dict("records")
    assert row["pins"] == "in0_block_w=16"
    assert row["latency_us"] == pytest.approx(st.hardware.cycles_to_us(sch.latency_cycles), abs=1e-3)
    assert frame.iloc[explorer.table.selection[0]]["candidate"] == BEST
    # parameter table
    params = explorer.params_table.value.set_index("parameter")
    assert params.loc["in0_block_w", "pinned"] == 16 and params.loc["in0_block_w", "value"] == 16
    assert params["pinned"].notna().sum() == 1
    # the grid draws the pinned schedule's traffic
    assert explorer.grid.links.data == _fresh_links(st)
    if sch.latency_cycles != optimum[BEST]:  # same bytes, longer run: lower link loads
        assert explorer.grid.links.data["utilisation"] != before_links["utilisation"]
    # summary and pin controls
    assert "`in0_block_w=16`" in explorer.summary.object
    assert f"{sch.latency_cycles:,} cycles" in explorer.summary.object
    assert not explorer.conflict.visible
    explorer.w_pin_name.value = "in0_block_w"
    assert explorer.w_pin_value.value == 16


def test_conflicting_pins_show_the_conflict(explorer):
    st = explorer.state
    explorer.pin("in0_block_w", 16)
    sch = explorer.pin("out_block_h", 8)
    assert sch.status == "conflict" and sch.latency_cycles is None
    message = st.result.conflict.message
    assert explorer.conflict.visible and explorer.conflict.object == message
    assert "out_block_h=8" in message
    assert message in explorer.summary.object
    assert "`in0_block_w=16`" in explorer.summary.object and "`out_block_h=8`" in explorer.summary.object
    assert len(explorer.grid.links.data["x0"]) == 0  # nothing to draw
    frame = explorer.table.value
    assert frame.loc[frame["candidate"] == BEST, "status"].item() == "conflict"
    params = explorer.params_table.value.set_index("parameter")
    assert params["value"].isna().all() and params.loc["out_block_h", "pinned"] == 8
    # freeing everything clears it
    sch = explorer.free()
    assert sch.status == "optimal" and sch.pins == {}
    assert not explorer.conflict.visible and explorer.conflict.object == ""
    assert "pins: none" in explorer.summary.object
    assert explorer.grid.links.data == _fresh_links(st) and len(explorer.grid.links.data["x0"]) > 0


def test_bad_pins_raise_and_leave_the_views(explorer):
    summary = explorer.summary.object
    with pytest.raises(PinError, match="nope"):
        explorer.pin("nope", 1)
    with pytest.raises(PinError, match="in0_block_w"):
        explorer.free("in0_block_w")
    assert explorer.state.pins == {} and explorer.summary.object == summary


def test_select_switches_candidate_and_views(explorer, optimum):
    st = explorer.state
    other = st.results[1].candidate_name
    assert other != BEST
    sch = explorer.select(other)
    assert st.candidate == other == sch.candidate
    assert sch.latency_cycles == optimum[other]
    frame = explorer.table.value
    assert frame.iloc[explorer.table.selection[0]]["candidate"] == other
    assert f"`{other}`" in explorer.summary.object
    params = explorer.params_table.value
    assert params["parameter"].tolist() == [p.name for p in st.symbolic.params]
    assert dict(zip(params["parameter"], params["value"], strict=True)) == st.solution.values()
    assert explorer.grid.links.data == _fresh_links(st)


def test_widgets_drive_the_state(explorer, optimum):
    """Without a running event loop Panel runs the async callbacks to completion on the spot."""
    st = explorer.state
    frame = explorer.table.value
    row = int(frame.index[frame["candidate"] != BEST][2])
    name = frame.loc[row, "candidate"]
    explorer.table.selection = [row]  # a click on a row of the candidate table
    assert st.candidate == name and st.solution.latency_cycles == optimum[name]
    explorer.table.selection = [int(frame.index[frame["candidate"] == BEST][0])]
    assert st.candidate == BEST
    # the pin controls
    explorer.w_pin_name.value = "in0_block_w"
    explorer.w_pin_value.value = 16
    explorer.b_pin.clicks += 1
    assert st.pins == {"in0_block_w": 16} and st.solution.values()["in0_block_w"] == 16
    explorer.w_pin_name.value = "out_block_w"
    explorer.b_free.clicks += 1  # not pinned: an error naming it, nothing solved
    assert explorer.alert.visible and "out_block_w is not pinned" in explorer.alert.object
    assert st.pins == {"in0_block_w": 16}
    explorer.b_free_all.clicks += 1
    assert st.pins == {} and st.solution.latency_cycles == optimum[BEST]
    assert not explorer.alert.visible
    # keep for comparison shows the comparison table
    explorer.b_keep.clicks += 1
    assert st.compare is not None and explorer.compare_table.visible
    explorer.b_clear.clicks += 1
    assert st.compare is None and not explorer.compare_table.visible
