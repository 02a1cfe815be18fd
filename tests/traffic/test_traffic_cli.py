"""``loom-explorer traffic``: the JSON contract, the text tables, the tt-npe workload file, exit codes.

Runs ``cli.main`` in-process on the 4x4 chip (``tiny_hw_path``) and checks what it prints against the
traffic computed directly from the same solve.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re

import pytest

from loom_explorer import cli
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.traffic import schedule_transfers, traffic_report

SHAPE = "M=256,K=256,N=256"
MCAST = "M@y,N@x|in0=mcast_x,in1=mcast_y"
SPLIT_K = "K@y,M@x|in0=dram,in1=mcast_x"
TOP_KEYS = {
    "schema_version",
    "hardware",
    "candidate",
    "latency_cycles",
    "links",
    "dram",
    "bytes_sent",
    "bytes_received",
    "bytes_multicast",
    "bytes_unicast",
    "link_bound_cycles",
    "busiest",
    "latency_explained",
    "model_noc_bound_cycles",
}


def pinned(solution, name):
    """CLI arguments that select candidate ``name`` at exactly ``solution``'s parameters."""
    return ["--candidate", name] + [a for k, v in solution.params for a in ("--pin", f"{k}={v}")]


def run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def traffic(hw_path, *extra, shape=SHAPE, kernel="gemm"):
    return run_main(["traffic", kernel, "--hw", str(hw_path), "--shape", shape, *extra])


