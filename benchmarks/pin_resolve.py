"""Re-solve after a pin: the pin as a one-value domain (shipped) against the pin as an assumption literal.

    python benchmarks/pin_resolve.py
    python benchmarks/pin_resolve.py --hw blackhole_p150a --shapes "M=16384,K=2048,N=16384" --seeds 5

For each shape the best candidate is solved, then re-solved with ``in0_block_w`` pinned to another legal
value (half the optimum's where it can), over several CP-SAT seeds, both ways in the same process and
from the same starting point (``solve/incumbent.py``): through ``CompiledSchedule.solve(pins)``, which
narrows the parameter's domain for that solve, and through an assumption literal
``pin[name=value] => name == value`` on the same compiled model (how pins were passed before). Both
must find the same optimum.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions

SHAPES = ("M=2048,K=16384,N=256", "M=16384,K=256,N=256", "M=16384,K=2048,N=16384", "M=16384,K=16384,N=16384")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default="wormhole_n150,blackhole_p150a")
    parser.add_argument("--shapes", default=";".join(SHAPES), help="shapes separated by ';'")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    domain_ms: list[float] = []
    assumption_ms: list[float] = []
    print(f"{'hw':<16} {'shape':<25} {'pin':<16} {'domain ms (per seed)':<24} {'assumption ms (per seed)'}")
    for hw_name in args.hw.split(","):
        hw = load_hardware(hw_name)
        for shape in args.shapes.split(";"):
            session = Session(hw, make_problem(load_program("gemm"), shape))
            best = session.solve({}, SolveOptions())[0]
            assert best.solution is not None
            schedule = session.schedule(best.candidate_name)
            kb = best.solution.values()["in0_block_w"]
            values = schedule.param("in0_block_w").values
            other = kb // 2 if kb // 2 in values else next(v for v in values if v != kb)
            pins = {"in0_block_w": other}
            known = session.incumbent(schedule, pins)
            hint = known.values if known else best.solution.values()
            upper = known.latency_cycles if known else None
            compiled = session.compiled(schedule)
            row: dict[str, list[float]] = {"domain": [], "assumption": []}
            optima = set()
            for seed in range(args.seeds):
                by_domain = compiled.solve(pins, 60.0, 4, seed, hint=hint, upper_bound=upper)
                literal = compiled.pin_literal("in0_block_w", other)
                by_literal = compiled.solve({}, 60.0, 4, seed, hint=hint, upper_bound=upper,
                                            extra_assumptions=[literal])
                assert by_domain.status == by_literal.status == "OPTIMAL", (shape, seed)
                optima |= {by_domain.objective, by_literal.objective}
                row["domain"].append(by_domain.seconds * 1e3)
                row["assumption"].append(by_literal.seconds * 1e3)
            assert len(optima) == 1, (shape, optima)
            domain_ms += row["domain"]
            assumption_ms += row["assumption"]
            fmt = " ".join(f"{v:.0f}" for v in row["domain"])
            print(f"{hw_name:<16} {shape:<25} {'in0_block_w=' + str(other):<16} {fmt:<24} "
                  f"{' '.join(f'{v:.0f}' for v in row['assumption'])}", flush=True)
    print(f"\nmedian / max over all: domain {statistics.median(domain_ms):.0f} / {max(domain_ms):.0f} ms, "
          f"assumption {statistics.median(assumption_ms):.0f} / {max(assumption_ms):.0f} ms; totals "
          f"{sum(domain_ms) / 1e3:.1f} / {sum(assumption_ms) / 1e3:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
