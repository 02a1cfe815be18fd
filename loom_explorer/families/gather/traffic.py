"""The gather family's traffic (``quantities.py`` for the notation): the table pages each core reads per step,
its index rows once, its output rows written; and the bytes read from DRAM."""

from __future__ import annotations

from loom_explorer.families.gather.quantities import GatherQuantities
from loom_explorer.model.expr import Expr, mul, total
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.model.traffic import WRITER_NOC

READER_NOC = 1


def gather_flows(q: GatherQuantities) -> list[TrafficFlow]:
    """A DRAM table read ``block * k`` pages per step by every core (each its own rows: never multicast);
    a DRAM index read ``index_block`` rows at a time; a DRAM output written ``block`` pages per step."""
    st, out = q.st, []
    if not q.problem.placement(st.table).in_l1:
        out.append(
            TrafficFlow(
                f"{st.table} read", st.table, "dram_read", "all", None, READER_NOC, q.step_bytes(st.table), q.steps
            )
        )
    if not q.problem.placement(st.index).in_l1:
        out.append(
            TrafficFlow(
                f"{st.index} read",
                st.index,
                "dram_read",
                "all",
                None,
                READER_NOC,
                mul(q.index_block, q.index_row_bytes),
                q.index_reads,
            )
        )
    if not q.problem.placement(st.output).in_l1:
        out.append(
            TrafficFlow(
                f"{st.output} write", st.output, "dram_write", "all", None, WRITER_NOC, q.step_bytes(st.output), q.steps
            )
        )
    return out


def gather_dram_read_bytes(q: GatherQuantities) -> Expr:
    """Bytes read from DRAM by all cores: every core's table pages and index rows (those in DRAM)."""
    st = q.st
    parts = []
    if not q.problem.placement(st.table).in_l1:
        parts.append(mul(q.cores, q.steps, q.step_bytes(st.table)))
    if not q.problem.placement(st.index).in_l1:
        parts.append(mul(q.cores, q.core_rows, q.index_row_bytes))
    return total(parts)
