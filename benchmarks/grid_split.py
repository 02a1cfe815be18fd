"""Would fixing the grid first make the proofs cheap? Every candidate solved whole, and again split by grid shape.

    python benchmarks/grid_split.py
    python benchmarks/grid_split.py --hw blackhole_p150a --shape M=16384,K=256,N=256 --workers 4

With ``grid_x`` and ``grid_y`` fixed, the products of the grid and the per-core sizes become linear, so
each piece should relax well. ``whole s``: the shipped solve of one candidate (4 CP-SAT workers, a freshly
compiled model). ``split s``: the same candidate's model solved once per grid shape (both pinned), largest
grid first, each piece capped one cycle below the best schedule found so far, so a piece with nothing
faster is proven INFEASIBLE. Both must find the same optimum.
"""

from __future__ import annotations

import argparse
import sys
import time

from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.compiled import CompiledSchedule
from loom_explorer.solve.solver import Session


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default="wormhole_n150")
    parser.add_argument("--shape", default="M=2048,K=2048,N=2048")
    parser.add_argument("--workers", type=int, default=1, help="CP-SAT workers per grid piece")
    args = parser.parse_args()
    session = Session(load_hardware(args.hw), make_problem(load_program("gemm"), args.shape))
    print(f"{args.hw} gemm {args.shape}; grid pieces with {args.workers} worker(s)")
    print(f"{'candidate':<42} {'whole s':>8} {'split s':>8} {'pieces':>6} {'slowest piece s':>15}")
    whole_total = split_total = 0.0
    for schedule in session.schedules:
        whole = CompiledSchedule(schedule).solve({}, 60.0, 4)
        pieces = CompiledSchedule(schedule)
        grids = sorted(((x, y) for x in schedule.param("grid_x").values for y in schedule.param("grid_y").values),
                       key=lambda g: -g[0] * g[1])
        best: int | None = None
        slowest = 0.0
        start = time.perf_counter()
        for x, y in grids:
            raw = pieces.solve({"grid_x": x, "grid_y": y}, 60.0, args.workers,
                               upper_bound=None if best is None else best - 1)
            slowest = max(slowest, raw.seconds)
            if raw.objective is not None:
                best = raw.objective
        split = time.perf_counter() - start
        assert best == whole.objective, (schedule.candidate.name, best, whole.objective)
        whole_total, split_total = whole_total + whole.seconds, split_total + split
        print(f"{schedule.candidate.name:<42} {whole.seconds:>8.3f} {split:>8.3f} {len(grids):>6} {slowest:>15.3f}",
              flush=True)
    print(f"\ntotals: whole {whole_total:.2f} s, split by grid {split_total:.2f} s ({split_total / whole_total:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
