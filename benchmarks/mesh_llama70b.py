"""Llama-3-70B decoder layer on a T3000: every split candidate of every op, the best proven, cold and warm.

    python benchmarks/mesh_llama70b.py            # prefill 2k and decode b32
    python benchmarks/mesh_llama70b.py --quick    # one small matmul on the T3000 (seconds)

The layer as ``mesh solve`` plans it by default: tt-transformers' performance precision, all 80 layers'
weights resident (``mesh/precision.py``, ``mesh/capacity.py``). Per phase, twice, each with a new
``Planner`` (``loom_explorer/mesh/plan.py``) and a new empty temporary results store: cold (every per-chip
problem the loop needs is solved), then warm (the same store: every stored answer is read back before the
first round); a small matmul is planned first, untimed, so imports and shared caches are warm; then once more
cold without trying the winners of alike per-chip problems first (``Planner.winners_first``). Printed: the
machine's load average (other work shares its cores), the wall times, the per-chip problems solved and
pruned, the splits refused for DRAM capacity, the joint solves, the time in per-chip solves, and the best
layer latency (with ttnn's split, costed warm, beside it).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from loom_explorer.hardware.mesh_load import load_mesh
from loom_explorer.mesh.graph import OpGraph, matmul_graph, model_graph
from loom_explorer.mesh.joint import JointSolution
from loom_explorer.mesh.plan import MeshPlan, Planner
from loom_explorer.mesh.precision import DEFAULT_PRECISION, precision
from loom_explorer.mesh.ttnn_split import ttnn_layer_pins
from loom_explorer.sweep.ops import DECODE_KV, MODELS, PHASES


def run(graph: OpGraph, store: Path, winners_first: bool = True) -> tuple[float, MeshPlan, Planner]:
    start = time.perf_counter()
    planner = Planner(load_mesh("t3000"), graph, store=store, winners_first=winners_first)
    plan = planner.plan()
    return time.perf_counter() - start, plan, planner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    model = MODELS["llama-3-70b"]
    prec = precision(DEFAULT_PRECISION)
    phases = {name: (rows, prefill) for name, rows, prefill in PHASES}
    cases: list[tuple[str, OpGraph, bool | None]] = (
        [("matmul M=32,K=1024,N=4096", matmul_graph(32, 1024, 4096), None)]
        if args.quick
        else [
            (p, model_graph("layer", model, phases[p][0], phases[p][1], DECODE_KV, prec, model.layers), phases[p][1])
            for p in ("prefill 2k", "decode b32")
        ]
    )
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    with tempfile.TemporaryDirectory() as tmp:  # imports and shared caches warmed before anything is timed
        run(matmul_graph(32, 512, 1024), Path(tmp) / "warm_up.sqlite")
    for name, graph, prefill in cases:
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "results.sqlite"
            cold_s, cold, _ = run(graph, store)
            warm_s, warm, planner = run(graph, store)
            assert isinstance(cold.result, JointSolution) and isinstance(warm.result, JointSolution)
            plain_s, plain, _ = run(graph, Path(tmp) / "plain.sqlite", winners_first=False)
            assert isinstance(plain.result, JointSolution)
            assert cold.result.latency_cycles == warm.result.latency_cycles == plain.result.latency_cycles
            print(
                f"{name}: cold {cold_s:.2f} s (per-chip solves {cold.solve_seconds:.2f} s, {cold.rounds} joint "
                f"solves; without winners first {plain_s:.2f} s, per-chip solves {plain.solve_seconds:.2f} s), "
                f"warm {warm_s:.2f} s; per-chip problems solved {cold.problems_solved}, "
                f"pruned {cold.problems_pruned}; split candidates {len(cold.splits)} "
                f"({sum(s.status == 'infeasible: DRAM' for s in cold.splits)} infeasible: DRAM)"
            )
            line = f"  best {cold.result.latency_cycles:,} cycles on view {cold.result.view}"
            if prefill is not None:
                ttnn = planner.plan(ttnn_layer_pins(graph, planner.views, prefill))
                if isinstance(ttnn.result, JointSolution):
                    line += f"; ttnn's split {ttnn.result.latency_cycles:,} cycles"
            print(line)


if __name__ == "__main__":
    main()
