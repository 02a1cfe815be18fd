"""A schedule's transfers as a tt-npe workload, to cross-check our link loads with Tenstorrent's NoC
performance estimator (``tt_npe.py -w FILE.json``).

Format (tt-npe's JSON workloads, e.g. ``tt_npe/workload/example_wl.json``): ``{"phases": [{"transfers":
[...]}]}``, each transfer with ``packet_size``, ``num_packets``, ``src_x``, ``src_y``, ``noc_type``
(``NOC_0``/``NOC_1``), ``injection_rate`` (bytes/cycle the source injects), ``phase_cycle_offset`` and either
``dst_x``/``dst_y`` or, for a multicast, ``mcast_start_x/y``, ``mcast_end_x/y`` (the rectangle that bounds
its destinations). Packets are at most ``noc.max_packet_bytes``; all transfers go in one phase, starting
together (the steady state of the schedule's loop).
"""

from __future__ import annotations

import json
from typing import Any

from loom_explorer.export.exporter import SolvedSchedule
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.problem import KernelTarget
from loom_explorer.traffic.transfers import Transfer, schedule_transfers

NPE_SCHEMA_NOTE = "loom-explorer tt-npe workload, one phase"


def npe_transfer(hw: HardwareSpec, t: Transfer) -> dict[str, Any]:
    packet = min(t.bytes, hw.noc.max_packet_bytes)
    rate = hw.dram.channel_peak_bytes_per_cycle if t.kind == "dram_read" else hw.noc.unicast_bytes_per_cycle
    out: dict[str, Any] = {
        "packet_size": packet,
        "num_packets": -(-t.bytes // packet) * t.count,
        "src_x": t.src[0],
        "src_y": t.src[1],
        "injection_rate": float(rate),
        "phase_cycle_offset": 0,
        "noc_type": f"NOC_{t.noc}",
    }
    if len(t.dsts) == 1:
        out["dst_x"], out["dst_y"] = t.dsts[0]
    else:
        xs, ys = [d[0] for d in t.dsts], [d[1] for d in t.dsts]
        out.update(mcast_start_x=min(xs), mcast_start_y=min(ys), mcast_end_x=max(xs), mcast_end_y=max(ys))
    return out


def npe_workload(hw: HardwareSpec, transfers: list[Transfer]) -> dict[str, Any]:
    return {
        "note": NPE_SCHEMA_NOTE,
        "hardware": hw.name,
        "phases": [{"transfers": [npe_transfer(hw, t) for t in transfers]}],
    }


class NpeExporter:
    """``--format npe``: the schedule's transfers as a tt-npe workload (module docstring)."""

    name = "npe"
    order = 40
    suffix = "_npe.json"
    summary = "tt-npe workload"
    noun = "a tt-npe workload"
    label = "tt-npe workload (JSON)"
    kernel_target: KernelTarget | None = None

    def can_export(self, solved: SolvedSchedule) -> str | None:
        return None

    def export(self, solved: SolvedSchedule) -> str:
        transfers = schedule_transfers(solved.hw, solved.schedule, solved.values)
        return json.dumps(npe_workload(solved.hw, transfers), indent=1) + "\n"


EXPORTER = NpeExporter()
