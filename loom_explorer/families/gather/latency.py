"""The gather family's latency (``quantities.py`` for the notation): the objective of one candidate, its named
terms and a lower bound.

A table row is a small page read from wherever the table lives, so a step costs one round trip and then its
bytes at a core's rate (the small-page cost behind the chip file's figures: the transaction-size tables of
``loom_explorer/data/published/noc_dm_packet_sizes.csv`` give, for a few KiB, the fixed latency plus the
bytes at the sustained rate):

    (L, r) = (dram.read_latency_cycles, dram.core_read_bytes_per_cycle)        a DRAM table (or index)
           = (noc.transaction_latency_cycles, noc.unicast_bytes_per_cycle)     one in L1
           = (l1_banks.page_latency_cycles, noc.unicast_bytes_per_cycle)      one L1-interleaved (NoC hops)
    read    = L_table + ceil(block * k * s_table / r_table)                     the step's pages, one wait
    chip    = ceil(cores * block * k * s_table / R_chip)                        every reader at once (a DRAM table)
    compute = block * c_row                                                     (``work.py``)
    write   = ceil(block * s_out / w_core)                                      a DRAM output; 0 in L1
            = ceil(block * s_out / noc.unicast_bytes_per_cycle)                  an L1-interleaved one
    step    = max(read, chip, compute, write, link_X...)                        (pages double-buffered)

ttnn's readers wait for each output row's reads before the next (``block = 1``: a round trip per row), which
is what makes a gather slow on small pages. The whole kernel:

    T_total = launch + fill + n*step + (m - 1)*index + drain
    index   = L_index + ceil(index_block * 4k / r_index)                       one read of index rows, waited
    fill    = index                                                             the first, before any table row
    drain   = L_write for a DRAM output, else 0

The reader reads ``index_block`` output rows' index entries, waits for them, then issues those rows' table
reads (``m = ceil(p / index_block)`` such reads, ``quantities.py``). ttnn's grid sample reader
(``ttnn/cpp/ttnn/operations/pool/grid_sample/device/kernels/dataflow/reader_grid_sample_interleaved_start_id.cpp``,
both the September 2025 version, of the op whose attributes were ``mode``, ``padding_mode``,
``use_precomputed_grid``, ``batch_output_channels``, ``output_mem_config``, and @9f54dcfa) reads one grid
stick with ``noc_async_read`` + ``noc_async_read_barrier`` per spatial position, then its
``grid_batching_factor`` points' four corner sticks with one barrier per point: ``index_block`` is the grid
batching factor, ``block = 1``. The index reads are on the reader's RISC, in series with its table reads,
so the later ``m - 1`` are added to the steps (an upper estimate when compute or the writes bind a step:
the reader's index read then hides under them). An embedding's reader reads the core's index share once
(``index_block = p``: ``m = 1``, nothing added).

Named terms (``launch``, ``fill``, ``compute = n*compute``, ``data_movement = n*(step - compute) +
(m - 1)*index``, ``write_back = drain``) sum to the total.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from loom_explorer.families.gather.quantities import GatherQuantities
from loom_explorer.families.gather.work import row_cycles
from loom_explorer.model.expr import Expr, ceil_rate, const, maximum, mul
from loom_explorer.model.l1_banks import in_l1_banks, page_latency_cycles, transfer_cycles
from loom_explorer.model.schedule import LatencyTerm

if TYPE_CHECKING:
    from loom_explorer.model.noc_bound import LinkShare


def source(q: GatherQuantities, tensor: str) -> tuple[int, float]:
    """``(L, r)`` of reading ``tensor``: DRAM's, or an L1 transaction's (module docstring)."""
    hw = q.hw
    if q.problem.placement(tensor).in_l1:
        return hw.noc.transaction_latency_cycles, hw.noc.unicast_bytes_per_cycle
    if in_l1_banks(q, tensor):
        return page_latency_cycles(hw), hw.noc.unicast_bytes_per_cycle
    return hw.dram.read_latency_cycles, hw.dram.core_read_bytes_per_cycle


def in_dram(q: GatherQuantities, tensor: str) -> bool:
    """Whether ``tensor`` is in DRAM (neither in a core's L1 nor in the worker cores' L1 banks)."""
    return not q.problem.placement(tensor).in_l1 and not in_l1_banks(q, tensor)


def gather_latency_terms(
    q: GatherQuantities, step_links: Sequence[LinkShare] = ()
) -> tuple[Expr, list[LatencyTerm], Expr]:
    """The objective, its named terms and a lower bound (module docstring); the lower bound takes for
    ``n * step`` the compute of the core's rows, ``p * c_row`` (``step >= compute``, ``n * block >= p``)."""
    hw, st = q.hw, q.st
    latency, rate = source(q, st.table)
    table_bytes = q.step_bytes(st.table)
    read = latency + ceil_rate(table_bytes, rate)
    c_row = row_cycles(hw, q.problem)
    compute = mul(q.block, c_row)
    dram_out = in_dram(q, st.output)
    parts: list[Expr] = [read, compute]
    if in_dram(q, st.table):
        parts.append(ceil_rate(mul(q.cores, table_bytes), hw.dram.chip_read_bytes_per_cycle))
    if dram_out:
        parts.append(ceil_rate(q.step_bytes(st.output), hw.dram.core_write_bytes_per_cycle))
    elif in_l1_banks(q, st.output):
        parts.append(transfer_cycles(q, q.step_bytes(st.output)))
    parts += [link.cycles(q, q.step_bytes(link.tensor)) for link in step_links]
    step = maximum(*parts)
    index_latency, index_rate = source(q, st.index)
    index_read = index_latency + ceil_rate(mul(q.index_block, q.index_row_bytes), index_rate)
    fill = index_read
    later_index = mul(q.index_reads - 1, index_read)
    drain = const(hw.dram.write_latency_cycles if dram_out else 0)
    launch = const(hw.compute.kernel_launch_cycles)
    n = q.steps
    objective = launch + fill + mul(n, step) + later_index + drain
    terms = [
        LatencyTerm("launch", launch, "fixed per-op launch on the device"),
        LatencyTerm("fill", fill, "the first index read, before the first table row"),
        LatencyTerm("compute", mul(n, compute), "the weighted sums of the rows read (none for a copy)"),
        LatencyTerm(
            "data_movement",
            mul(n, step) - mul(n, compute) + later_index,
            "steps where the scattered row reads (one round trip each step), the writes or a NoC link outlast "
            "compute, and the reader's later index reads (one round trip each)",
        ),
        LatencyTerm("write_back", drain, "the last rows written to DRAM"),
    ]
    lower = launch + fill + mul(q.core_rows, c_row) + drain
    return objective, terms, lower
