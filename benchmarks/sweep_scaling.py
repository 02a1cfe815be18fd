"""Sweep throughput with 1 and 2 Dask workers: rows per second.

    python benchmarks/sweep_scaling.py --ops 10     # the first 10 matmuls and attentions of Llama-3-8B
    python benchmarks/sweep_scaling.py --quick      # two small decode ops: a smoke run (seconds)

The same ops (the first ``--ops`` of Llama-3-8B's matmuls and attentions, ``w1`` standing for the gate/up
pair of one shape: qkv, wo, w1, w2, lm_head and attention per phase, prefill 2k first; on wormhole_n150) are
swept twice in this process into fresh stores, on a LocalCluster of 1 and then 2 single-threaded worker
processes; each row is one op on one chip (the two fastest candidates solved, every other proven no faster,
ttnn's default config priced; the settings of ``loom-explorer sweep``). The time includes starting the
cluster.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from loom_explorer.sweep.ops import model_ops
from loom_explorer.sweep.run import run_sweep
from loom_explorer.sweep.task import SweepSettings

QUICK_OPS = ("llama-3-8b decode b1: wo", "llama-3-8b decode b32: wo")
TIMED = ("qkv", "wo", "w1", "w2", "lm_head", "attention")  # one op per matmul shape, and the attention


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=12)
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_OPS)} (seconds)")
    args = parser.parse_args()
    ops = model_ops("llama-3-8b")
    timed = [op for op in ops if op.label.split(": ", 1)[1] in TIMED]
    ops = [op for op in ops if op.label in QUICK_OPS] if args.quick else timed[: args.ops]
    settings = SweepSettings(time_limit_seconds=args.time_limit, use_memory=False)  # every run solves
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            start = time.perf_counter()
            summary = run_sweep(
                ops,
                ["wormhole_n150"],
                Path(tmp) / f"w{workers}.sqlite",
                workers=workers,
                settings=settings,
                progress=None,
            )
            seconds = time.perf_counter() - start
            rates[workers] = summary.solved / seconds
            print(
                f"{workers} worker(s): {summary.solved} rows ({summary.failed} failed) in {seconds:.1f} s = "
                f"{rates[workers]:.3f} rows/s",
                flush=True,
            )
    if not all(rates.values()):
        raise SystemExit("a sweep solved no row")
    print(f"2 workers / 1 worker: {rates[2] / rates[1]:.2f}x")


if __name__ == "__main__":
    main()
