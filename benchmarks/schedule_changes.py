"""Which GEMM schedules a change of the hardware model moves: the fastest schedule of each benchmark shape
under two hardware files of one chip, and the first file's choice costed under the second.

    python benchmarks/schedule_changes.py --before OLD.yaml --after wormhole_n150   # 18 GEMM shapes + a ragged one
    python benchmarks/schedule_changes.py --before OLD.yaml --after NEW.yaml --quick  # M=256,K=256,N=256 only
    python benchmarks/schedule_changes.py --before wormhole_n150 --after wormhole_n150 --quick  # nothing moves
    python benchmarks/schedule_changes.py --before OLD.yaml --after NEW.yaml --terms  # and where the cycles go

Shapes: ``solve_speed.py``'s ``loom_shapes()`` and its ragged shape. Each file gets a fresh
``Session(hw, problem)`` solved with ``SolveOptions(fastest=1)``: its best schedule is a candidate, its
parameter values and its latency. The BEFORE choice is then checked and costed by the referee
(``validate.referee``) on the AFTER file's symbolic schedule of the same candidate, at exactly its values.

One line per shape: each file's choice (candidate, then ``g`` grid_x x grid_y, ``pc`` per_core_M x per_core_N x
per_core_K, ``w`` in0_block_w, ``ob`` out_block_h x out_block_w, ``sb`` out_subblock_h x out_subblock_w, ``d``
in0/in1 buffer depths), what changed (``-``, ``params``, ``candidate``; ``tie`` when the BEFORE choice costs the
same as the AFTER choice under the AFTER model), the best latency under each model (cycles), and

    ratio = latency_after(before's choice) / latency_after(after's choice)

which is at least 1 when the AFTER solve is optimal (``illegal`` when the AFTER model rejects the BEFORE
choice: its constraints are named under the line). The summary gives how many choices changed, the median
and max ratio, and the median change of the best predicted latency, t_after / t_before in microseconds (the
cycle ratio unless the two files' clocks differ). ``--terms``: under each changed choice, its latency terms
(``Solution.breakdown``, cycles) under the BEFORE model, and the AFTER model's terms of both choices.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass

from solve_speed import loom_shapes  # beside this file: a script's folder is the first entry of sys.path

from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.problem import Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.validate import referee

RAGGED_SHAPE = "M=640,K=1600,N=3200"  # solve_speed.py's ragged shape (written inline in its main())


@dataclass(frozen=True, slots=True)
class Choice:
    """The fastest schedule one model finds: candidate, parameter values, latency and its terms (cycles),
    solver status."""

    candidate: str
    params: tuple[tuple[str, int], ...]
    latency_cycles: int
    breakdown: tuple[tuple[str, int], ...]
    status: str

    def brief(self) -> str:
        v = dict(self.params)
        return (
            f"{self.candidate} g{v['grid_x']}x{v['grid_y']} pc{v['per_core_M']}x{v['per_core_N']}x"
            f"{v['per_core_K']} w{v['in0_block_w']} ob{v['out_block_h']}x{v['out_block_w']} "
            f"sb{v['out_subblock_h']}x{v['out_subblock_w']} d{v['in0_buffer_depth']}/{v['in1_buffer_depth']}"
        )


@dataclass(frozen=True, slots=True)
class ShapeChange:
    """One shape under both models; ``old_under_new_cycles`` (terms: ``old_under_new_breakdown``) is the
    BEFORE choice costed by the AFTER model (None, with ``violations``, when that model finds it illegal)."""

    shape: str
    before: Choice
    after: Choice
    before_us: float
    after_us: float
    old_under_new_cycles: int | None
    old_under_new_breakdown: tuple[tuple[str, int], ...]
    violations: tuple[str, ...]

    @property
    def candidate_changed(self) -> bool:
        return self.before.candidate != self.after.candidate

    @property
    def changed(self) -> bool:
        return self.candidate_changed or self.before.params != self.after.params

    @property
    def ratio(self) -> float | None:
        """latency_after(before's choice) / latency_after(after's choice)."""
        if self.old_under_new_cycles is None:
            return None
        return self.old_under_new_cycles / self.after.latency_cycles

    def what_changed(self) -> str:
        what = "candidate" if self.candidate_changed else "params" if self.changed else "-"
        return f"{what} tie" if self.changed and self.old_under_new_cycles == self.after.latency_cycles else what


def fastest(hw: HardwareSpec, problem: Problem, shape: str) -> tuple[Session, Choice]:
    """A fresh session of ``problem`` on ``hw`` and its fastest schedule (``SolveOptions(fastest=1)``)."""
    session = Session(hw, problem)
    best = session.solve({}, SolveOptions(fastest=1))[0]
    if best.solution is None:
        raise SystemExit(f"{hw.name} {shape}: no schedule ({best.status})")
    return session, Choice(
        best.candidate_name, best.solution.params, best.solution.latency_cycles, best.solution.breakdown, best.status
    )


def compare(before_hw: HardwareSpec, after_hw: HardwareSpec, shape: str) -> ShapeChange:
    problem = make_problem(load_program("gemm"), shape)
    _, before = fastest(before_hw, problem, shape)
    after_session, after = fastest(after_hw, problem, shape)
    verdict = referee(after_session.schedule(before.candidate), dict(before.params))
    old = verdict.solution
    return ShapeChange(
        shape,
        before,
        after,
        before_hw.cycles_to_us(before.latency_cycles),
        after_hw.cycles_to_us(after.latency_cycles),
        old.latency_cycles if old else None,
        old.breakdown if old else (),
        verdict.violations,
    )


def terms(breakdown: tuple[tuple[str, int], ...]) -> str:
    return " ".join(f"{name} {cycles:,}" for name, cycles in breakdown)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the hardware file (name or path) before the change")
    parser.add_argument("--after", required=True, help="the hardware file (name or path) after the change")
    parser.add_argument("--quick", action="store_true", help="the first shape only")
    parser.add_argument(
        "--terms",
        action="store_true",
        help="under each changed choice, the latency terms of both choices under both models",
    )
    args = parser.parse_args()
    before_hw, after_hw = load_hardware(args.before), load_hardware(args.after)
    if before_hw.name != after_hw.name:
        raise SystemExit(
            f"--before {args.before} describes {before_hw.name} and --after {args.after} describes "
            f"{after_hw.name}: compare two files of the same chip"
        )
    shapes = loom_shapes() + [RAGGED_SHAPE]
    if args.quick:
        shapes = shapes[:1]
    print(f"{before_hw.name}: before {args.before}, after {args.after}")
    print(
        f"{'shape':<23} {'before choice':<72} {'after choice':<72} {'changed':<14} {'before cyc':>11} "
        f"{'after cyc':>11} {'ratio':>7}"
    )
    rows: list[ShapeChange] = []
    for shape in shapes:
        r = compare(before_hw, after_hw, shape)
        rows.append(r)
        after_text = "same" if not r.changed else r.after.brief()
        ratio = f"{r.ratio:.3f}" if r.ratio is not None else "illegal"
        unproven = [
            f"{name} {c.status}" for name, c in (("before", r.before), ("after", r.after)) if c.status != "optimal"
        ]
        print(
            f"{shape:<23} {r.before.brief():<72} {after_text:<72} {r.what_changed():<14} "
            f"{r.before.latency_cycles:>11,} {r.after.latency_cycles:>11,} {ratio:>7}"
            + (f"  (not proven: {', '.join(unproven)})" if unproven else ""),
            flush=True,
        )
        if r.violations:
            print(f"{'':<23} the after model rejects the before choice: {'; '.join(r.violations)}")
        elif args.terms and r.changed:
            print(
                f"{'':<23} before model, before choice: {terms(r.before.breakdown)}\n"
                f"{'':<23} after model, before choice:  {terms(r.old_under_new_breakdown)}\n"
                f"{'':<23} after model, after choice:   {terms(r.after.breakdown)}"
            )
    ratios = [r.ratio for r in rows if r.ratio is not None]
    changed = [r for r in rows if r.changed]
    ties = sum(r.what_changed().endswith("tie") for r in changed)
    ratio_text = f"median {statistics.median(ratios):.3f}, max {max(ratios):.3f}" if ratios else "none"
    illegal = len(rows) - len(ratios)
    print(
        f"\n{len(rows)} shapes, choices changed on {len(changed)} (candidate on "
        f"{sum(r.candidate_changed for r in rows)}; ties {ties}); old choice under new model / new choice: "
        f"{ratio_text}{f', illegal on {illegal}' if illegal else ''}; best predicted latency after/before: "
        f"median {statistics.median(r.after_us / r.before_us for r in rows):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
