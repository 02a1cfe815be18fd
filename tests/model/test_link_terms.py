"""Which NoC link times join a step's max (``model/noc_bound.py: step_link_shares``).

A link time is left out when the flow's own transfer term in the same max is at least as large for every
grid shape. Leaving it out must not change any latency: the model with every link time and the model with
the kept ones are evaluated on the same random points of every candidate's space and must agree exactly.
"""

from __future__ import annotations

import random

import pytest

from loom_explorer.hardware import load_hardware
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.model.attention import build_attention_quantities
from loom_explorer.model.attention_latency import attention_latency_terms
from loom_explorer.model.expr import compile_python
from loom_explorer.model.latency import latency_terms
from loom_explorer.model.noc_bound import link_share, step_link_shares
from loom_explorer.model.quantities import build_quantities
from loom_explorer.model.traffic import attention_flows, contraction_flows
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program

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
            q = build_attention_quantities(hw, problem, candidate)
            flows, tensors, terms = attention_flows(q), q.st.streamed[1:], attention_latency_terms
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
    for name, _, _, _, kept, every, flows in _models(hw_name, "gemm", "M=2048,K=2048,N=2048"):
        reads = [f for f in flows if f.kind == "dram_read" and f.tensor in ("in0", "in1")]
        assert len(kept) <= len(reads), name
        if "in0=dram" in name:  # in0 is read by every core on NoC1
            assert any(s.tensor == "in0" for s in kept), name
