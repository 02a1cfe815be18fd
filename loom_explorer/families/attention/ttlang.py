"""The attention family's TT-Lang writer (``WRITER``): the FlashAttention kernel file of a schedule
(``ttlang_kernel.py``), its host tensors and its torch reference for ``verify``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.families.attention.ttlang_kernel import attention_source, attention_unsupported
from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.targets.ttlang.writer import HostTensor, HostTensors, TtlangWriter


def _attention_unsupported(schedule: SymbolicSchedule) -> str | None:
    cand = schedule.candidate
    return attention_unsupported(
        analyse_attention(schedule.problem.program),
        cand.name,
        cand.flattened,
        all(c is Comm.dram for _, c in cand.comms),
    )


def _attention_source(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    return attention_source(built, doc, analyse_attention(built.problem.program))


def _attention_host_tensors(built: RebuiltSchedule) -> HostTensors:
    """q, k, v, o: arguments 0..3: a (batch, query head) of q and o per block of ``ceil(Sq / q_chunk) * q_chunk``
    rows, a (batch, key/value head) of k and v per block of ``ceil(Skv / k_chunk) * k_chunk`` rows."""
    p, st, v = built.problem, analyse_attention(built.problem.program), built.solution.values()
    q, k, val = st.streamed
    sq, skv, d = (p.elements(x) for x in (st.q_dim, st.kv_dim, st.head_dim))
    heads = math.prod(p.elements(x) for x in st.batch_dims)
    kv_heads = math.prod(p.elements(p.program.grouped_by(k, x) or x) for x in st.batch_dims)
    kc = v["k_chunk_size"]
    kv_rows = -(-skv // kc) * kc
    q_rows = -(-sq // v["q_chunk_size"]) * v["q_chunk_size"]
    return (
        (
            HostTensor(q, 0, heads, q_rows, sq, d),
            HostTensor(k, 1, kv_heads, kv_rows, skv, d),
            HostTensor(val, 2, kv_heads, kv_rows, skv, d),
        ),
        (HostTensor(st.output, 3, heads, q_rows, sq, d),),
    )


def _attention_reference(built: RebuiltSchedule, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """softmax(q k^T / sqrt(D)) v, each query head on its key/value head, causal when the problem is."""
    import torch

    st = analyse_attention(built.problem.program)
    q, k, v = (inputs[t] for t in st.streamed)
    groups = q.shape[0] // k.shape[0]
    out = torch.nn.functional.scaled_dot_product_attention(
        q,
        k.repeat_interleave(groups, dim=0),
        v.repeat_interleave(groups, dim=0),
        is_causal=built.problem.has_option("causal"),
    )
    return {st.output: out}


WRITER = TtlangWriter(
    "attention", _attention_unsupported, _attention_source, _attention_host_tensors, _attention_reference
)
