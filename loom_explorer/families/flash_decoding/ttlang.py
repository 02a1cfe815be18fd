"""The flash-decoding family's TT-Lang writer (``WRITER``): the flash-decoding kernel file of a schedule
(``ttlang_kernel.py``, which writes every flash-decoding candidate), its host tensors and its torch reference
for ``verify``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.families.flash_decoding.ttlang_kernel import decode_source
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.targets.ttlang.writer import HostTensor, HostTensors, TtlangWriter


def _decode_unsupported(schedule: SymbolicSchedule) -> str | None:
    return None


def _decode_source(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    return decode_source(built, doc, analyse_attention(built.problem.program))


def _decode_host_tensors(built: RebuiltSchedule) -> HostTensors:
    """q, k, v, o: arguments 0..3, a (batch, key/value head) group per block: its query heads' rows packed
    (``G * Sq`` rows in ``q_chunk_size`` rows), its keys in ``ceil(Skv / k_chunk)`` chunks."""
    p, st, v = built.problem, analyse_attention(built.problem.program), built.solution.values()
    q, k, val = st.streamed
    sq, skv, d = (p.elements(x) for x in (st.q_dim, st.kv_dim, st.head_dim))
    heads = math.prod(p.elements(x) for x in st.batch_dims)
    kv_heads = math.prod(p.elements(p.program.grouped_by(k, x) or x) for x in st.batch_dims)
    kc = v["k_chunk_size"]
    kv_rows = -(-skv // kc) * kc
    qc, group = v["q_chunk_size"], heads // kv_heads
    packed = group * sq
    return (
        (
            HostTensor(q, 0, kv_heads, qc, packed, d),
            HostTensor(k, 1, kv_heads, kv_rows, skv, d),
            HostTensor(val, 2, kv_heads, kv_rows, skv, d),
        ),
        (HostTensor(st.output, 3, kv_heads, qc, packed, d),),
    )


def _decode_reference(built: RebuiltSchedule, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """softmax(q k^T / sqrt(D)) v: the file packs a group's query heads as rows of one item, so no grouping
    and no mask."""
    import torch

    st = analyse_attention(built.problem.program)
    q, k, v = (inputs[t] for t in st.streamed)
    out = torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(1, dim=0), v.repeat_interleave(1, dim=0), is_causal=False
    )
    return {st.output: out}


WRITER = TtlangWriter("flash_decoding", _decode_unsupported, _decode_source, _decode_host_tensors, _decode_reference)
