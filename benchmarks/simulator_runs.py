"""Wall time of a TT-Lang kernel's simulator run: a fresh interpreter per run against runs forked from the warm
fork server (``loom_explorer/deploy/warm_sim.py``), in this process.

    python benchmarks/simulator_runs.py            # 7 runs of each kind, gemm M=K=N=256 on the n150
    python benchmarks/simulator_runs.py --quick    # 1 run of each kind: a smoke run (seconds)

The kernel is the best schedule's TT-Lang export (``export --format ttlang``). "fresh interpreter" runs
``python -m loom_explorer.deploy.sim_launch FILE --trace T`` in a subprocess, as every simulator run started
before the fork server; "forked" runs ``deploy.simulator.simulate`` on the same file (its first run also starts
the fork server: printed on its own line). Each run's result is checked (the file's own PCC check passes).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loom_explorer.deploy.simulator import RESULT_PREFIX, simulate
from loom_explorer.export.schedule_json import rebuild, schedule_document
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttlang.exporter import ttlang_source

HW, SHAPE = "wormhole_n150", "M=256,K=256,N=256"


def kernel_file(folder: Path) -> tuple[Path, tuple[int, int]]:
    """The best schedule of gemm ``SHAPE`` on ``HW`` exported to TT-Lang, and its grid."""
    hw = load_hardware(HW)
    problem = make_problem(load_program("gemm"), SHAPE, target=KernelTarget.ttlang)
    solved = [(r, r.solution) for r in Session(hw, problem).solve({}, SolveOptions()) if r.solution is not None]
    best, solution = min(solved, key=lambda pair: pair[1].latency_cycles)
    doc = schedule_document(hw, HW, "gemm", problem, best, SolveOptions())
    path = folder / "kernel.py"
    path.write_text(ttlang_source(rebuild(doc), doc))
    values = solution.values()
    return path, (values["grid_x"], values["grid_y"])


def fresh_interpreter(path: Path, folder: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "loom_explorer.deploy.sim_launch", str(path), "--trace", str(folder / "trace.jsonl")],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0 or RESULT_PREFIX not in done.stdout:
        raise SystemExit(f"the fresh-interpreter run failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def forked(path: Path, grid: tuple[int, int]) -> float:
    start = time.perf_counter()
    sim = simulate(path, grid)
    seconds = time.perf_counter() - start
    if sim.pcc is None or sim.pcc < 0.99:
        raise SystemExit(f"the forked run's check failed: pcc {sim.pcc}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 run of each kind")
    runs = 1 if parser.parse_args().quick else 7
    with tempfile.TemporaryDirectory(prefix="loom-sim-bench-") as work:
        path, grid = kernel_file(Path(work))
        print(f"gemm {SHAPE} on {HW}, its best schedule exported to TT-Lang; runs of each kind: {runs}")
        first = forked(path, grid)
        warm = [forked(path, grid) for _ in range(runs)]
        cold = [fresh_interpreter(path, Path(work)) for _ in range(runs)]
    cold_s, warm_s = statistics.median(cold), statistics.median(warm)
    print(f"fresh interpreter per run: median {cold_s:.3f} s")
    print(f"forked, the first run (starts the fork server): {first:.3f} s")
    print(f"forked, later runs: median {warm_s:.3f} s")
    print(f"forked / fresh interpreter: {warm_s / cold_s:.3f}x")


if __name__ == "__main__":
    main()
