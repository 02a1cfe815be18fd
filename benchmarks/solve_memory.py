"""The memory of solved problems: `loom-explorer solve` of one problem a second time, against the first time.

    python benchmarks/solve_memory.py            # gemm 4096^3 and a causal attention on the n150
    python benchmarks/solve_memory.py --quick    # gemm 256^3 only: a smoke run (seconds)

Each problem is solved three times, each run a fresh ``loom-explorer`` process as a user runs it, all
recording into one new temporary results store: the first solve, the second (from the store) and a third
with ``--no-cache`` (a solve again, the baseline of the same process start-up). Printed per problem: the wall
time of each, second / first, whether the second printed the same table and said it came from the store.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROBLEMS = (
    ("gemm", "M=4096,K=4096,N=4096", ()),
    ("flash_attention", "B=1,H=32,Hkv=8,Sq=2048,Skv=2048,D=128", ("--causal",)),
)
QUICK = (("gemm", "M=256,K=256,N=256", ()),)


def run(args: list[str], env: dict[str, str]) -> tuple[float, str, str]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "loom_explorer.cli", *args], capture_output=True, text=True, env=env, check=True
    )
    return time.perf_counter() - start, done.stdout, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small problem")
    parser.add_argument("--hw", default="wormhole_n150")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "LOOM_EXPLORER_STORE": str(Path(folder) / "results.sqlite")}
        print(f"{'problem':<52} {'first s':>8} {'second s':>9} {'--no-cache s':>13} {'second/first':>13}  same answer")
        for kernel, shape, extra in QUICK if args.quick else PROBLEMS:
            command = ["solve", kernel, "--hw", args.hw, "--shape", shape, *extra]
            first, out1, _ = run(command, env)
            second, out2, err2 = run(command, env)
            again, out3, err3 = run([*command, "--no-cache"], env)
            same = out1 == out2 and "from the store, proven" in err2 and "from the store" not in err3
            print(
                f"{kernel + ' ' + shape + ' ' + ' '.join(extra):<52} {first:>8.2f} {second:>9.2f} {again:>13.2f} "
                f"{second / first:>13.2f}  {same}"
            )


if __name__ == "__main__":
    main()
