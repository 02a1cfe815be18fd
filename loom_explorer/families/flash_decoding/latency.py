"""Latency, traffic and DRAM reads of a flash-decoding candidate (``families/flash_decoding/quantities.py``).

The slowest core is a group's first core: it streams its run of key chunks like any core of the group,
then combines the others' partials. Its streaming is attention's (``families/attention/latency.py``, with
``chunks = g`` groups, ``steps = g * ceil(n_k / s)`` and the packed ``r``-tile query block), plus per group:

    gather  = ceil((s - 1) * P * b_acc / W_unicast) + (s - 1) * L_hop + [s > 1] * L_transaction
    combine = rounds * (c_fpu * (3 * r * D_t + 6 * r) + c_exp * 2 * r)

``P = r * (D_t + 2)`` partial tiles (output, row max, row sum), ``b_acc`` the bytes of a partial tile; per
combined partial the FPU rescales and adds the two outputs (``3 r D_t`` tiles) and the statistics (max,
two subtractions, two products and a sum: ``6 r``) and the SFPU takes two exponentials (``2 r``).
The exported TT-Lang kernel's first core receives the ``s - 1`` partials and combines them one after
another (``rounds = s - 1``, the gather as above). ttnn's ``sdpa_decode`` (0.81.1: writer_decode_all.cpp,
"Tree Reduction Logic") combines them in a binary tree: ``rounds = ceil(log2 s)``, each receiving one partial,
so the first core waits ``rounds * (ceil(P * b_acc / W_unicast) + L_hop + L_transaction)`` for them.

Traffic: ``q`` once per group, ``k`` and ``v`` once per step (every core), the partials gathered to each
group's first core (``gather``, grouped by ``s`` consecutive cores), the output written by the first cores,
and on a ragged cache the key mask read by each first core with each group's last chunk (``quantities.py``; the
first core of a group takes its last run of key chunks, so it is the one that holds the padded chunk).
"""

from __future__ import annotations

from collections.abc import Sequence

from loom_explorer.families.attention.latency import attention_latency_terms
from loom_explorer.families.flash_decoding.quantities import KEY_MASK, DecodeQuantities
from loom_explorer.model.expr import Expr, ceil_rate, minimum, mul, select
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.model.latency import block_bytes, eltwise_op_cycles
from loom_explorer.model.noc_bound import LinkShare
from loom_explorer.model.schedule import LatencyTerm
from loom_explorer.model.traffic import WRITER_NOC, input_flows
from loom_explorer.problem import KernelTarget
from loom_explorer.program.dsl import Eltwise


def combine_rounds(q: DecodeQuantities) -> Expr:
    """Partials the first core of a group combines one after another (module docstring)."""
    if q.problem.target is KernelTarget.ttnn:
        return select(q.kv_cores, {s: (s - 1).bit_length() for s in q.kv_cores.values})  # ceil(log2 s)
    return q.kv_cores - 1


def _gather_cycles(q: DecodeQuantities) -> Expr:
    """The partials' arrival at a group's first core (module docstring)."""
    noc, s = q.hw.noc, q.kv_cores
    one = mul(q.partial_tiles, q.acc_tile_bytes)
    if q.problem.target is KernelTarget.ttnn:
        return mul(
            combine_rounds(q),
            ceil_rate(one, noc.unicast_bytes_per_cycle) + noc.hop_latency_cycles + noc.transaction_latency_cycles,
        )
    return (
        ceil_rate(mul(s - 1, one), noc.unicast_bytes_per_cycle)
        + mul(noc.hop_latency_cycles, s - 1)
        + mul(noc.transaction_latency_cycles, minimum(1, s - 1))
    )


def decode_latency_terms(
    q: DecodeQuantities, step_links: Sequence[LinkShare] = ()
) -> tuple[Expr, list[LatencyTerm], Expr]:
    """Attention's objective, terms and lower bound, plus the gather and combine of every group."""
    objective, terms, lower = attention_latency_terms(q, step_links)
    hw, r, dt = q.hw, q.qc, q.head_tiles
    c = hw.compute
    gather = _gather_cycles(q)
    exp = eltwise_op_cycles(hw, q.problem, Eltwise("exp", q.st.output, unit="sfpu", when="step"))
    combine = mul(combine_rounds(q), mul(r, c.eltwise_tile_cycles * (3 * dt + 6) + 2 * exp))
    g = q.groups_per_core
    extra = [
        LatencyTerm(
            "gather", mul(g, gather), "partial outputs, maxima and sums sent L1-to-L1 to the group's first core"
        ),
        LatencyTerm("combine", mul(g, combine), "partials rescaled to the common maximum and added"),
    ]
    added = mul(g, gather + combine)
    return objective + added, terms + extra, lower + added


def decode_flows(q: DecodeQuantities) -> list[TrafficFlow]:
    """The NoC flows of flash-decoding (module docstring)."""
    q_in, k_in, v_in = q.st.streamed
    out, s = q.st.output, q.kv_cores
    flows = input_flows(q, {q_in: q.chunks, k_in: q.steps, v_in: q.steps})
    flows.append(
        TrafficFlow(
            f"{out} partials gather",
            out,
            "gather",
            "all",
            "xy",
            WRITER_NOC,
            mul(q.partial_tiles, q.acc_tile_bytes),
            q.chunks,
            s,
            "xy",
        )
    )
    flows.append(
        TrafficFlow(
            f"{out} write", out, "dram_write", "group_heads", None, WRITER_NOC, block_bytes(q, out), q.chunks, s, "xy"
        )
    )
    if q.ragged:
        scores = q.st.scores
        flows.append(
            TrafficFlow(
                "key mask read",
                KEY_MASK,
                "dram_read",
                "group_heads",
                None,
                WRITER_NOC,
                mul(q.key_mask_tiles, q.tile_bytes(scores)),
                q.chunks,
                s,
                "xy",
                format_of=scores,
            )
        )
    return flows
