"""What the proofs alone cost: every candidate solved from nothing, and again with its own optimum given.

    python benchmarks/proof_cost.py
    python benchmarks/proof_cost.py --hw blackhole_p150a --shapes "M=16384,K=16384,N=16384"

For each shape every candidate is solved once (to know its optimum), then, each on a freshly compiled
model with the shipped settings (4 CP-SAT workers, presolve off): ``plain s`` from nothing, and
``oracle s`` with its optimum as the hint and as the latency cap, so that CP-SAT only has to prove it. The
oracle total is a floor for any idea that only finds better starting points: with a perfect one, the
candidates of a shape still take that long.
"""

from __future__ import annotations

import argparse
import sys

from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.compiled import CompiledSchedule
from loom_explorer.solve.solver import Session, SolveOptions

SHAPES = ("M=2048,K=2048,N=2048", "M=16384,K=256,N=256", "M=16384,K=256,N=16384", "M=16384,K=16384,N=16384")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default="wormhole_n150,blackhole_p150a")
    parser.add_argument("--shapes", default=";".join(SHAPES), help="shapes separated by ';'")
    args = parser.parse_args()
    print(f"{'hw':<16} {'shape':<25} {'cand':>4} {'plain s':>8} {'oracle s':>8} {'ratio':>6}")
    totals = [0.0, 0.0]
    for hw_name in args.hw.split(","):
        for shape in args.shapes.split(";"):
            session = Session(load_hardware(hw_name), make_problem(load_program("gemm"), shape))
            optima = {r.candidate_name: r.solution for r in session.solve({}, SolveOptions()) if r.solution}
            plain = oracle = 0.0
            for schedule in session.schedules:
                best = optima.get(schedule.candidate.name)
                if best is None:
                    continue
                a = CompiledSchedule(schedule).solve({}, 60.0, 4)
                b = CompiledSchedule(schedule).solve({}, 60.0, 4, hint=best.values(),
                                                     upper_bound=best.latency_cycles)
                assert a.objective == b.objective == best.latency_cycles, (shape, schedule.candidate.name)
                plain, oracle = plain + a.seconds, oracle + b.seconds
            totals = [totals[0] + plain, totals[1] + oracle]
            print(f"{hw_name:<16} {shape:<25} {len(optima):>4} {plain:>8.2f} {oracle:>8.2f} {plain / oracle:>6.1f}",
                  flush=True)
    print(f"\ntotals: from nothing {totals[0]:.1f} s, given each optimum {totals[1]:.1f} s "
          f"({totals[0] / totals[1]:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
