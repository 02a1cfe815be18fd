"""Which NoC link times join a step's max (``model/noc_bound.py: step_link_shares``) and the write-back
(``write_link_shares``).

A link time is left out when the flow's own transfer term in the same max is at least as large for every
grid shape. Leaving it out must not change any latency: the model with every link time and the model with
the kept ones are evaluated on the same random points of every candidate's space and must agree exactly.
"""

from __future__ import annotations

import math
import random

import pytest

from loom_explorer.families.attention.latency import attention_latency_terms
from loom_explorer.families.attention.quantities import build_attention_quantities
from loom_explorer.families.attention.traffic import attention_flows
from loom_explorer.families.contraction.latency import latency_terms
from loom_explorer.families.contraction.quantities import build_quantities
from loom_explorer.families.contraction.traffic import contraction_flows
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.expr import compile_python
from loom_explorer.model.noc_bound import link_share, step_link_shares, write_link_shares
from loom_explorer.noc.graph import NocGraph
from loom_explorer.problem import Placement, make_problem
from loom_explorer.program import load_program
from loom_explorer.traffic import schedule_transfers
from loom_explorer.traffic.loads import route_loads
from loom_explorer.validate import referee

CASES = [
    ("wormhole_n150", "gemm", "M=2048,K=1024,N=1536"),
    ("blackhole_p150a", "gemm", "M=640,K=1600,N=3200"),
    ("wormhole_n150", "flash_attention", "B=2,H=1,Sq=1024,Skv=1024,D=64"),
    ("blackhole_p150a", "flash_attention", "B=1,H=8,Hkv=2,Sq=512,Skv=512,D=128"),
]


def _models(hw_name: str, kernel: str, shape: str):
    """Per candidate: (name, params, latency with every link time, latency with the kept ones, the kept
    link shares, every link share, the flows)."""
    hw = load_hardware(hw_name)
    problem = make_problem(load_program(kernel), shape)
    for candidate in enumerate_candidates(problem):
        if kernel == "gemm":
            q = build_quantities(hw, problem, candidate)
            flows, tensors, terms = contraction_flows(q), q.inputs, latency_terms
        else:
            q = build_attention_quantities(hw, problem, candidate)  # type: ignore[assignment]
            flows, tensors, terms = attention_flows(q), q.st.streamed[1:], attention_latency_terms  # type: ignore[arg-type, assignment, attr-defined]
        every = [link_share(q, f) for f in flows if f.tensor in tensors and f.kind in ("dram_read", "multicast")]
        kept = step_link_shares(q, flows, tensors)
        yield candidate.name, q.params, terms(q, every)[0], terms(q, kept)[0], kept, every, flows


