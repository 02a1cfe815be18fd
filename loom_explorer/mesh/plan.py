"""Prove the fastest split of a graph on a mesh: bound every split, solve only the per-chip problems that
can still matter, and repeat the joint model until its answer rests on proven optima only.

1. Every split's per-chip problem gets a lower bound (``onchip.chip_bound``: ``bounds.py``, no candidate's
   model built); every answer the results store already holds is read (``onchip.stored``).
2. Best first over the views: the open view with the smallest proven lower bound (its last joint optimum;
   a view never solved first) is solved (``joint.solve_joint``) with each split's cost = its proven optimum
   when known, else its bound (plus the split's own fixed collectives; a fused all-gather + matmul's cost is
   monotone in its matmul's, so a bound there gives a bound too), asked only for an assignment cheaper than
   the best known.
3. Every per-chip problem that optimum uses and that is still only bounded is solved to its proven optimum
   (``onchip.solve_chip``, through the results store), the largest bound first; the assignment's true
   latency (``true_latency``) is the best known when it is lower. Once a best is known, the solving stops
   as soon as the assignment's cost with the optima found so far reaches the best (it cannot win), and the
   view is solved again (step 2) with the higher costs. A view closes when CP-SAT finds nothing on it
   cheaper than the best, when its lower bound reaches the best, or when its optimum uses solved problems
   only (it is then the best). Back to 2 until every view is closed.

**Why the answer is proven optimal.** Costs only rise between rounds (a bound becomes an optimum at least
as large), so a view's joint optimum, computed with costs that are each the split's proven optimum or a
lower bound of it (the transitions are exact), stays a lower bound of every assignment on it. Each closed
view was closed by a proof that none of its assignments is cheaper than the best known (CP-SAT's
infeasibility under ``objective <= best - 1``, or its earlier optimum already at least the best), or its
optimum is the best, charged its true latency. The best is then no slower than any assignment of any view.
A split never solved is thereby proven no better: it is "pruned". Each round either closes a view or solves
at least one new problem (a round that stops early has solved one), so the loop ends.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

from loom_explorer.hardware.mesh_load import mesh_chip
from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.mesh.graph import OpGraph
from loom_explorer.mesh.joint import JointConflict, JointSolution, JointTables, explain, solve_joint
from loom_explorer.mesh.onchip import ChipSolve, chip_bound, solve_chip, stored
from loom_explorer.mesh.pins import MeshPin, parse_pin
from loom_explorer.mesh.splits import ChipProblem, Split, fused_gather, op_splits
from loom_explorer.mesh.states import MeshError, mesh_views
from loom_explorer.mesh.transitions import AxisConfig
from loom_explorer.problem import ProblemError


@dataclass(frozen=True, slots=True)
class SplitStatus:
    """One split of one op: ``status`` ``solved`` (its per-chip problem proven), ``pruned`` (only bounded:
    proven no better), ``infeasible`` (no schedule on a chip), ``infeasible: DRAM`` (its weights and
    activations exceed a chip's DRAM, ``capacity.py``); ``onchip_cycles`` the optimum or the bound;
    ``fixed_cycles`` its own collectives."""

    op: str
    split: str
    view: str
    problem: str
    status: str
    onchip_cycles: int | None
    fixed_cycles: int


@dataclass(frozen=True, slots=True)
class MeshPlan:
    graph: str
    mesh: str
    pins: tuple[str, ...]
    result: JointSolution | JointConflict
    splits: tuple[SplitStatus, ...]
    problems_solved: int  # distinct per-chip problems solved to their optimum (or read back)
    problems_pruned: int  # distinct per-chip problems only bounded
    problems_from_store: int
    rounds: int
    seconds: float
    solve_seconds: float  # of which per-chip solves
    precision: str = "bf16"  # the graph's (``precision.py``)
    layers: int = 1  # layers whose weights each chip holds (``capacity.py``)


@dataclass
class Planner:
    """The splits, bounds and per-chip answers of one graph on one mesh; ``plan`` runs the loop under pins.
    Per-chip answers are kept between plans (ours, then ttnn's split, share them)."""

    mesh: MeshSpec
    graph: OpGraph
    store: str | Path | None = None
    use_memory: bool = True
    time_limit_seconds: float = 30.0
    winners_first: bool = True  # per-chip solves try the candidates that won alike problems first (``_won``)

    def __post_init__(self) -> None:
        self.chip = mesh_chip(self.mesh)
        self.views = mesh_views(self.mesh)
        splits = {
            op.name: [s for v in self.views for s in op_splits(op, v, self.mesh, self.chip)] for op in self.graph.ops
        }
        self.tables = JointTables(self.mesh, self.chip, self.graph, self.views, splits)
        self.bounds: dict[ChipProblem, int | None] = {}
        for ss in splits.values():
            for s in ss:
                if s.problem is not None and s.problem not in self.bounds:
                    try:
                        self.bounds[s.problem] = chip_bound(self.chip, s.problem)
                    except ProblemError:
                        self.bounds[s.problem] = None
        self.solved: dict[ChipProblem, ChipSolve] = {}
        self.solve_seconds = 0.0
        self._read = False

    def pins(self, texts: list[str] | tuple[str, ...]) -> list[MeshPin]:
        return [parse_pin(t, self.graph, self.tables.splits, self.views) for t in texts]

    def _cost(self, p: ChipProblem) -> int | None:
        if p in self.solved:
            return self.solved[p].latency_cycles
        return self.bounds[p]

    def costs(self) -> tuple[dict[tuple[str, str], int | None], dict[tuple[str, str, str], int]]:
        """The joint model's split costs now (``joint.JointModel``'s ``onchip`` and ``fused``): each split's
        proven optimum where solved, else its bound, plus its own collectives."""
        onchip: dict[tuple[str, str], int | None] = {}
        fused: dict[tuple[str, str, str], int] = {}
        for op, ss in self.tables.splits.items():
            for s in ss:
                if s.problem is None:
                    continue
                c = self._cost(s.problem)
                onchip[(op, s.name)] = None if c is None else c + s.fixed_cycles
                if c is not None and s.fused_axis is not None:
                    for cfg in self.tables.configs[s.view]:
                        fused[(op, s.name, cfg.label)] = self.fused_cycles(s, cfg.axes[s.fused_axis], c)
        return onchip, fused

    def fused_cycles(self, s: Split, cfg: AxisConfig, matmul_cycles: int) -> int:
        """The fused split's cost (``splits.FusedGather.split_cycles``) under its input's ``cfg``."""
        gather = fused_gather(self.mesh, self.chip, self.graph, s, self.tables.view(s.view), cfg)
        return gather.split_cycles(matmul_cycles)

    def _won(self, p: ChipProblem) -> tuple[str, ...]:
        """The candidates that won the problems of ``p``'s kernel and options solved so far (none when
        ``winners_first`` is off: ``benchmarks/mesh_llama70b.py`` measures both)."""
        if not self.winners_first:
            return ()
        kin = (s.candidate for q, s in self.solved.items() if (q.kernel, q.options) == (p.kernel, p.options))
        return tuple(dict.fromkeys(c for c in kin if c))

    def _solve(self, problems: list[ChipProblem]) -> None:
        """Each problem's proven optimum, one after the other (each solve's CP-SAT portfolio fills the cores:
        two at a time measured slower, docs/performance.md); the candidates that won the problems of the same
        kernel and options before are tried first (an order only: ``onchip.solve_chip``)."""
        for p in dict.fromkeys(problems):
            if p in self.solved:
                continue
            t = time.perf_counter()
            found = solve_chip(self.chip, p, self.store, self.use_memory, self.time_limit_seconds, self._won(p))
            self.solved[p] = found
            self.solve_seconds += time.perf_counter() - t
            if not found.proven:
                raise MeshError(f"per-chip problem {p.label} was not proven within {self.time_limit_seconds} s")

    def _solve_while_it_may_win(
        self, todo: list[ChipProblem], found: JointSolution, best: JointSolution | None
    ) -> bool:
        """Solve ``todo`` (the problems ``found`` uses that are only bounded), the largest bound first, and
        stop once ``found`` cannot beat ``best`` any more: its cost with the optima known so far (a lower bound
        of its latency) reaches the best, or a problem has no schedule. True when every problem was solved.
        Without a best, all are solved (the first upper bound)."""
        order = sorted(dict.fromkeys(todo), key=lambda q: (-(self.bounds[q] or 0), q.label))
        for i, p in enumerate(order):
            self._solve([p])
            if best is None or i == len(order) - 1:
                continue
            cost = self.true_latency(found)
            if cost is None or cost >= best.latency_cycles:
                return False
        return True

    def read_stored(self) -> None:
        """Read every per-chip answer the results store holds (``onchip.stored``), once per planner."""
        if self._read or not self.use_memory:
            return
        self._read = True
        self._solve(sorted(stored(self.chip, list(self.bounds), self.store), key=lambda p: p.label))

    def true_latency(self, found: JointSolution) -> int | None:
        """``found``'s assignment charged with every split's proven optimum (each of its problems solved):
        what the joint model's objective is for it once no bound is left; None if a problem has no schedule."""
        onchip, fused = self.costs()
        configs = dict(found.configs)
        total = sum(e.cost.latency_cycles for e in found.edges)
        for op, s in found.splits:
            if s.problem is None:
                continue
            if s.fused_axis is not None:
                cost = fused.get((op, s.name, configs[self.graph.op(op).inputs[0]].label))
            else:
                cost = onchip.get((op, s.name))
            if cost is None:
                return None
            total += cost
        return total

    def _charged(self, found: JointSolution, latency_cycles: int) -> JointSolution:
        """``found`` with its splits' charges and latency recomputed from the proven optima."""
        onchip, fused = self.costs()
        configs = dict(found.configs)
        cycles = []
        for op, s in found.splits:
            if s.problem is None:
                continue
            if s.fused_axis is not None:
                cycles.append((op, fused[(op, s.name, configs[self.graph.op(op).inputs[0]].label)]))
            else:
                cycles.append((op, onchip[(op, s.name)] or 0))
        return replace(found, latency_cycles=latency_cycles, split_cycles=tuple(cycles))

    def plan(self, pin_texts: list[str] | tuple[str, ...] = ()) -> MeshPlan:
        """Best first over the views (module docstring, step 2)."""
        start = time.perf_counter()
        pins = self.pins(pin_texts)
        solve_before = self.solve_seconds
        self.read_stored()
        rounds = 0
        best: JointSolution | None = None
        lower: dict[str, int] = {}  # a proven lower bound of each open view's optimum (its last joint optimum)
        open_views = [v.name for v in self.views]
        while open_views:
            view = min(open_views, key=lambda v: (v in lower, lower.get(v, 0)))  # unsolved views first
            if best is not None and lower.get(view, -1) >= best.latency_cycles:
                open_views.remove(view)  # its optimum is at least its model's, no faster than the best
                continue
            rounds += 1
            onchip, fused = self.costs()
            below = best.latency_cycles if best is not None else None
            found = solve_joint(self.tables, onchip, fused, pins, view, below, self.time_limit_seconds)
            if not isinstance(found, JointSolution):
                open_views.remove(view)  # the pins rule the view out, or nothing on it beats the best
                continue
            lower[view] = found.latency_cycles
            todo = [s.problem for _, s in found.splits if s.problem is not None and s.problem not in self.solved]
            if not todo:
                best = found
                open_views.remove(view)
                continue
            if not self._solve_while_it_may_win(todo, found, best):
                continue  # a lower bound of its cost already reaches the best: solve the view again
            latency = self.true_latency(found)
            if latency is not None and (best is None or latency < best.latency_cycles):
                best = self._charged(found, latency)  # an upper bound: the other views need only beat it
        result: JointSolution | JointConflict
        if best is not None:
            result = best
        else:
            onchip, _ = self.costs()
            result = explain(self.tables, onchip, pins, self.time_limit_seconds)
        statuses = []
        for op, ss in self.tables.splits.items():
            for s in ss:
                if s.problem is None:
                    continue
                if not self.tables.fits(op, s.name):
                    c, status = self._cost(s.problem), "infeasible: DRAM"
                elif s.problem in self.solved:
                    c = self.solved[s.problem].latency_cycles
                    status = "solved" if c is not None else "infeasible"
                else:
                    c = self.bounds[s.problem]
                    status = "pruned" if c is not None else "infeasible"
                statuses.append(SplitStatus(op, s.name, s.view, s.problem.label, status, c, s.fixed_cycles))
        problems = {p for p in self.bounds}
        return MeshPlan(
            self.graph.name,
            self.mesh.name,
            tuple(p.text for p in pins),
            result,
            tuple(statuses),
            len([p for p in problems if p in self.solved]),
            len([p for p in problems if p not in self.solved]),
            len([p for p in problems if p in self.solved and self.solved[p].from_store]),
            rounds,
            time.perf_counter() - start,
            self.solve_seconds - solve_before,
            self.graph.precision,
            self.graph.layers,
        )