@pytest.fixture(scope="module")
def best_json(tiny_hw_path):
    code, out, err = traffic(tiny_hw_path, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def direct(tiny_hw_path):
    """``direct(candidate) -> (solution, transfers, report)`` computed without the CLI. CP-SAT may return
    any of several optima of equal latency, so CLI runs compared with it pin every parameter to this
    solution (``pinned``)."""
    hw = load_hardware(tiny_hw_path)
    session = Session(hw, make_problem(load_program("gemm"), SHAPE))
    cache = {}

    def get(name):
        if name not in cache:
            (r,) = session.solve({}, SolveOptions(), candidates=[name])
            transfers = schedule_transfers(hw, session.schedule(name), r.solution.values())
            cache[name] = (r.solution, transfers, traffic_report(hw, transfers, r.solution.latency_cycles))
        return cache[name]

    return get


# ------------------------------------------------------------------------------------------- JSON


def test_json_contract(best_json, tiny_hw):
    data = best_json
    assert set(data) >= TOP_KEYS, TOP_KEYS - set(data)
    assert data["schema_version"] == 1 and data["hardware"] == "tiny_4x4"
    W, H = tiny_hw.grid.noc_width, tiny_hw.grid.noc_height
    width = tiny_hw.noc.link_bytes_per_cycle
    assert data["links"]
    for link in data["links"]:
        assert set(link) == {"noc", "src", "dst", "bytes", "utilisation"}
        assert link["noc"] in (0, 1) and link["bytes"] > 0
        (sx, sy), (dx, dy) = link["src"], link["dst"]
        step = 1 if link["noc"] == 0 else -1
        assert [dx, dy] in ([(sx + step) % W, sy], [sx, (sy + step) % H]), link  # one hop in its NoC's direction
        assert link["utilisation"] == pytest.approx(link["bytes"] / (width * data["latency_cycles"]), abs=1e-6)
    assert {x["noc"] for x in data["links"]} == {0, 1}
    assert [x["bytes"] for x in data["links"]] == sorted((x["bytes"] for x in data["links"]), reverse=True)
    assert [b["bank"] for b in data["dram"]] == list(range(tiny_hw.dram.channels))
    for b in data["dram"]:
        assert set(b) == {"bank", "bytes_read", "bytes_written"}
        assert b["bytes_read"] > 0 and b["bytes_written"] > 0
    assert data["bytes_received"] >= data["bytes_sent"] > 0
    banks = [
        math.ceil((b["bytes_read"] + b["bytes_written"]) / tiny_hw.dram.channel_peak_bytes_per_cycle)
        for b in data["dram"]
    ]
    assert data["link_bound_cycles"] == max([math.ceil(data["links"][0]["bytes"] / width)] + banks)
    assert data["latency_explained"] == pytest.approx(data["link_bound_cycles"] / data["latency_cycles"], abs=1e-4)
    assert 0 < data["model_noc_bound_cycles"] <= data["link_bound_cycles"] * 1.001 + 64


def test_json_is_the_best_schedule(best_json, tiny_hw_path, direct):
    code, out, err = run_main(["solve", "gemm", "--hw", str(tiny_hw_path), "--shape", SHAPE, "--json"])
    assert code == 0, err
    candidates = json.loads(out)["candidates"]
    # traffic proves the fastest only (solve --fastest 1), so of candidates tied for the best any may come out
    tied = {c["name"]: c for c in candidates if c["latency_cycles"] == candidates[0]["latency_cycles"]}
    assert best_json["candidate"] in tied
    best = tied[best_json["candidate"]]
    assert best_json["latency_cycles"] == best["latency_cycles"]
    solution, transfers, report = direct(best["name"])
    assert solution.latency_cycles == best["latency_cycles"]
    # the same candidate at the same parameters: the CLI prints exactly the directly computed traffic
    code, out, err = traffic(tiny_hw_path, "--json", *pinned(solution, best["name"]))
    assert code == 0, err
    data = json.loads(out)
    assert data["bytes_sent"] == report.bytes_sent == sum(t.bytes * t.count for t in transfers)
    assert data["bytes_received"] == report.bytes_received
    assert {(x["noc"], tuple(x["src"]), tuple(x["dst"])): x["bytes"] for x in data["links"]} == {
        (x.noc, x.src, x.dst): x.bytes for x in report.links
    }
    assert [(b["bytes_read"], b["bytes_written"]) for b in data["dram"]] == [
        (b.bytes_read, b.bytes_written) for b in report.dram
    ]
    assert data["link_bound_cycles"] == report.link_bound_cycles and data["busiest"] == report.busiest


@pytest.mark.parametrize("name", [MCAST, SPLIT_K])
def test_candidate_option(tiny_hw_path, direct, name):
    code, out, err = traffic(tiny_hw_path, "--json", "--candidate", name)
    assert code == 0, err
    data = json.loads(out)
    solution, _, report = direct(name)
    assert data["candidate"] == name
    assert data["latency_cycles"] == solution.latency_cycles  # the optimum (its parameters may differ)
    code, out, err = traffic(tiny_hw_path, "--json", *pinned(solution, name))
    assert code == 0, err
    data = json.loads(out)
    assert data["candidate"] == name
    assert data["link_bound_cycles"] == report.link_bound_cycles
    assert data["bytes_multicast"] == report.bytes_multicast > 0
    if name == SPLIT_K:  # partial sums travel core to core
        assert data["bytes_unicast"] == report.bytes_unicast > 0
    else:
        assert data["bytes_unicast"] == 0


# ------------------------------------------------------------------------------------------- text


def _link_lines(out, noc):
    block = out.split(f"busiest links of NoC{noc}")[1].split("\n\n")[0]
    return [line for line in block.splitlines() if re.match(r"\s+\(\d+, \d+\)->\(\d+, \d+\)", line)]


def test_text_lists_busiest_links_of_both_nocs(tiny_hw_path, direct):
    solution, _, report = direct(MCAST)
    code, out, err = traffic(tiny_hw_path, *pinned(solution, MCAST), "--links", "3")
    assert code == 0, err
    assert MCAST in out and "tiny_4x4" in out
    for noc in (0, 1):
        lines = _link_lines(out, noc)
        expected = [x for x in report.links if x.noc == noc][:3]
        assert len(lines) == len(expected) == 3
        for line, x in zip(lines, expected, strict=True):
            m = re.fullmatch(r"\s+(\(\d+, \d+\)->\(\d+, \d+\))\s+([\d,]+)\s+([\d.]+)%", line)
            assert m, line
            assert m.group(1) == f"{x.src}->{x.dst}"
            assert m.group(2) == f"{x.bytes:,}"
            assert float(m.group(3)) == pytest.approx(100 * x.utilisation, abs=0.05)
    assert f"{report.link_bound_cycles:,} cycles" in out
    assert "model's NoC bound" in out
    for b in report.dram:
        assert f"{b.bytes_read:,}" in out
    # the default shows up to 10 per NoC
    code, out10, _ = traffic(tiny_hw_path, *pinned(solution, MCAST))
    assert code == 0
    for noc in (0, 1):
        assert len(_link_lines(out10, noc)) == min(10, sum(1 for x in report.links if x.noc == noc))


def test_links_must_be_positive(tiny_hw_path):
    code, _, err = traffic(tiny_hw_path, "--links", "0")
    assert code == 2 and "--links" in err


# ----------------------------------------------------------------------------------- tt-npe export


def _check_workload(wl, hw, transfers):
    assert set(wl) >= {"phases"} and len(wl["phases"]) == 1
    ts = wl["phases"][0]["transfers"]
    assert len(ts) == len(transfers)
    for t, src in zip(ts, transfers, strict=True):
        assert 0 < t["packet_size"] <= hw.noc.max_packet_bytes
        assert t["num_packets"] >= src.count
        assert t["packet_size"] * t["num_packets"] >= src.bytes * src.count
        assert t["noc_type"] == f"NOC_{src.noc}" and t["noc_type"] in ("NOC_0", "NOC_1")
        assert (t["src_x"], t["src_y"]) == src.src
        assert t["injection_rate"] > 0 and t["phase_cycle_offset"] == 0
        unicast = {"dst_x", "dst_y"} <= set(t)
        mcast = {"mcast_start_x", "mcast_start_y", "mcast_end_x", "mcast_end_y"} <= set(t)
        assert unicast != mcast, t  # exactly one of the two
        if unicast:
            assert [(t["dst_x"], t["dst_y"])] == list(src.dsts)
        else:
            assert len(src.dsts) > 1
            assert t["mcast_start_x"] <= t["mcast_end_x"] and t["mcast_start_y"] <= t["mcast_end_y"]
            for x, y in src.dsts:
                assert t["mcast_start_x"] <= x <= t["mcast_end_x"] and t["mcast_start_y"] <= y <= t["mcast_end_y"]
    assert any("mcast_start_x" in t for t in ts) and any("dst_x" in t for t in ts)
    assert {t["noc_type"] for t in ts} == {"NOC_0", "NOC_1"}


def test_npe_workload_written(tmp_path, tiny_hw, tiny_hw_path, direct):
    target = tmp_path / "wl.json"
    solution, transfers, _ = direct(MCAST)
    code, out, err = traffic(tiny_hw_path, *pinned(solution, MCAST), "--npe", str(target))
    assert code == 0, err
    assert f"({len(transfers)} transfers) written to {target}" in out
    _check_workload(json.loads(target.read_text()), tiny_hw, transfers)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wl.json"]  # no temporary file left behind


def test_npe_with_json_output(tmp_path, tiny_hw, tiny_hw_path, direct):
    target = tmp_path / "wl.json"
    solution, transfers, _ = direct(SPLIT_K)
    code, out, err = traffic(tiny_hw_path, *pinned(solution, SPLIT_K), "--npe", str(target), "--json")
    assert code == 0, err
    assert json.loads(out)["candidate"] == SPLIT_K  # stdout stays one JSON object
    _check_workload(json.loads(target.read_text()), tiny_hw, transfers)


def test_npe_refuses_to_overwrite(tmp_path, tiny_hw, tiny_hw_path, direct):
    target = tmp_path / "existing_workload.json"
    target.write_text("keep me\n")
    code, out, err = traffic(tiny_hw_path, "--candidate", MCAST, "--npe", str(target))
    assert code == 2, (code, err)
    assert "existing_workload.json" in err and "--force" in err and "Traceback" not in err
    assert target.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing_workload.json"]
    solution, transfers, _ = direct(MCAST)
    code, out, err = traffic(tiny_hw_path, *pinned(solution, MCAST), "--npe", str(target), "--force")
    assert code == 0, err
    _check_workload(json.loads(target.read_text()), tiny_hw, transfers)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing_workload.json"]


def test_npe_into_a_missing_folder(tmp_path, tiny_hw_path):
    target = tmp_path / "no_such_folder" / "wl.json"
    code, _, err = traffic(tiny_hw_path, "--candidate", MCAST, "--npe", str(target))
    assert code == 2 and "no_such_folder" in err and "Traceback" not in err
    assert not target.parent.exists()
    assert list(tmp_path.iterdir()) == []


def test_npe_onto_a_directory_exits_2(tmp_path, tiny_hw_path, direct):
    target = tmp_path / "a_folder"
    target.mkdir()
    solution, _, _ = direct(MCAST)
    for force in (["--force"], []):
        code, _, err = traffic(tiny_hw_path, *pinned(solution, MCAST), "--npe", str(target), *force)
        assert code == 2 and "a_folder" in err and "folder" in err and "Traceback" not in err
    assert target.is_dir() and list(target.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_folder"]


# -------------------------------------------------------------------------------------- exit codes


def test_unknown_candidate_exits_2(tiny_hw_path):
    code, out, err = traffic(tiny_hw_path, "--candidate", "Q@xy|in0=teleport")
    assert code == 2
    assert "Q@xy|in0=teleport" in err and "Traceback" not in err
    assert out == ""


def test_no_schedule_exits_3(tiny_hw_path):
    """The in0 block alone (20 x 20 fp32 tiles) is over L1: no schedule, so no traffic."""
    code, out, err = traffic(
        tiny_hw_path,
        "--dtype",
        "fp32",
        "--pin",
        "out_block_h=20",
        "--pin",
        "in0_block_w=20",
        "--candidate",
        "M@y,N@x|in0=dram,in1=dram",
        shape="M=640,K=640,N=64",
    )
    assert code == 3, (code, err)
    assert "no schedule" in err and "l1_capacity" in err and out == ""


def test_bad_shape_exits_2(tiny_hw_path):
    code, _, err = traffic(tiny_hw_path, shape="M=256,K=256")
    assert code == 2 and "N" in err


# ---------------------------------------------------------------------------------- --no-noc-bound


@pytest.fixture(scope="module")
def solve_both(tiny_hw_path):
    """``solve --json`` with and without ``--no-noc-bound``: ``(bounded, free)``, by candidate name."""

    def solve(*extra):
        code, out, err = run_main(["solve", "gemm", "--hw", str(tiny_hw_path), "--shape", SHAPE, "--json", *extra])
        assert code == 0, err
        return {c["name"]: c for c in json.loads(out)["candidates"]}

    return solve(), solve("--no-noc-bound")


def test_no_noc_bound_solve(solve_both):
    bounded, free = solve_both
    assert set(bounded) == set(free)
    for name, c in bounded.items():
        assert "noc_bound" not in free[name]["breakdown"]
        assert sum(free[name]["breakdown"].values()) == free[name]["latency_cycles"]
        assert sum(c["breakdown"].values()) == c["latency_cycles"]
        assert free[name]["latency_cycles"] <= c["latency_cycles"], name
    assert any(free[n]["latency_cycles"] < c["latency_cycles"] for n, c in bounded.items()), (
        "the link times change no candidate's latency"
    )


def test_no_noc_bound_traffic(tiny_hw_path, direct):
    code, out, err = traffic(tiny_hw_path, "--candidate", MCAST, "--no-noc-bound", "--json")
    assert code == 0, err
    data = json.loads(out)
    solution, _, report = direct(MCAST)
    assert data["candidate"] == MCAST and data["links"]
    assert data["latency_cycles"] <= solution.latency_cycles
    assert data["model_noc_bound_cycles"] <= data["link_bound_cycles"] * 1.001 + 64
    assert sum(b["bytes_read"] for b in data["dram"]) > 0
    code, out, err = traffic(tiny_hw_path, "--candidate", MCAST, "--no-noc-bound")
    assert code == 0 and "busiest links of NoC0" in out
