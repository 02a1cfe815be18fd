"""Solve speed: CP-SAT on every candidate of each benchmark shape, beside brute force on the same space.

    python benchmarks/solve_speed.py                      # Loom's 18 GEMM shapes x 2 chips + a ragged one
    python benchmarks/solve_speed.py --kernel flash_attention   # Loom's FlashAttention shapes, causal, GQA
    python benchmarks/solve_speed.py --brute-seconds 60   # more time for brute force per shape
    python benchmarks/solve_speed.py --quick              # 256^3 on wormhole_n150, 2 s of brute force: a smoke run
    python benchmarks/solve_speed.py --kernel all --quick  # and the smallest FlashAttention shape
    python benchmarks/solve_speed.py --baseline           # also solve without a starting schedule, same process
    python benchmarks/solve_speed.py --baseline no-links  # also solve the model without NoC link times

FlashAttention shapes: Loom's (B, L) with B*L = 16384 on Wormhole and 15360 on Blackhole, one head,
D in {64, 128}, each also causal, plus a grouped-query case (32 query heads sharing 8 key/value heads).

For each shape it prints: candidates, how many CP-SAT proved (optimal, or infeasible), the wall time to
solve all of them (SolveOptions defaults: candidates one after the other, a 4-worker CP-SAT portfolio each),
the slowest candidate, a warm re-solve of the best candidate after one pin (the pin moves in0_block_w, or
q_chunk_size for attention, to another legal value), the same for all candidates, and brute force over the
same spaces with a time budget per shape: its wall time, how many candidates it finished, and
whether its optimum equals CP-SAT's on every finished one, and "brute/cp": brute force's time over
CP-SAT's on exactly the candidates brute force finished (same process, same spaces). Then "fast s": a fresh
session asked for the fastest schedule only (``SolveOptions(fastest=1)``, a branch and bound over
candidates: only the winner's optimum is sought, every other candidate is proven no faster), with "opt" the
candidates it solved to their optimum, and "fpin ms" that session re-solved after the same pin, again
over every candidate. The script checks that the fastest-only solve finds the same best latency.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import statistics
import sys
import time
from collections.abc import Sequence

from loom_explorer.brute import brute_force
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions

SIZES = (256, 2048, 16384)


def loom_shapes() -> list[str]:
    out = []
    for m, k, n in itertools.product(SIZES, SIZES, SIZES):
        if n <= m:
            out.append(f"M={m},K={k},N={n}")
    return out


def attention_shapes(hw_name: str) -> list[tuple[str, bool]]:
    """(shape, causal) pairs of Loom's FlashAttention benchmark on one chip, plus causal and GQA variants."""
    tokens = 16384 if hw_name.startswith("wormhole") else 15360
    out = []
    for causal in (False, True):
        for d in (64, 128):
            for b in (1, 2, 4, 8, 16):
                length = tokens // b
                out.append((f"B={b},H=1,Sq={length},Skv={length},D={d}", causal))
    out.append(("B=1,H=32,Hkv=8,Sq=2048,Skv=2048,D=128", False))
    out.append(("B=1,H=32,Hkv=8,Sq=2048,Skv=2048,D=128", True))
    return out


PIN_PARAM = {"gemm": "in0_block_w", "flash_attention": "q_chunk_size"}


def pin_value(optimum: int, domain: Sequence[int]) -> int:
    """The value the benchmark pins a parameter to: half its optimum's where the domain has it, else the
    first other value."""
    return optimum // 2 if optimum // 2 in domain else next(v for v in domain if v != optimum)


