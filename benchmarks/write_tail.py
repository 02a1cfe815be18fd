"""The output write tail in the published matmul measurements, against the routed busiest link of the writes.

    python benchmarks/write_tail.py [--data CSV] [--configs CSV]

For every ``use_trace=True`` row whose output is in DRAM, with the config it ran (its manual config, or
ttnn's default for out-of-box rows): the gap between the host time per op (``time_ns``) and the math core's
device time (``derived_device_kernel_ns``, which ends before the writer drains the output), in cycles, beside
the cycles the busiest NoC link needs for every core's output writes, routed transfer by transfer
(``traffic/``: the DRAM-write transfers of the schedule alone). ``gap/link`` near 1 on the single-block rows
is the evidence behind the write-back term (docs/model.md section 5b, docs/performance.md "Fourth
measurement"); rows with several output blocks overlap most of their writes with later blocks.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from loom_explorer.accuracy.gemm_data import CARDS, load_cases
from loom_explorer.accuracy.ttnn_configs import evaluate_config, ttnn_default_config
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.grid import restrict_grid
from loom_explorer.noc.graph import NocGraph
from loom_explorer.traffic import schedule_transfers
from loom_explorer.traffic.loads import route_loads

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA / "gemm_flops_calibration.csv"))
    parser.add_argument("--configs", default=str(DATA / "gemm_manual_configs.csv"))
    args = parser.parse_args()
    cases, _ = load_cases(args.data, args.configs)
    shipped = {card: load_hardware(name) for card, name in CARDS.items()}
    print(f"{'card':<5} {'kind':<6} {'M':>6} {'K':>6} {'N':>6} {'dtype':<10} {'fid':<5} {'blocks':>6} "
          f"{'out MB':>7} {'gap cyc':>10} {'link cyc':>10} {'gap/link':>8}")
    ratios = []
    for case in cases:
        r = case.source
        if r["out_storage"] != "DRAM":
            continue
        hw = restrict_grid(shipped[case.card], *case.grid)
        evaluated = evaluate_config(hw, case.problem, case.config or ttnn_default_config(hw, case.problem))
        v = evaluated.values
        writes = [t for t in schedule_transfers(hw, evaluated.schedule, v) if t.kind == "dram_write"]
        link = max(route_loads(NocGraph(hw), writes).values()) / hw.noc.link_bytes_per_cycle
        gap = (float(r["time_ns"]) - float(r["derived_device_kernel_ns"])) * hw.clock_ghz
        blocks = (v["per_core_M"] // v["out_block_h"]) * (v["per_core_N"] // v["out_block_w"])
        if blocks == 1:
            ratios.append(gap / link)
        print(f"{case.card:<5} {r['config_kind'][:6]:<6} {r['M']:>6} {r['K']:>6} {r['N']:>6} {r['dtype']:<10} "
              f"{r['math_fidelity']:<5} {blocks:>6} {sum(t.bytes_sent for t in writes) / 1e6:>7.2f} "
              f"{gap:>10.0f} {link:>10.0f} {gap / link:>8.2f}")
    ratios.sort()
    print(f"\nsingle-block rows: {len(ratios)}; gap/link median {ratios[len(ratios) // 2]:.2f}, "
          f"range {ratios[0]:.2f}..{ratios[-1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
