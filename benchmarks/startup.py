"""Start-up time of the command line: `python -c pass`, `loom-explorer --help` and an answer from the results store.

    python benchmarks/startup.py            # 9 runs each; the stored answer is gemm 4096^3 on the n150
    python benchmarks/startup.py --quick    # 3 runs each; gemm 256^3: a smoke run (seconds)

Every run is a fresh process as a user starts it (``python -m loom_explorer.cli ...``, what the
``loom-explorer`` script runs; a pyenv shim in front of the script adds its own time). The stored answer is
``solve`` of one problem into a new temporary store (``--store``), solved once first and not timed; every
timed run must then say it came from the store, else its figure is not a stored answer (printed ``False``:
e.g. the package's source changed in between, which is part of the store's key). Printed per command: the
median wall time, the median CPU time of the process (user + system: less sensitive to a loaded machine than
the wall time), both over ``python -c pass``'s, and which of the heavy libraries the command imports.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("ortools", "pandas", "networkx", "numpy", "pydantic", "yaml")
TARGET_S = 0.4  # --help and a stored answer, wall time
PROBLEM = ("gemm", "M=4096,K=4096,N=4096")
QUICK_PROBLEM = ("gemm", "M=256,K=256,N=256")
# run a command in this process and print the heavy libraries it left imported (the command's own output
# goes to stderr)
LOADED = (
    "import contextlib, sys\n"
    "from loom_explorer.cli import main\n"
    "with contextlib.redirect_stdout(sys.stderr):\n"
    "    main(sys.argv[1:])\n"
    f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules) or '-')\n"
)


def timed(command: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall and CPU seconds of one run of ``command`` (CPU: user + system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def loaded(arguments: list[str]) -> str:
    """The heavy libraries ``loom-explorer ARGUMENTS`` imports."""
    done = subprocess.run([sys.executable, "-c", LOADED, *arguments], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs each, a small problem")
    parser.add_argument("--runs", type=int, default=None, help="runs per command (default 9, --quick 3)")
    parser.add_argument("--hw", default="wormhole_n150")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 9)
    kernel, shape = QUICK_PROBLEM if args.quick else PROBLEM
    cli = [sys.executable, "-m", "loom_explorer.cli"]
    with tempfile.TemporaryDirectory() as folder:
        solve = ["solve", kernel, "--hw", args.hw, "--shape", shape, "--store", str(Path(folder) / "results.sqlite")]
        subprocess.run([*cli, *solve], capture_output=True, text=True, check=True)  # the answer to recall
        commands = {
            "python -c pass": ([sys.executable, "-c", "pass"], None),
            "loom-explorer --help": ([*cli, "--help"], ["--help"]),
            f"stored answer: solve {kernel} {shape}": ([*cli, *solve], solve),
        }
        figures: dict[str, tuple[float, float, bool, str]] = {}
        for name, (command, arguments) in commands.items():
            walls, cpus, stored = [], [], True
            for _ in range(runs):
                wall, cpu, done = timed(command)
                walls.append(wall)
                cpus.append(cpu)
                if arguments and arguments[0] == "solve":
                    stored = stored and "from the store, proven" in done.stderr
            figures[name] = (
                statistics.median(walls),
                statistics.median(cpus),
                stored,
                loaded(arguments) if arguments else "-",
            )
    base_wall, base_cpu = figures["python -c pass"][:2]
    print(f"{runs} runs each, medians; python {sys.version.split()[0]}")
    print(f"{'command':<52} {'wall s':>7} {'CPU s':>6} {'wall/pass':>9} {'CPU/pass':>8}  {'stored':<6}  imports")
    for name, (wall, cpu, stored, heavy) in figures.items():
        print(
            f"{name:<52} {wall:>7.3f} {cpu:>6.3f} {wall / base_wall:>9.1f} {cpu / base_cpu:>8.1f}  "
            f"{str(stored):<6}  {heavy}"
        )
    slowest = max(figures[name][0] for name in list(figures)[1:])
    verdict = "met" if slowest < TARGET_S else "MISSED"
    print(f"target: --help and the stored answer under {TARGET_S} s wall -> {verdict}")


if __name__ == "__main__":
    main()