def run(
    hw_name: str,
    kernel: str,
    shape: str,
    causal: bool,
    brute_seconds: float,
    time_limit: float,
    start_from_known: bool = True,
    noc_bound: bool = True,
) -> dict[str, float | int | str | bool]:
    hw = load_hardware(hw_name)
    problem = make_problem(load_program(kernel), shape, options={"causal"} if causal else set())

    def compiled_session() -> Session:
        out = Session(hw, problem, noc_bound=noc_bound, start_from_known=start_from_known)
        for s in out.schedules:
            out.compiled(s)
        return out

    build_start = time.perf_counter()
    session = compiled_session()
    build_s = time.perf_counter() - build_start
    options = SolveOptions(time_limit_seconds=time_limit)
    start = time.perf_counter()
    results = session.solve({}, options)
    solve_s = time.perf_counter() - start
    optimal = sum(r.status in ("optimal", "infeasible") for r in results)  # proven: optimum or no schedule
    slowest = max(r.solve_seconds for r in results)
    best = next(r for r in results if r.solution)
    assert best.solution is not None
    name = PIN_PARAM[kernel]
    other = pin_value(best.solution.values()[name], session.schedule(best.candidate_name).param(name).values)
    t = time.perf_counter()
    session.solve({name: other}, options, candidates=[best.candidate_name])
    pin_one_s = time.perf_counter() - t
    t = time.perf_counter()
    session.solve({name: other}, options)
    pin_all_s = time.perf_counter() - t
    # the fastest schedule only (SolveOptions.fastest=1): a fresh session, then the same pin over every candidate
    fresh = compiled_session()
    fast_options = dataclasses.replace(options, fastest=1)
    t = time.perf_counter()
    fast = fresh.solve({}, fast_options)
    fast_s = time.perf_counter() - t
    if fast[0].solution is None or fast[0].solution.latency_cycles != best.solution.latency_cycles:
        raise AssertionError(f"{shape}: the fastest-only solve's best differs from the full solve's")
    t = time.perf_counter()
    fresh.solve({name: other}, fast_options)
    fast_pin_s = time.perf_counter() - t
    by_name = {r.candidate_name: r for r in results}
    brute_done, brute_agree, brute_s, brute_finished_s, cpsat_same_s = 0, True, 0.0, 0.0, 0.0
    deadline = time.perf_counter() + brute_seconds
    for sched in session.schedules:
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        b = brute_force(sched, time_limit_seconds=left)
        brute_s += b.seconds
        if not b.complete:
            break
        brute_done += 1
        brute_finished_s += b.seconds
        cpsat_same_s += by_name[sched.candidate.name].solve_seconds
        sol = by_name[sched.candidate.name].solution
        brute_agree &= (sol.latency_cycles if sol else None) == b.best_latency_cycles
    return {
        "hw": hw_name,
        "shape": shape + (" causal" if causal else ""),
        "candidates": len(results),
        "optimal": optimal,
        "build_s": build_s,
        "solve_s": solve_s,
        "slowest_s": slowest,
        "pin_one_s": pin_one_s,
        "pin_all_s": pin_all_s,
        "brute_s": brute_s,
        "brute_done": brute_done,
        "brute_agree": brute_agree,
        "brute_ratio": brute_finished_s / cpsat_same_s if cpsat_same_s else 0.0,
        "best_us": hw.cycles_to_us(best.solution.latency_cycles),
        "fast_s": fast_s,
        "fast_optimal": sum(r.status == "optimal" for r in fast),
        "fast_pin_s": fast_pin_s,
    }


