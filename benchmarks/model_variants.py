"""Time to solve every candidate of a few fixed shapes, for comparing model or solver variants run one
after another (docs/performance.md, "Solve speed").

    python benchmarks/model_variants.py                 # 6 GEMM shapes x 2 seeds, the shipped model
    python benchmarks/model_variants.py --no-links      # the model without NoC link times
    python benchmarks/model_variants.py --kernel flash_attention --seeds 1   # 5 attention shapes, mostly causal
    python benchmarks/model_variants.py --only "n150 M=16384,K=256"           # the shapes matching a substring
    python benchmarks/model_variants.py --workers 1 --parallel-models 2      # other solver settings
    python benchmarks/model_variants.py --quick         # the first shape, one seed: a smoke run (seconds)

Prints each shape's solve times (one per seed), the total wall and CPU time (every thread; the CPU
figure is the work a machine with more cores could spread), and the best latency of every shape (so two
variants of an exact change can be checked to give the same optima).
"""

from __future__ import annotations

import argparse
import sys
import time

from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions

SHAPES = {
    "gemm": [
        ("wormhole_n150", "M=2048,K=2048,N=2048", False),
        ("wormhole_n150", "M=16384,K=2048,N=2048", False),
        ("wormhole_n150", "M=256,K=16384,N=256", False),
        ("wormhole_n150", "M=16384,K=256,N=16384", False),
        ("blackhole_p150a", "M=2048,K=2048,N=2048", False),
        ("blackhole_p150a", "M=16384,K=2048,N=16384", False),
    ],
    "flash_attention": [
        ("wormhole_n150", "B=1,H=1,Sq=16384,Skv=16384,D=128", False),
        ("wormhole_n150", "B=1,H=1,Sq=16384,Skv=16384,D=128", True),
        ("wormhole_n150", "B=8,H=1,Sq=2048,Skv=2048,D=64", True),
        ("blackhole_p150a", "B=2,H=1,Sq=7680,Skv=7680,D=128", True),
        ("blackhole_p150a", "B=1,H=32,Hkv=8,Sq=2048,Skv=2048,D=128", True),
    ],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="gemm", choices=sorted(SHAPES))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--no-links", action="store_true", help="Session(noc_bound=False)")
    parser.add_argument("--only", default="", help="only the shapes whose 'hardware shape' contains this")
    parser.add_argument(
        "--workers",
        type=int,
        default=SolveOptions().workers_per_model,
        help="SolveOptions.workers_per_model: CP-SAT workers per candidate",
    )
    parser.add_argument(
        "--parallel-models",
        type=int,
        default=SolveOptions().parallel_models,
        help="SolveOptions.parallel_models: candidates solved at once",
    )
    parser.add_argument("--quick", action="store_true", help="the kernel's first shape only, one seed")
    args = parser.parse_args()
    shapes = SHAPES[args.kernel][:1] if args.quick else SHAPES[args.kernel]
    seeds = 1 if args.quick else args.seeds
    total, cpu, bests = 0.0, 0.0, []
    for hw_name, shape, causal in shapes:
        if args.only not in f"{hw_name} {shape}":
            continue
        hw = load_hardware(hw_name)
        problem = make_problem(load_program(args.kernel), shape, options={"causal"} if causal else set())
        times = []
        for seed in range(seeds):
            session = Session(hw, problem, noc_bound=not args.no_links)
            start, cpu_start = time.perf_counter(), time.process_time()  # CPU: every thread, CP-SAT's too
            results = session.solve(
                options=SolveOptions(seed=seed, workers_per_model=args.workers, parallel_models=args.parallel_models)
            )
            times.append(time.perf_counter() - start)
            cpu += time.process_time() - cpu_start
            unproven = [r.candidate_name for r in results if r.status not in ("optimal", "infeasible", "conflict")]
            if unproven:
                raise SystemExit(f"{hw_name} {shape}: not proven: {unproven}")
        best = results[0].solution  # type: ignore[possibly-undefined]  # seeds >= 1
        assert best is not None
        bests.append(best.latency_cycles)
        total += sum(times)
        print(
            f"{hw_name:<16} {shape + (' causal' if causal else ''):<46} " + " ".join(f"{t:6.2f}" for t in times),
            flush=True,
        )
    if not bests:
        raise SystemExit(f"no shape matches --only {args.only!r}")
    print(
        f"total {total:.1f} s, CPU {cpu:.1f} s ({cpu / total:.2f} cores busy on average); "
        f"best latencies (cycles) {bests}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
