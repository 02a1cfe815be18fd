"""Sweep throughput with 1 and 2 Dask workers on this machine (issue 8): rows per second.

Usage:  python benchmarks/sweep_scaling.py [--ops N] [--time-limit S]

The same ops (the first N of Llama-3-8B's, on wormhole_n150) are swept twice in this process into fresh
stores, on a LocalCluster of 1 and then 2 single-threaded worker processes; each row is one op on one chip
(every candidate solved, ttnn's default config priced). The time includes starting the cluster.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from loom_explorer.sweep.ops import model_ops
from loom_explorer.sweep.run import run_sweep
from loom_explorer.sweep.task import SweepSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=12)
    parser.add_argument("--time-limit", type=float, default=30.0)
    args = parser.parse_args()
    ops = model_ops("llama-3-8b")[:args.ops]
    settings = SweepSettings(time_limit_seconds=args.time_limit)
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            start = time.perf_counter()
            summary = run_sweep(ops, ["wormhole_n150"], Path(tmp) / f"w{workers}.sqlite", workers=workers,
                                settings=settings, progress=None)
            seconds = time.perf_counter() - start
            rates[workers] = summary.solved / seconds
            print(f"{workers} worker(s): {summary.solved} rows ({summary.failed} failed) in {seconds:.1f} s = "
                  f"{rates[workers]:.3f} rows/s")
    print(f"2 workers / 1 worker: {rates[2] / rates[1]:.2f}x")


if __name__ == "__main__":
    main()