def _ratio(value: float) -> str:
    return f"{value:.0f}x" if value else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default="wormhole_n150,blackhole_p150a")
    parser.add_argument("--brute-seconds", type=float, default=20.0, help="brute-force budget per shape")
    parser.add_argument("--time-limit", type=float, default=30.0, help="CP-SAT limit per candidate")
    parser.add_argument("--kernel", default="gemm", choices=["gemm", "flash_attention", "all"])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="one small shape per kernel on the first --hw, brute force at most 2 s (seconds)",
    )
    parser.add_argument(
        "--baseline",
        nargs="?",
        const="no-start",
        choices=["no-start", "no-links"],
        help="also solve every shape, in the same process, without a starting schedule "
        "(no-start, solve/incumbent.py) or with the model without NoC link times (no-links)",
    )
    args = parser.parse_args()
    kernels = ["gemm", "flash_attention"] if args.kernel == "all" else [args.kernel]
    hw_names = args.hw.split(",")
    if args.quick:
        hw_names, args.brute_seconds = hw_names[:1], min(args.brute_seconds, 2.0)

    def shapes(kernel: str, hw_name: str) -> list[tuple[str, bool]]:
        if kernel == "flash_attention":
            found = attention_shapes(hw_name)
            return [found[4]] if args.quick else found  # quick: B=16, the shortest sequences, D=64
        if args.quick:
            return [("M=256,K=256,N=256", False)]
        return [(s, False) for s in loom_shapes() + ["M=640,K=1600,N=3200"]]

    header = (
        f"{'hw':<16} {'shape':<45} {'cand':>4} {'prov':>4} {'build s':>7} {'solve s':>7} {'slowest':>7} "
        f"{'pin1 ms':>7} {'pinall s':>8} {'brute s':>8} {'brute done':>10} {'agree':>5} {'brute/cp':>8} "
        f"{'best us':>9} "
        f"{'fast s':>6} {'opt':>3} {'fpin ms':>7}"
    )
    if args.baseline:
        header += f" {'base s':>7} {'base pin1':>9}"
    print(header)
    rows: list[dict[str, float | int | str | bool]] = []
    baseline: list[dict[str, float | int | str | bool]] = []
    for kernel, hw_name in itertools.product(kernels, hw_names):
        for shape, causal in shapes(kernel, hw_name):
            r = run(hw_name, kernel, shape, causal, args.brute_seconds, args.time_limit)
            rows.append(r)
            line = (
                f"{r['hw']:<16} {r['shape']:<45} {r['candidates']:>4} {r['optimal']:>4} {r['build_s']:>7.3f} "
                f"{r['solve_s']:>7.2f} {r['slowest_s']:>7.2f} {float(r['pin_one_s']) * 1e3:>7.0f} "
                f"{r['pin_all_s']:>8.2f} "
                f"{r['brute_s']:>8.1f} {r['brute_done']:>4}/{r['candidates']:<5} {r['brute_agree']!s:>5} "
                f"{_ratio(float(r['brute_ratio'])):>8} {r['best_us']:>9.1f} {r['fast_s']:>6.2f} "
                f"{r['fast_optimal']:>3} "
                f"{float(r['fast_pin_s']) * 1e3:>7.0f}"
            )
            if args.baseline:
                b = run(
                    hw_name,
                    kernel,
                    shape,
                    causal,
                    0.0,
                    args.time_limit,
                    start_from_known=args.baseline != "no-start",
                    noc_bound=args.baseline != "no-links",
                )
                if args.baseline == "no-start" and b["best_us"] != r["best_us"]:
                    raise AssertionError(f"{shape}: {b['best_us']} us without a starting schedule, {r['best_us']} with")
                baseline.append(b)
                line += f" {b['solve_s']:>7.2f} {float(b['pin_one_s']) * 1e3:>9.0f}"
            print(line, flush=True)
    solve = [float(r["solve_s"]) for r in rows]
    pin1 = [float(r["pin_one_s"]) for r in rows]
    proven = sum(r["optimal"] == r["candidates"] for r in rows)
    print(f"\nevery candidate proven (optimal, or infeasible with a reason): {proven}/{len(rows)} shapes")
    print(
        f"solve all candidates: median {statistics.median(solve):.2f} s, max {max(solve):.2f} s, "
        f"under 1 s on {sum(s < 1 for s in solve)}/{len(rows)} shapes"
    )
    print(
        f"re-solve one candidate after a pin: median {statistics.median(pin1) * 1e3:.0f} ms, "
        f"max {max(pin1) * 1e3:.0f} ms, under 100 ms on {sum(s < 0.1 for s in pin1)}/{len(rows)} shapes"
    )
    fast = [float(r["fast_s"]) for r in rows]
    fast_pin = [float(r["fast_pin_s"]) for r in rows]
    print(
        f"fastest schedule only (--fastest 1, a fresh session): median {statistics.median(fast):.2f} s, "
        f"max {max(fast):.2f} s, under 1 s on {sum(s < 1 for s in fast)}/{len(rows)} shapes; candidates solved "
        f"to their optimum: median {statistics.median(int(r['fast_optimal']) for r in rows):.0f}, "
        f"max {max(int(r['fast_optimal']) for r in rows)}"
    )
    print(
        f"  then one pin over every candidate: median {statistics.median(fast_pin) * 1e3:.0f} ms, "
        f"max {max(fast_pin) * 1e3:.0f} ms, under 100 ms on {sum(s < 0.1 for s in fast_pin)}/{len(rows)} shapes"
    )
    print(
        f"brute force finished {sum(int(r['brute_done']) for r in rows)} candidate spaces within its budget, "
        f"agreeing with CP-SAT on all of them: {all(r['brute_agree'] for r in rows)}"
    )
    if baseline:
        base_solve = [float(b["solve_s"]) for b in baseline]
        base_pin = [float(b["pin_one_s"]) for b in baseline]
        what = "without a starting schedule" if args.baseline == "no-start" else "without NoC link times"
        print(
            f"{what} (same process): solve all median {statistics.median(base_solve):.2f} s, "
            f"max {max(base_solve):.2f} s, under 1 s on {sum(s < 1 for s in base_solve)}/{len(baseline)}; "
            f"re-solve after a pin median {statistics.median(base_pin) * 1e3:.0f} ms, "
            f"under 100 ms on {sum(s < 0.1 for s in base_pin)}/{len(baseline)}"
        )
        print(
            f"total time with / without: solve all {sum(solve):.1f} / {sum(base_solve):.1f} s "
            f"({sum(base_solve) / sum(solve):.2f}x), re-solve after a pin {sum(pin1):.1f} / {sum(base_pin):.1f} s "
            f"({sum(base_pin) / sum(pin1):.2f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
