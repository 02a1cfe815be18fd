"""The fastest-candidate branch and bound, cold: the deferred candidate with the fastest schedule found solved at
once after each round of screens, or every deferred candidate left to the end, side by side in one process.

    python benchmarks/solve_order.py            # 14 per-chip problems of a Llama-3-70B prefill layer on a T3000
    python benchmarks/solve_order.py --quick    # two small problems (seconds)

Each problem is solved twice per round (``Session.solve`` with ``fastest=1``, nothing stored, nothing known:
each ``Session`` new): ``Session(solve_found_at_once=True)`` (the default) and ``False`` (every deferred
candidate solved at the end, as before). The two must prove the same optimum. The problems are the first 14,
by label, of the causal flash attentions and matmuls the mesh planner bounds for the layer (the mesh's
chip, tt-transformers' performance precision: ``mesh/onchip.py``'s per-chip problems). Two rounds, the two
orders alternating, so that drift in the machine's load falls on both. Printed: the load average, each
problem's seconds both ways, and the totals with their ratio.
"""

from __future__ import annotations

import argparse
import os
import time

from loom_explorer.hardware.mesh_load import load_mesh, mesh_chip
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mesh.graph import model_graph
from loom_explorer.mesh.onchip import chip_options, chip_problem
from loom_explorer.mesh.plan import Planner
from loom_explorer.mesh.precision import DEFAULT_PRECISION, precision
from loom_explorer.problem import Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session
from loom_explorer.sweep.ops import DECODE_KV, MODELS


def problems(quick: bool) -> list[tuple[str, Problem]]:
    if quick:
        gemm = load_program("gemm")
        return [(f"gemm {s}", make_problem(gemm, s)) for s in ("M=256,K=256,N=256", "M=512,K=256,N=512")]
    model = MODELS["llama-3-70b"]
    graph = model_graph("layer", model, 2048, True, DECODE_KV, precision(DEFAULT_PRECISION), model.layers)
    planner = Planner(load_mesh("t3000"), graph, use_memory=False)
    chosen = sorted((p for p in planner.bounds if p.kernel in ("flash_attention", "gemm")), key=lambda p: p.label)
    return [(p.label, chip_problem(p)) for p in chosen[:14]]


def solve(hw: HardwareSpec, problem: Problem, at_once: bool) -> tuple[float, int]:
    """Seconds and the proven optimum of one cold solve."""
    start = time.perf_counter()
    results = Session(hw, problem, solve_found_at_once=at_once).solve({}, chip_options(60.0))
    seconds = time.perf_counter() - start
    best = min(r.solution.latency_cycles for r in results if r.solution is not None)
    return seconds, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    hw = mesh_chip(load_mesh("t3000"))
    cases = problems(args.quick)
    totals = {True: 0.0, False: 0.0}
    for label, problem in cases:
        seconds = {True: 0.0, False: 0.0}
        optima = set()
        for at_once in (True, False, False, True):
            took, best = solve(hw, problem, at_once)
            seconds[at_once] += took
            optima.add(best)
        if len(optima) != 1:
            raise SystemExit(f"{label}: the two orders prove different optima {sorted(optima)}")
        totals[True] += seconds[True]
        totals[False] += seconds[False]
        print(f"{label}: at once {seconds[True]:.2f} s, at the end {seconds[False]:.2f} s (two solves each)")
    print(
        f"{len(cases)} problems: at once {totals[True]:.2f} s, at the end {totals[False]:.2f} s; "
        f"at once / at the end {totals[True] / totals[False]:.2f}x"
    )


if __name__ == "__main__":
    main()
