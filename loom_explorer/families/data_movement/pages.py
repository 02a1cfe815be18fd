"""A core's DRAM read and write rate at a page size: the data-movement family's reads of row-major tensors.

A row-major tensor is stored as pages of one row of its last dimension (a "stick": ``E_last * e`` bytes, ``e``
the element's bytes), interleaved over the DRAM banks page by page, and ttnn's readers and writers move it one
page per NoC transaction. Small transactions are dominated by their fixed cost, so a core moves sticks of a
few bytes far slower than tiles. The rate at page size ``p`` comes from tt-metal's published "DRAM Interleaved
Packet Sizes" tables (``loom_explorer/data/published/noc_dm_packet_sizes.csv``: the rows of 256 transactions
of each size, one core; ``Receiver`` reads, ``Sender`` writes; the table the hardware files' DRAM rates come
from), per transaction ``c(s) = latency_cycles / 256`` cycles at each measured size ``s``:

    rate(p) = p / c(s_0)                                    p <= s_0 (the smallest size: fixed cost per page)
    rate(p) = p / (c(s_i) + (p - s_i)*(c(s_i+1) - c(s_i))/(s_i+1 - s_i))   s_i <= p <= s_i+1
    rate(p) = bandwidth at the largest size                 p above it

and never above the hardware file's ``dram.core_read_bytes_per_cycle`` (``core_write_bytes_per_cycle``), so a
tile-sized or larger page reads as the other families' tiles. A chip whose ``arch`` the table does not cover
is refused (``ProblemError``) naming the architectures it does.

A kernel that waits for every page before it issues the next (``barriers.py``) pays each page's latency ``L``
as well (the round trip of one transaction, not hidden behind the next):

    rate_waited(p) = p / (L + p / rate(p))
"""

from __future__ import annotations

import csv
from collections import defaultdict
from fractions import Fraction
from functools import cache
from typing import Literal

from loom_explorer.data import published_path
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.problem import ProblemError

TABLE = "DRAM Interleaved Packet Sizes"
TRANSACTIONS = 256
Direction = Literal["read", "write"]
KERNEL = {"read": "Receiver", "write": "Sender"}


@cache
def _cycles_per_transaction() -> dict[tuple[str, str], tuple[tuple[int, Fraction], ...]]:
    """(arch, kernel) -> ((transaction bytes, cycles per transaction), ...) in size order."""
    out: dict[tuple[str, str], list[tuple[int, Fraction]]] = defaultdict(list)
    with published_path("noc_dm_packet_sizes.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            if row["table"] == TABLE and int(row["num_transactions"]) == TRANSACTIONS:
                size = int(row["transaction_size_bytes"])
                out[(row["arch"], row["kernel"])].append((size, Fraction(int(row["latency_cycles"]), TRANSACTIONS)))
    return {k: tuple(sorted(v)) for k, v in out.items()}


def page_bytes_per_cycle(hw: HardwareSpec, page_bytes: int, direction: Direction) -> Fraction:
    """A core's DRAM ``direction`` rate in bytes per cycle for pages of ``page_bytes`` (module docstring)."""
    table = _cycles_per_transaction().get((hw.arch, KERNEL[direction]))
    if not table:
        known = sorted({arch for arch, _ in _cycles_per_transaction()})
        raise ProblemError(
            f"hardware {hw.name} (arch {hw.arch}): the page-size DRAM rates of row-major tensors are published for "
            f"{', '.join(known)} only"
        )
    cap = Fraction(hw.dram.core_read_bytes_per_cycle if direction == "read" else hw.dram.core_write_bytes_per_cycle)
    cap = cap.limit_denominator(1000)
    size0, c0 = table[0]
    if page_bytes <= size0:
        return min(cap, Fraction(page_bytes) / c0)
    for (s_lo, c_lo), (s_hi, c_hi) in zip(table, table[1:], strict=False):
        if page_bytes <= s_hi:
            cycles = c_lo + (page_bytes - s_lo) * (c_hi - c_lo) / (s_hi - s_lo)
            return min(cap, Fraction(page_bytes) / cycles)
    s_last, c_last = table[-1]
    return min(cap, Fraction(s_last) / c_last)


def waited_page_bytes_per_cycle(
    hw: HardwareSpec, page_bytes: int, direction: Direction, latency_cycles: int
) -> Fraction:
    """A core's ``direction`` rate for pages of ``page_bytes`` moved one at a time, each waited for:
    ``p / (L + p / rate(p))`` (module docstring), ``L = latency_cycles``."""
    streamed = page_bytes_per_cycle(hw, page_bytes, direction)
    return Fraction(page_bytes) / (latency_cycles + Fraction(page_bytes) / streamed)
