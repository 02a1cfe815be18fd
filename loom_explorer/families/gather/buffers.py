"""The gather family's L1 buffers of one core (``quantities.py`` for the notation), as ttnn's gather factories
hold them: the table pages double-buffered (``buffering_factor = 2``), the index rows of one index read, the
output pages double-buffered (or the output's shard when it lives in L1)."""

from __future__ import annotations

from loom_explorer.families.gather.quantities import GatherQuantities
from loom_explorer.model.expr import mul
from loom_explorer.model.schedule import L1Buffer


def gather_buffers(q: GatherQuantities) -> list[L1Buffer]:
    st = q.st
    out = [
        L1Buffer(st.table, mul(2, q.step_bytes(st.table)), f"{st.table} pages of two steps (double-buffered)"),
        L1Buffer(st.index, mul(q.index_block, q.index_row_bytes), f"{st.index} rows of one index read"),
    ]
    if q.problem.placement(st.output).in_l1:
        out.append(L1Buffer(st.output, mul(q.core_rows, q.page_bytes(st.output)), f"{st.output} shard (lives in L1)"))
    else:
        out.append(L1Buffer(st.output, mul(2, q.step_bytes(st.output)), f"{st.output} pages (double-buffered)"))
    return out