@pytest.mark.parametrize("hw_name, kernel, shape", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_leaving_out_dominated_link_times_changes_no_latency(hw_name, kernel, shape):
    rng = random.Random(7)
    dropped = kept_total = 0
    for name, params, full, filtered, kept, every, _ in _models(hw_name, kernel, shape):
        dropped += len(every) - len(kept)
        kept_total += len(kept)
        f_full, f_kept = compile_python(full), compile_python(filtered)
        compared = 0
        for _ in range(400):
            values = {p.name: rng.choice(p.values) for p in params}
            try:
                expected = f_full(values)
            except ZeroDivisionError:  # a point outside the legal space (e.g. more cores than work)
                continue
            assert f_kept(values) == expected, (name, values)
            compared += 1
        assert compared >= 100, name
    assert dropped > 0 and kept_total > 0  # both sides of the rule are exercised


@pytest.mark.parametrize("hw_name", ["wormhole_n150", "blackhole_p150a"])
def test_multicast_links_never_bind_on_the_shipped_chips(hw_name):
    """The busiest link of a multicast carries each packet once, at a link rate above the multicast rate;
    the DRAM reads of every core on NoC1 funnel through links that bind (Wormhole: 256 of 12 channels'
    shares on one link at 8x8, about 15x one core's read rate)."""
    for name, _, _, _, kept, _every, flows in _models(hw_name, "gemm", "M=2048,K=2048,N=2048"):
        reads = [f for f in flows if f.kind == "dram_read" and f.tensor in ("in0", "in1")]
        assert len(kept) <= len(reads), name
        if "in0=dram" in name:  # in0 is read by every core on NoC1
            assert any(s.tensor == "in0" for s in kept), name


# --- output writes (``write_link_shares``): every core writes its block at once at the end of a block ---

WRITE_CASES = [  # (hardware, shape, the config's params: ttnn's default 2-D multicast config of the shape)
    (
        "wormhole_n150",
        "M=1024,K=1024,N=2048",
        dict(grid_x=8, grid_y=8, per_core_M=4, per_core_N=8, in0_block_w=4, out_block_h=4, out_block_w=8),
    ),
    (
        "blackhole_p150a",
        "M=1280,K=1664,N=3328",
        dict(grid_x=13, grid_y=10, per_core_M=4, per_core_N=8, in0_block_w=4, out_block_h=4, out_block_w=8),
    ),
]
MCAST_2D = "M@y,N@x|in0=mcast_x,in1=mcast_y"


@pytest.mark.parametrize("hw_name, shape, pinned", WRITE_CASES, ids=[c[0] for c in WRITE_CASES])
def test_write_back_is_the_busiest_routed_link_of_the_output_writes(hw_name, shape, pinned):
    """The model's write-back of the output block equals, on a hand-picked config, the time the busiest
    link needs for the output writes routed transfer by transfer (``traffic/``, an independent path:
    DOR routes of every core's pages to their channels), plus the write latency; and that it is far above
    one core writing its block alone, which is all the model charged before."""
    hw = load_hardware(hw_name)
    problem = make_problem(load_program("gemm"), shape)
    candidate = next(c for c in enumerate_candidates(problem) if c.name == MCAST_2D)
    schedule = build_schedule(hw, problem, candidate)
    # every other parameter (the sub-blocks) at 1
    values = {
        **{p: 1 for p in schedule.param_names},
        **pinned,
        "per_core_K": problem.tiles("K"),
        "in0_buffer_depth": 2,
        "in1_buffer_depth": 2,
    }
    writes = [t for t in schedule_transfers(hw, schedule, values) if t.kind == "dram_write"]
    busiest = max(route_loads(NocGraph(hw), writes).values())
    link_cycles = -(-busiest // hw.noc.link_bytes_per_cycle)
    block_bytes = pinned["out_block_h"] * pinned["out_block_w"] * hw.tile_bytes[problem.data_format("out")]
    alone = math.ceil(block_bytes / hw.dram.core_write_bytes_per_cycle)
    write_back = dict(referee(schedule, values).solution.breakdown)["write_back"]
    # the model spreads a block evenly over the channels; the routed pages are whole pages
    assert write_back - hw.dram.write_latency_cycles == pytest.approx(link_cycles, rel=1e-3)
    assert link_cycles > 5 * alone


@pytest.mark.parametrize("hw_name", ["wormhole_n150", "blackhole_p150a"])
def test_output_write_links_are_kept_where_the_output_is_in_dram(hw_name):
    """All cores writing interleaved pages funnel through the DRAM columns' links, so the write link is
    kept for every candidate that writes DRAM, and there is none with the output in L1."""
    hw = load_hardware(hw_name)
    for memory, expected in (({}, 1), ({"out": Placement.l1}, 0)):
        problem = make_problem(load_program("gemm"), "M=2048,K=2048,N=2048", placements=memory)
        for candidate in enumerate_candidates(problem):
            q = build_quantities(hw, problem, candidate)
            shares = write_link_shares(q, contraction_flows(q))
            assert len(shares) == expected and all(s.tensor == "out" for s in shares), (memory, candidate.name)
