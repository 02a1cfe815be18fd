"""Tenstorrent's CCL bandwidth benchmark as collective rows (``accuracy/ccl_benchmark.py``): the shipped
transcriptions' own arithmetic, the test's shape rule, the rows left out and why, and the ops the rows become
on the T3000 and the Blackhole Galaxy."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from loom_explorer.accuracy.ccl_benchmark import (
    BLACKHOLE,
    DIRECT_MAX_BYTES,
    RUNS,
    WORMHOLE,
    BenchmarkRun,
    Plan,
    plan,
    run_rows,
    run_spread,
)
from loom_explorer.accuracy.collective_rows import CollectiveDataError
from loom_explorer.data import published_path
from loom_explorer.model.collective import CollectiveKind, FabricTopology


def _cells(run: BenchmarkRun) -> list[dict[str, str]]:
    with published_path(run.file).open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.mesh)
def test_every_row_agrees_with_the_arithmetic_the_report_prints(run: BenchmarkRun) -> None:
    """algbw is size / time (GB/s = bytes per ns, printed to 2 decimals); a page is a 2,048 B bfloat16 tile
    and an element 2 B; the measured run is one of the file's."""
    rows = _cells(run)
    assert run.commit in {r["commit"] for r in rows}
    for r in rows:
        size, time_us, algbw = int(r["size_bytes"]), float(r["time_us"]), float(r["algbw_gbps"])
        assert abs(size / (time_us * 1000) - algbw) <= 0.006 + 0.002 * algbw, r
        assert int(r["pages"]) * 2048 == size and int(r["count"]) * 2 == size, r
        assert r["op"] in {"all_gather", "reduce_scatter", "all_reduce"}, r


@pytest.mark.parametrize(
    ("target", "n", "expected"),
    [
        (1 << 20, 8, Plan(256, 2048)),  # 512 tiles: 64 wide, 8 high
        (16384, 8, Plan(32, 256)),  # 8 tiles: all of them split 8 ways
        (4096, 2, Plan(32, 64)),
        (8192, 8, None),  # 4 tiles cannot give each of 8 devices one
        (1 << 33, 8, Plan(32 * 65536, 2048)),
    ],
)
def test_the_shape_rule_is_the_benchmark_s(target: int, n: int, expected: Plan | None) -> None:
    assert plan(target, n) == expected


def test_the_wormhole_rows_become_ops_on_the_t3000() -> None:
    rows, skipped = run_rows(WORMHOLE)
    measured = [r for r in _cells(WORMHOLE) if r["commit"] == WORMHOLE.commit]
    assert len(rows) + len(skipped) == len(measured) == 268
    assert {r.topology for r in rows} == {"t3000"}
    for r in rows:
        op = r.op
        assert op.packet_payload_bytes == 6144 and op.num_links == 1 and op.page_bytes == 2048
        assert (op.topology is FabricTopology.ring) == (op.ring_size == 8 and " ring " in r.case)
        assert str(op.slice_bytes * op.ring_size) in r.case  # the slice is the whole tensor T over n
    by_reason = {s.reason.split(":")[0] for s in skipped}
    assert "8 calls back to back" in by_reason
    direct = [s for s in skipped if "reduce_scatter_minimal_direct" in s.reason]
    assert len(direct) == 12 and all(" ring " in s.case for s in direct)  # ring RS and AR, 16 KiB to 512 KiB
    ring_rs = [r for r in rows if r.op.kind is not CollectiveKind.all_gather and r.op.topology is FabricTopology.ring]
    assert ring_rs and min(r.op.slice_bytes * r.op.ring_size for r in ring_rs) > DIRECT_MAX_BYTES
    assert any(not r.op.input_in_dram for r in rows)  # the ring all-gather in L1


def test_the_blackhole_rows_become_ops_on_the_blackhole_galaxy() -> None:
    """Two links per direction and 8,192 B packets (four pages); the lines of 2 and 4 are the first chips of the
    8-chip axis, built without an axis of their own size."""
    rows, skipped = run_rows(BLACKHOLE)
    assert len(rows) + len(skipped) == len(_cells(BLACKHOLE)) == 267
    assert {r.topology for r in rows} == {"bh_galaxy"}
    assert {r.op.ring_size for r in rows} == {2, 4, 8}
    assert all(r.op.num_links == 2 and r.op.packet_payload_bytes == 8192 for r in rows)
    assert all("reduce_scatter_minimal_direct" in s.reason for s in skipped)  # no back-to-back rows in this run


def test_the_two_wormhole_runs_agree_closely() -> None:
    cells, median, largest = run_spread(WORMHOLE)
    assert cells > 200 and median < 0.01 and largest < 0.2


def test_a_row_whose_size_is_not_the_plan_s_is_refused_naming_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "ccl.csv"
    shutil.copy(published_path(WORMHOLE.file), bad)
    lines = bad.read_text().splitlines()
    lines[1] = lines[1].replace(",16384,16384,", ",16384,32768,", 1)
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(CollectiveDataError, match=r"ccl\.csv line 2: the benchmark's plan gives 16384 B"):
        run_rows(WORMHOLE, bad)
