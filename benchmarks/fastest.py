"""The fastest candidate only (``SolveOptions.fastest``): where its time goes, and the two choices behind it.

    python benchmarks/fastest.py                 # 8 GEMM shapes on n150 and p150a
    python benchmarks/fastest.py --shapes M=2048,K=2048,N=2048 --hw wormhole_n150

For each shape, in one process, on fresh sessions:

* ``all s``: every candidate solved to its own optimum (the default ``solve``);
* ``fast s``: the branch and bound over candidates as shipped, with ``opt`` the candidates it solved to
  their optimum, ``opt s`` the time they took and ``dom s`` the time of the proofs that the others are
  slower (``dominated``);
* ``enum s`` / ``enum opt``: the same with the candidates taken in enumeration order until a schedule is
  known (the traffic rank of ``solve/solver.py: _traffic_rank`` switched off), to show what the rank buys;
* ``dom 1w`` / ``dom 4w``: the proofs that every other candidate is slower than the best, each run alone
  with one CP-SAT worker and with four (the shipped screen uses one).

The best latency of every variant is checked against the full solve.
"""

from __future__ import annotations

import argparse
import sys
import time
from unittest import mock

from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve import solver
from loom_explorer.solve.solver import Session, SolveOptions

SHAPES = ("M=256,K=256,N=256", "M=2048,K=2048,N=2048", "M=256,K=16384,N=256", "M=16384,K=256,N=256",
          "M=16384,K=256,N=16384", "M=16384,K=2048,N=16384", "M=16384,K=16384,N=16384", "M=640,K=1600,N=3200")


def fresh(hw_name: str, shape: str) -> Session:
    session = Session(load_hardware(hw_name), make_problem(load_program("gemm"), shape))
    for s in session.schedules:
        session.compiled(s)
    return session


def timed(session: Session, options: SolveOptions) -> tuple[float, list]:
    start = time.perf_counter()
    results = session.solve({}, options)
    return time.perf_counter() - start, results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default="wormhole_n150,blackhole_p150a")
    parser.add_argument("--shapes", default=";".join(SHAPES),
                        help="shapes separated by ';'")
    args = parser.parse_args()
    print(f"{'hw':<16} {'shape':<25} {'all s':>6} {'fast s':>6} {'opt':>3} {'opt s':>6} {'dom s':>6} "
          f"{'enum s':>6} {'enum opt':>8} {'dom 1w':>6} {'dom 4w':>6}")
    totals = [0.0] * 6
    for hw_name in args.hw.split(","):
        for shape in args.shapes.split(";"):
            all_s, full = timed(fresh(hw_name, shape), SolveOptions())
            best = full[0].solution.latency_cycles
            fast_s, fast = timed(fresh(hw_name, shape), SolveOptions(fastest=1))
            with mock.patch.object(solver, "_traffic_rank", lambda s: 0):
                enum_s, enum = timed(fresh(hw_name, shape), SolveOptions(fastest=1))
            for results in (fast, enum):
                assert results[0].solution is not None and results[0].solution.latency_cycles == best, shape
            session = fresh(hw_name, shape)
            dom = []
            for workers in (1, 4):
                seconds = 0.0
                for r in full[1:]:
                    raw = session.compiled(session.schedule(r.candidate_name)).solve({}, 60.0, workers,
                                                                                      upper_bound=best)
                    assert raw.status == "INFEASIBLE" or raw.objective == best, (shape, r.candidate_name)
                    seconds += raw.seconds
                dom.append(seconds)
            solved = [r for r in fast if r.status == "optimal"]
            opt_s = sum(r.solve_seconds for r in solved)
            dom_s = sum(r.solve_seconds for r in fast if r.status == "dominated")
            enum_opt = sum(r.status == "optimal" for r in enum)
            row = [all_s, fast_s, enum_s, dom[0], dom[1], opt_s]
            totals = [a + b for a, b in zip(totals, row)]
            print(f"{hw_name:<16} {shape:<25} {all_s:>6.2f} {fast_s:>6.2f} {len(solved):>3} {opt_s:>6.2f} "
                  f"{dom_s:>6.2f} {enum_s:>6.2f} {enum_opt:>8} {dom[0]:>6.2f} {dom[1]:>6.2f}", flush=True)
    print(f"\ntotals: every candidate {totals[0]:.1f} s, fastest only {totals[1]:.1f} s "
          f"({totals[0] / totals[1]:.1f}x), enumeration order {totals[2]:.1f} s; "
          f"proofs of the others with 1 / 4 workers {totals[3]:.1f} / {totals[4]:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
