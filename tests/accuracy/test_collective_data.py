"""The published collective and fabric measurements (``collective_times.csv``, ``fabric_bandwidth.csv``,
``fabric_latency.csv``) read with the csv module and checked row by row: the columns, a source file and a 40-digit
commit on every row, positive times and bandwidths, mesh names from the project's list, and the internal
arithmetic each source prints (fabric: packets/s x packet bytes = GB/s; latency: raw = net + responder on the
averages, per-hop = net / 2 on the minima and maxima; collectives: the gathered or scattered shape follows from
the per-device shape and the ring size).
"""

from __future__ import annotations

import csv
import math
import re

import pytest

from loom_explorer.data import published_path

MESHES = {"n300", "t3000", "galaxy", "p150x4", "p150x8", "bh_galaxy", "p300"}
COMMIT = re.compile(r"^[0-9a-f]{40}$")
THREAD = re.compile(r"^https://github\.com/tenstorrent/tt-metal/(pull|issues)/\d+$")  # a PR or issue: no commit
SHAPE = re.compile(r"^\d+(x\d+)*$")

COLLECTIVE_COLUMNS = [
    "case_id",
    "op",
    "ttnn_op",
    "mesh",
    "arch",
    "ring_size",
    "topology",
    "num_links",
    "cluster_axis",
    "dim",
    "input_shape",
    "output_shape",
    "dtype",
    "layout",
    "memory",
    "time_us",
    "time_us_low",
    "time_us_high",
    "time_kind",
    "device_kernel_cycles",
    "inferred_fields",
    "source_path",
    "commit",
    "locator",
    "notes",
]
FABRIC_COLUMNS = [
    "mesh",
    "golden_file",
    "test_name",
    "ftype",
    "ntype",
    "topology",
    "num_devices",
    "num_links",
    "packet_size_bytes",
    "iterations",
    "cycles",
    "packets_per_second",
    "bandwidth_gb_s",
    "tolerance_percent",
    "source_path",
    "commit",
]
LATENCY_STATS = [f"{s}_{k}_ns" for s in ("net", "responder", "raw", "per_hop") for k in ("min", "max", "avg", "p99")]
LATENCY_COLUMNS = [
    "mesh",
    "golden_file",
    "test_name",
    "ftype",
    "ntype",
    "topology",
    "num_devices",
    "num_links",
    "num_samples",
    "payload_size_bytes",
    *LATENCY_STATS,
    "tolerance_percent",
    "source_path",
    "commit",
]
TIME_KINDS = {
    "measured_model_prefill",  # a device time printed from a model run
    "perf_target_max",  # a nightly's upper bound on the measured average (time_us_high)
    "perf_target_band",  # a nightly's two-sided bound on the measured average (time_us_low, time_us_high)
    "expected_kernel_duration",  # a model perf test's expected in-model kernel time (with a relative margin)
    "derived_from_cycles_at_1GHz",
    "measured_trace_crit_path_mean",  # traced, the slowest device's time per iteration, averaged (a PR's table)
}


