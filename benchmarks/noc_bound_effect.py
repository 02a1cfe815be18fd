"""What the NoC link terms change: every engine benchmark shape solved with and without them.

    python benchmarks/noc_bound_effect.py                          # the 38 GEMM shapes of solve_speed.py
    python benchmarks/noc_bound_effect.py --kernel flash_attention  # the 44 FlashAttention shapes

Per shape: the best candidate and its predicted latency without the bound (the model of issue 2) and with
them (each step also waits for its busiest NoC link, ``model/noc_bound.py``), the old choice (candidate and parameters) priced by the bounded
model, whether the choice changed (the old choice is no longer optimal: ties do not count), and for the bounded best schedule the routed traffic: the busiest link or bank
and the share of the predicted latency it explains on its own (``loom-explorer traffic``).
"""

from __future__ import annotations

import argparse
import sys

from loom_explorer.hardware import load_hardware
from loom_explorer.model.expr import evaluate
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.traffic import schedule_transfers, traffic_report

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from solve_speed import attention_shapes, loom_shapes  # noqa: E402


def run(hw_name: str, kernel: str, shape: str, causal: bool) -> dict[str, object]:
    hw = load_hardware(hw_name)
    problem = make_problem(load_program(kernel), shape, options={"causal"} if causal else set())
    options = SolveOptions()
    plain_session = Session(hw, problem, noc_bound=False)
    plain = plain_session.solve({}, options)
    bounded_session = Session(hw, problem)
    bounded = bounded_session.solve({}, options)
    old, new = plain[0], bounded[0]
    assert old.solution and new.solution
    # the old choice (candidate and parameters) priced by the bounded model
    old_bounded = evaluate(bounded_session.schedule(old.candidate_name).latency, old.solution.values())
    schedule = bounded_session.schedule(new.candidate_name)
    values = new.solution.values()
    report = traffic_report(hw, schedule_transfers(hw, schedule, values), new.solution.latency_cycles)
    # the links cost the chosen schedule something: it is slower than the model without them says
    binding = new.solution.latency_cycles > evaluate(plain_session.schedule(new.candidate_name).latency, values)
    return {
        "hw": hw_name, "shape": shape + (" causal" if causal else ""),
        "old": old.candidate_name, "old_cycles": old.solution.latency_cycles,
        "new": new.candidate_name, "new_cycles": new.solution.latency_cycles,
        "changed": old_bounded > new.solution.latency_cycles,  # the old choice is no longer optimal
        "old_bounded": old_bounded,
        "binding": binding, "model_bound": evaluate(schedule.noc_bound_cycles, values),
        "busiest": report.busiest, "explained": report.explained,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default="wormhole_n150,blackhole_p150a")
    parser.add_argument("--kernel", default="gemm", choices=["gemm", "flash_attention"])
    args = parser.parse_args()
    print(f"{'hw':<16} {'shape':<42} {'best without bound':<40} {'us':>8} {'best with bound':<40} {'us':>8} "
          f"{'changed':>7} {'old, bounded us':>15} {'busiest (routed)':<26} {'explains':>8}")
    rows = []
    for hw_name in args.hw.split(","):
        shapes = attention_shapes(hw_name) if args.kernel == "flash_attention" else \
            [(s, False) for s in loom_shapes() + ["M=640,K=1600,N=3200"]]
        hw = load_hardware(hw_name)
        for shape, causal in shapes:
            r = run(hw_name, args.kernel, shape, causal)
            rows.append(r)
            old_b = f"{hw.cycles_to_us(r['old_bounded']):.1f}"
            print(f"{r['hw']:<16} {r['shape']:<42} {r['old']:<40} {hw.cycles_to_us(r['old_cycles']):>8.1f} "
                  f"{r['new']:<40} {hw.cycles_to_us(r['new_cycles']):>8.1f} {'yes' if r['changed'] else 'no':>7} "
                  f"{old_b:>15} {r['busiest']:<26} {100 * r['explained']:>7.1f}%", flush=True)
    changed = [r for r in rows if r["changed"]]
    slower = [r["new_cycles"] / r["old_cycles"] for r in rows]
    print(f"\nthe bound changes the chosen schedule on {len(changed)}/{len(rows)} shapes "
          f"(the candidate on {sum(r['old'] != r['new'] for r in changed)}); the links slow the chosen schedule down on "
          f"{sum(bool(r['binding']) for r in rows)}; predicted latency rises by a factor of at most "
          f"{max(slower):.3f} (median {sorted(slower)[len(slower) // 2]:.3f})")
    regret = [r["old_bounded"] / r["new_cycles"] for r in changed]
    if regret:
        print(f"where it changes the choice, the old choice is predicted {max(regret):.3f}x slower at most "
              f"under the bounded model (median {sorted(regret)[len(regret) // 2]:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
