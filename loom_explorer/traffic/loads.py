"""Route every transfer of a schedule and total the bytes on every link and at every DRAM channel.

link bytes     = sum over transfers crossing the link of bytes * count (a multicast tree crosses each
                 of its links once)
utilisation    = link bytes / (link width * predicted latency)
link bound     = max over links of ceil(link bytes / link width), and over DRAM channels of
                 ceil((bytes read + written) / channel peak): the cycles the busiest one needs on
                 its own; its share of the predicted latency is what the busiest link explains.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.noc.graph import Coord, Link, NocGraph
from loom_explorer.traffic.transfers import Transfer


@dataclass(frozen=True, slots=True)
class LinkLoad:
    noc: int
    src: Coord
    dst: Coord
    bytes: int
    utilisation: float


@dataclass(frozen=True, slots=True)
class BankLoad:
    bank: int
    bytes_read: int
    bytes_written: int


@dataclass(frozen=True, slots=True)
class TrafficReport:
    links: tuple[LinkLoad, ...]  # every loaded link, busiest first
    dram: tuple[BankLoad, ...]
    bytes_sent: int
    bytes_received: int
    bytes_multicast: int  # sent by multicasts (each counted once at the sender)
    bytes_unicast: int  # sent core to core (split-K gathers)
    link_bound_cycles: int
    busiest: str  # what sets link_bound_cycles: "NoC0 (x, y)->(x, y)" or "DRAM bank k"
    latency_cycles: int

    @property
    def explained(self) -> float:
        """Share of the predicted latency the busiest link (or bank) accounts for on its own."""
        return self.link_bound_cycles / self.latency_cycles if self.latency_cycles else 0.0


def route_loads(graph: NocGraph, transfers: list[Transfer]) -> dict[Link, int]:
    loads: dict[Link, int] = defaultdict(int)
    for t in transfers:
        for link in graph.tree(t.noc, t.src, t.dsts):
            loads[link] += t.bytes_sent
    return dict(loads)


def traffic_report(hw: HardwareSpec, transfers: list[Transfer], latency_cycles: int) -> TrafficReport:
    graph = NocGraph(hw)
    loads = route_loads(graph, transfers)
    width = hw.noc.link_bytes_per_cycle
    links = tuple(
        sorted(
            (
                LinkLoad(noc, a, b, n, n / (width * latency_cycles) if latency_cycles else 0.0)
                for (noc, a, b), n in loads.items()
                if n
            ),
            key=lambda x: (-x.bytes, x.noc, x.src, x.dst),
        )
    )
    read, written = [0] * hw.dram.channels, [0] * hw.dram.channels
    for t in transfers:
        if t.channel is not None:
            (read if t.kind == "dram_read" else written)[t.channel] += t.bytes_sent
    dram = tuple(BankLoad(k, read[k], written[k]) for k in range(hw.dram.channels))
    candidates = [(math.ceil(x.bytes / width), f"NoC{x.noc} {x.src}->{x.dst}") for x in links[:1]]
    peak = hw.dram.channel_peak_bytes_per_cycle
    candidates += [(math.ceil((b.bytes_read + b.bytes_written) / peak), f"DRAM bank {b.bank}") for b in dram]
    bound, busiest = max(candidates, default=(0, "none"))
    return TrafficReport(
        links=links,
        dram=dram,
        bytes_sent=sum(t.bytes_sent for t in transfers),
        bytes_received=sum(t.bytes_received for t in transfers),
        bytes_multicast=sum(t.bytes_sent for t in transfers if t.kind == "multicast"),
        bytes_unicast=sum(t.bytes_sent for t in transfers if t.kind == "gather"),
        link_bound_cycles=bound,
        busiest=busiest,
        latency_cycles=latency_cycles,
    )