def _rows(name: str) -> tuple[list[str], list[dict[str, str]]]:
    with published_path(name).open(newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def _dims(shape: str) -> list[int]:
    return [int(d) for d in shape.split("x")]


def test_collective_times_columns_sources_and_meshes() -> None:
    header, rows = _rows("collective_times.csv")
    assert header == COLLECTIVE_COLUMNS
    assert len(rows) >= 30
    ids = [r["case_id"] for r in rows]
    assert len(set(ids)) == len(ids), "case_id repeats"
    for line, r in enumerate(rows, start=2):
        where = f"collective_times.csv:{line}"
        assert r["mesh"] in MESHES, where
        assert r["op"] in {"all_gather", "reduce_scatter", "all_reduce"}, where
        assert r["topology"] in {"ring", "linear"}, where
        assert COMMIT.match(r["commit"]) or (THREAD.match(r["source_path"]) and not r["commit"]), where
        assert r["locator"], where
        assert r["time_kind"] in TIME_KINDS, where
        assert int(r["ring_size"]) >= 2, where
        assert r["output_shape"] and SHAPE.match(r["output_shape"]), where
        times = [float(r[c]) for c in ("time_us", "time_us_low", "time_us_high") if r[c]]
        assert times and all(t > 0 for t in times), where
        if r["time_kind"] == "perf_target_max":
            assert r["time_us_high"] and not r["time_us"], where
        elif r["time_kind"] == "perf_target_band":
            assert not r["time_us"] and float(r["time_us_low"]) < float(r["time_us_high"]), where
        else:
            assert r["time_us"], where
        if r["op"] == "all_reduce":
            assert not r["dim"], where
        if r["device_kernel_cycles"]:  # derived at the 1 GHz Wormhole clock the source uses
            assert math.isclose(float(r["device_kernel_cycles"]) / 1000.0, float(r["time_us"])), where
        for field in filter(None, r["inferred_fields"].split(";")):
            assert field in COLLECTIVE_COLUMNS, where


def test_collective_shapes_follow_from_the_ring_size() -> None:
    """all-gather multiplies, reduce-scatter divides, the gathered/scattered dim by the ring size; all-reduce keeps
    the shape."""
    _, rows = _rows("collective_times.csv")
    checked = 0
    for line, r in enumerate(rows, start=2):
        if not r["input_shape"]:
            continue
        ins, outs, n = _dims(r["input_shape"]), _dims(r["output_shape"]), int(r["ring_size"])
        if r["op"] == "all_reduce":
            assert outs == ins, f"collective_times.csv:{line}"
            checked += 1
            continue
        dim = int(r["dim"])
        expected = list(ins)
        expected[dim] = ins[dim] * n if r["op"] == "all_gather" else ins[dim] // n
        assert outs == expected, f"collective_times.csv:{line}"
        checked += 1
    assert checked >= 25


def test_collective_data_covers_the_topologies_it_claims() -> None:
    _, rows = _rows("collective_times.csv")
    per_mesh: dict[str, int] = {}
    for r in rows:
        per_mesh[r["mesh"]] = per_mesh.get(r["mesh"], 0) + 1
    assert per_mesh == {"galaxy": 36, "t3000": 4, "p150x8": 14}


def test_fabric_bandwidth_rows_are_consistent() -> None:
    header, rows = _rows("fabric_bandwidth.csv")
    assert header == FABRIC_COLUMNS
    assert len(rows) == 396
    for line, r in enumerate(rows, start=2):
        where = f"fabric_bandwidth.csv:{line}"
        assert r["mesh"] in MESHES, where
        assert r["ntype"] == "NOC_UNICAST_WRITE", where
        assert r["source_path"].endswith(r["golden_file"]) and COMMIT.match(r["commit"]), where
        cycles, pps, gbs = float(r["cycles"]), float(r["packets_per_second"]), float(r["bandwidth_gb_s"])
        size = int(r["packet_size_bytes"])
        assert cycles > 0 and pps > 0 and gbs > 0 and size > 0, where
        assert 1 <= int(r["num_links"]) <= 4, where
        # the goldens' own arithmetic: bandwidth = packets per second x packet bytes
        assert pps * size / 1e9 == pytest.approx(gbs, rel=1e-3), where


def test_fabric_bandwidth_covers_every_golden_mesh() -> None:
    """Rows per mesh: every NOC_UNICAST_WRITE row of each golden file named in the data README."""
    _, rows = _rows("fabric_bandwidth.csv")
    per_mesh: dict[str, int] = {}
    for r in rows:
        per_mesh[r["mesh"]] = per_mesh.get(r["mesh"], 0) + 1
    assert per_mesh == {"t3000": 18, "p150x4": 136, "p300": 72, "p150x8": 36, "galaxy": 72, "bh_galaxy": 62}


def test_fabric_latency_rows_are_consistent() -> None:
    header, rows = _rows("fabric_latency.csv")
    assert header == LATENCY_COLUMNS
    per_mesh: dict[str, int] = {}
    for line, r in enumerate(rows, start=2):
        where = f"fabric_latency.csv:{line}"
        per_mesh[r["mesh"]] = per_mesh.get(r["mesh"], 0) + 1
        assert r["mesh"] in MESHES, where
        assert r["source_path"].endswith(r["golden_file"]) and COMMIT.match(r["commit"]), where
        v = {c: float(r[c]) for c in LATENCY_STATS}
        for s in ("net", "responder", "raw", "per_hop"):
            assert 0 < v[f"{s}_min_ns"] <= v[f"{s}_avg_ns"] <= v[f"{s}_max_ns"], where
        # the goldens' own arithmetic: the raw round trip is the net one plus the responder's turnaround (on the
        # averages, to their 0.01 ns print), and a hop is half the net round trip (on the extremes, to one
        # device cycle of rounding: 1 ns Wormhole, 0.74 ns Blackhole)
        assert v["raw_avg_ns"] == pytest.approx(v["net_avg_ns"] + v["responder_avg_ns"], abs=0.02), where
        for k in ("min", "max"):
            assert abs(2 * v[f"per_hop_{k}_ns"] - v[f"net_{k}_ns"]) <= 1.0, where
    assert per_mesh == {"t3000": 12, "p150x4": 12, "galaxy": 12}
