"""The mesh planner's joint model: every round of real plans solved again under four settings, side by side.

    python benchmarks/joint_settings.py            # five layer plans on four meshes
    python benchmarks/joint_settings.py --quick    # one small plan (seconds)

Each case plans a Llama-3-70B decoder layer (tt-transformers' performance precision, 80 layers resident, as
``mesh solve`` does) into a new empty results store and records the inputs of every joint solve it makes (its
rounds: ``mesh/plan.py``). Each round's model is then built and solved again, in this process, under:

* ``every config, 8 workers``: every collective config of every tensor kept (``round_model``'s
  ``every_config``), CP-SAT's 8-worker portfolio with its default probing (the settings before dominated
  configs were left out);
* ``pruned, 8 workers``: dominated configs left out (``mesh/joint.py``), the same portfolio;
* ``pruned, 1 worker``: dominated configs left out, one worker, default probing;
* ``pruned, 1 worker, no probing``: what ``solve_joint`` does (``JOINT_WORKERS``, ``JOINT_PROBING_LEVEL``).

Every setting must reach the same status and optimum in every round (checked). Printed: per case and in
all, the rounds and each setting's seconds, and each setting's total over the shipped one's. The machine's
load average is printed first: other work on its cores slows every setting.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ortools.sat.python import cp_model

import loom_explorer.mesh.plan as plan_module
from loom_explorer.hardware.mesh_load import load_mesh
from loom_explorer.mesh.graph import OpGraph, matmul_graph, model_graph
from loom_explorer.mesh.joint import (
    JOINT_PROBING_LEVEL,
    JOINT_WORKERS,
    JointSolution,
    JointTables,
    NoneFaster,
    round_model,
    solve_joint,
)
from loom_explorer.mesh.pins import MeshPin
from loom_explorer.mesh.plan import Planner
from loom_explorer.mesh.precision import DEFAULT_PRECISION, precision
from loom_explorer.sweep.ops import DECODE_KV, MODELS


@dataclass(frozen=True, slots=True)
class Round:
    """The inputs of one joint solve of a plan."""

    tables: JointTables
    onchip: dict[tuple[str, str], int | None]
    fused: dict[tuple[str, str, str], int]
    pins: tuple[MeshPin, ...]
    view: str
    below_cycles: int | None


@dataclass(frozen=True, slots=True)
class Setting:
    label: str
    every_config: bool
    workers: int
    probing_level: int | None  # None: CP-SAT's default


SETTINGS = (
    Setting("every config, 8 workers", True, 8, None),
    Setting("pruned, 8 workers", False, 8, None),
    Setting("pruned, 1 worker", False, 1, None),
    Setting("pruned, 1 worker, no probing", False, JOINT_WORKERS, JOINT_PROBING_LEVEL),
)


def rounds_of(mesh: str, graph: OpGraph) -> list[Round]:
    """Plan ``graph`` on ``mesh`` cold and return the inputs of every joint solve it made."""
    seen: list[Round] = []

    def recording(
        tables: JointTables,
        onchip: dict[tuple[str, str], int | None],
        fused: dict[tuple[str, str, str], int],
        pins: Iterable[MeshPin],
        view: str,
        below_cycles: int | None = None,
        time_limit_seconds: float = 30.0,
    ) -> JointSolution | NoneFaster | None:
        pins = tuple(pins)
        seen.append(Round(tables, dict(onchip), dict(fused), pins, view, below_cycles))
        return solve_joint(tables, onchip, fused, pins, view, below_cycles, time_limit_seconds)

    plan_module.solve_joint = recording  # type: ignore[attr-defined]  # the planner's loop, its inputs kept
    try:
        with tempfile.TemporaryDirectory() as tmp:
            Planner(load_mesh(mesh), graph, store=Path(tmp) / "results.sqlite").plan()
    finally:
        plan_module.solve_joint = solve_joint  # type: ignore[attr-defined]
    return seen


def solve(r: Round, s: Setting) -> tuple[float, str, int | None]:
    """One round under one setting: seconds, CP-SAT's status, the optimum (None when infeasible)."""
    start = time.perf_counter()
    jm = round_model(r.tables, r.onchip, r.fused, r.pins, r.view, r.below_cycles, s.every_config)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 600.0
    solver.parameters.num_workers = s.workers
    solver.parameters.random_seed = 0
    solver.parameters.linearization_level = 2
    if s.probing_level is not None:
        solver.parameters.cp_model_probing_level = s.probing_level
    status = solver.solve(jm.model)
    optimum = solver.value(jm.objective) if status == cp_model.OPTIMAL else None
    return time.perf_counter() - start, solver.status_name(status), optimum


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    model = MODELS["llama-3-70b"]
    prec = precision(DEFAULT_PRECISION)

    def layer(rows: int) -> OpGraph:
        return model_graph("layer", model, rows, rows > 32, DECODE_KV, prec, model.layers)

    cases: list[tuple[str, str, OpGraph]] = (
        [("t3000", "matmul M=32,K=1024,N=4096", matmul_graph(32, 1024, 4096))]
        if args.quick
        else [
            ("t3000", "prefill 2k", layer(2048)),
            ("t3000", "decode b32", layer(32)),
            ("galaxy", "decode b32", layer(32)),
            ("bh_galaxy", "decode b32", layer(32)),
            ("p150x8", "prefill 2k", layer(2048)),
        ]
    )
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    totals = [0.0] * len(SETTINGS)
    count = 0
    for mesh, name, graph in cases:
        rounds = rounds_of(mesh, graph)
        seconds = [0.0] * len(SETTINGS)
        for r in rounds:
            answers = []
            for i, s in enumerate(SETTINGS):
                took, status, optimum = solve(r, s)
                seconds[i] += took
                answers.append((status, optimum))
            if len(set(answers)) != 1:
                raise SystemExit(f"{mesh} {name} view {r.view}: the settings disagree: {answers}")
        count += len(rounds)
        totals = [t + s for t, s in zip(totals, seconds, strict=True)]
        cells = ", ".join(f"{s.label} {x:.2f} s" for s, x in zip(SETTINGS, seconds, strict=True))
        print(f"{mesh} {name}: {len(rounds)} rounds: {cells}")
    shipped = totals[-1]
    for s, t in zip(SETTINGS, totals, strict=True):
        print(f"all {count} rounds, {s.label}: {t:.2f} s ({t / shipped:.1f}x the shipped setting's time)")


if __name__ == "__main__":
    main()
