"""Re-solve after a pin: the pin as a one-value domain (shipped) against the pin as an assumption literal.

    python benchmarks/pin_resolve.py
    python benchmarks/pin_resolve.py --hw blackhole_p150a --shapes "M=16384,K=2048,N=16384" --seeds 5
    python benchmarks/pin_resolve.py --subsolvers "core,default_lp,no_lp,lb_tree_search;core,default_lp,no_lp,max_lp"
    python benchmarks/pin_resolve.py --compare cap      # or --compare floor

For each shape the best candidate is solved, then re-solved with ``in0_block_w`` pinned to another legal
value (half the optimum's where it can), over several CP-SAT seeds, both ways in the same process and
from the same starting point (``solve/incumbent.py``): through ``CompiledSchedule.solve(pins)``, which
narrows the parameter's domain for that solve, and through an assumption literal
``pin[name=value] => name == value`` on the same compiled model (how pins were passed before). Both
must find the same optimum.

``--subsolvers``: instead, the shipped domain pins against CP-SAT portfolios named subsolver by subsolver
(one worker each; ';' between portfolios), same seeds and starting point.

``--compare cap``: the shipped solve (latency capped at the starting point's, which CP-SAT must then find
again) against a cap one cycle below it, where INFEASIBLE proves the starting point optimal.
``--compare floor``: the shipped solve against one whose latency is also bounded below by the unpinned
optimum (a pin only removes schedules), both on freshly compiled models.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from collections.abc import Callable
from unittest import mock

from ortools.sat.python import cp_model

from loom_explorer.hardware import load_hardware
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve import compiled as compiled_module
from loom_explorer.solve.compiled import CompiledSchedule, RawSolve
from loom_explorer.solve.solver import Session, SolveOptions

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from solve_speed import pin_value  # the same pin as solve_speed.py

SHAPES = ("M=2048,K=16384,N=256", "M=16384,K=256,N=256", "M=16384,K=2048,N=16384", "M=16384,K=16384,N=16384")


def portfolio(subsolvers: list[str]) -> type[cp_model.CpSolver]:
    """A CpSolver that runs exactly ``subsolvers``, one worker each (patched into ``solve/compiled.py``)."""

    class Portfolio(cp_model.CpSolver):
        def solve(self, model, *args, **kwargs):  # type: ignore[no-untyped-def]
            self.parameters.subsolvers.clear()
            self.parameters.subsolvers.extend(subsolvers)
            self.parameters.num_workers = len(subsolvers)
            return super().solve(model, *args, **kwargs)

    return Portfolio


def variants(args: argparse.Namespace, schedule: SymbolicSchedule, compiled: CompiledSchedule, name: str,
             other: int, unpinned_cycles: int) -> dict[str, Callable[..., RawSolve]]:
    """Label -> a solve of ``compiled`` under the pin ``name=other``, given (seed, hint, upper bound)."""
    pins = {name: other}

    def on(model: CompiledSchedule) -> Callable[..., RawSolve]:
        def run(seed: int, hint: dict[str, int], upper: int | None) -> RawSolve:
            return model.solve(pins, 60.0, 4, seed, hint=hint, upper_bound=upper)
        return run

    by_domain = on(compiled)

    if args.compare == "cap" and not args.subsolvers:
        def below_known(seed: int, hint: dict[str, int], upper: int | None) -> RawSolve:
            raw = by_domain(seed, hint, None if upper is None else upper - 1)
            if raw.status == "INFEASIBLE" and upper is not None:  # nothing faster: the starting point is optimal
                return dataclasses.replace(raw, status="OPTIMAL", values=hint, objective=upper)
            return raw
        return {"cap=known": by_domain, "cap=known-1": below_known}

    if args.compare == "floor" and not args.subsolvers:
        plain, floored = CompiledSchedule(schedule), CompiledSchedule(schedule)
        assert floored.objective is not None
        floored.model.add(floored.objective >= unpinned_cycles)
        return {"shipped": on(plain), "floor=unpinned": on(floored)}

    if not args.subsolvers:
        def by_literal(seed: int, hint: dict[str, int], upper: int | None) -> RawSolve:
            return compiled.solve({}, 60.0, 4, seed, hint=hint, upper_bound=upper,
                                  extra_assumptions=[compiled.pin_literal(name, other)])
        return {"domain": by_domain, "assumption": by_literal}

    def with_portfolio(subsolvers: list[str]) -> Callable[..., RawSolve]:
        def run(seed: int, hint: dict[str, int], upper: int | None) -> RawSolve:
            with mock.patch.object(compiled_module.cp_model, "CpSolver", portfolio(subsolvers)):
                return by_domain(seed, hint, upper)
        return run

    out = {"default": by_domain}
    out.update({p: with_portfolio(p.split(",")) for p in args.subsolvers.split(";")})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default="wormhole_n150,blackhole_p150a")
    parser.add_argument("--shapes", default=";".join(SHAPES), help="shapes separated by ';'")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--compare", default="assumption", choices=("assumption", "cap", "floor"),
                        help="what to compare the shipped re-solve with (see above)")
    parser.add_argument("--subsolvers", default="",
                        help="CP-SAT portfolios to compare with the shipped one, e.g. 'core,default_lp,no_lp,max_lp'")
    args = parser.parse_args()
    times: dict[str, list[float]] = {}
    print(f"{'hw':<16} {'shape':<25} {'pin':<16} ms per seed, by variant")
    for hw_name in args.hw.split(","):
        hw = load_hardware(hw_name)
        for shape in args.shapes.split(";"):
            session = Session(hw, make_problem(load_program("gemm"), shape))
            best = session.solve({}, SolveOptions())[0]
            assert best.solution is not None
            schedule = session.schedule(best.candidate_name)
            other = pin_value(best.solution.values()["in0_block_w"], schedule.param("in0_block_w").values)
            known = session.incumbent(schedule, {"in0_block_w": other})
            hint = known.values if known else best.solution.values()
            upper = known.latency_cycles if known else None
            runs = variants(args, schedule, session.compiled(schedule), "in0_block_w", other,
                            best.solution.latency_cycles)
            row: dict[str, list[float]] = {label: [] for label in runs}
            optima = set()
            for seed in range(args.seeds):
                for label, run in runs.items():
                    raw = run(seed, hint, upper)
                    assert raw.status == "OPTIMAL", (shape, seed, label)
                    optima.add(raw.objective)
                    row[label].append(raw.seconds * 1e3)
            assert len(optima) == 1, (shape, optima)
            for label, ms in row.items():
                times.setdefault(label, []).extend(ms)
            cells = "  ".join(f"{label}: {' '.join(f'{v:.0f}' for v in ms)}" for label, ms in row.items())
            print(f"{hw_name:<16} {shape:<25} {'in0_block_w=' + str(other):<16} {cells}", flush=True)
    print()
    for label, ms in times.items():
        print(f"{label:<40} median {statistics.median(ms):.0f} ms, max {max(ms):.0f} ms, total "
              f"{sum(ms) / 1e3:.2f} s, under 100 ms {sum(v < 100 for v in ms)}/{len(ms)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
