"""What refereeing an answer from the results store costs: ``solve/memory.py: referee_answer`` on a real proven
answer, beside what serving any stored answer already costs (building the session's symbolic schedules).

    python benchmarks/store_referee.py            # gemm 4096^3 and a causal GQA attention on the n150
    python benchmarks/store_referee.py --quick    # gemm 256^3 only: a smoke run (seconds)

Each problem is solved once (every candidate, to proven optimality), then its answer is refereed ``--repeat``
times. Printed per problem: candidates, schedules checked (optimum and alternatives), the referee's CPU time
(``time.process_time``: this process's own, so other load on the machine inflates it less than wall time)
per answer and per schedule, and the CPU time of building the session (``Session(...)``), which a command
answered from the store pays before the referee runs.
"""

from __future__ import annotations

import argparse
import time

from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.memory import referee_answer
from loom_explorer.solve.solver import Session, SolveOptions

PROBLEMS = (("gemm", "M=4096,K=4096,N=4096", False), ("flash_attention", "B=1,H=32,Hkv=8,Sq=2048,Skv=2048,D=128", True))
QUICK = (("gemm", "M=256,K=256,N=256", False),)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small problem")
    parser.add_argument("--hw", default="wormhole_n150")
    parser.add_argument("--repeat", type=int, default=100)
    args = parser.parse_args()
    hw = load_hardware(args.hw)
    print(
        f"{'problem':<52} {'candidates':>10} {'schedules':>9} {'referee ms/answer':>17} {'us/schedule':>11} "
        f"{'session ms':>10}"
    )
    for kernel, shape, causal in QUICK if args.quick else PROBLEMS:
        problem = make_problem(load_program(kernel), shape, options={"causal"} if causal else set())
        start = time.process_time()
        session = Session(hw, problem)
        build_s = time.process_time() - start
        results = session.solve({}, SolveOptions(time_limit_seconds=60))
        assert all(r.status in ("optimal", "infeasible", "conflict") for r in results), "not every candidate proven"
        schedules = sum(1 + len(r.alternatives) for r in results if r.solution)
        start = time.process_time()
        for _ in range(args.repeat):
            assert referee_answer(session, {}, None, results) is None
        per_answer_s = (time.process_time() - start) / args.repeat
        label = f"{kernel} {shape}{' causal' if causal else ''}"
        print(
            f"{label:<52} {len(results):>10} {schedules:>9} {per_answer_s * 1e3:>17.2f} "
            f"{per_answer_s / max(schedules, 1) * 1e6:>11.0f} {build_s * 1e3:>10.0f}"
        )


if __name__ == "__main__":
    main()
