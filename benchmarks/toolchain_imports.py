"""Start-up of a toolchain process: ``import ttnn`` in the toolchain's Python 3.12, with the environment's
bytecode and without it.

    python benchmarks/toolchain_imports.py            # 5 runs of each kind
    python benchmarks/toolchain_imports.py --quick    # 1 run of each kind: a smoke run (seconds)

Every compile and every ttnn-contract run is a fresh process of the toolchain's Python (``deploy/toolchain.py``),
which imports torch and ttnn first. ``toolchain install`` compiles the environment's modules to bytecode;
"without bytecode" runs the same import with ``PYTHONPYCACHEPREFIX`` set to an empty folder and
``PYTHONDONTWRITEBYTECODE=1``, so that Python finds no bytecode and compiles every module from source, as it
did in an environment installed without it. Both kinds run in this process, alternately. Printed: the median
wall time of each and their ratio, and how many bytecode files the environment's ttnn package has.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from loom_explorer.deploy.toolchain import find_toolchain


def import_seconds(python: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([python, "-c", "import ttnn"], capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"import ttnn failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 run of each kind")
    runs = 1 if parser.parse_args().quick else 5
    toolchain = find_toolchain()
    if toolchain is None:
        sys.exit("no toolchain: loom-explorer toolchain install")
    packages = list(toolchain.root.glob("lib/python*/site-packages/ttnn"))
    bytecode = sum(1 for p in packages for _ in p.rglob("*.pyc"))
    print(f"toolchain {toolchain.root}: {bytecode} bytecode files in its ttnn package; runs of each kind: {runs}")
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    with tempfile.TemporaryDirectory(prefix="loom-no-bytecode-") as empty:
        without = {**base, "PYTHONPYCACHEPREFIX": empty, "PYTHONDONTWRITEBYTECODE": "1"}
        timed: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(runs):
            timed["with"].append(import_seconds(str(toolchain.python), base))
            timed["without"].append(import_seconds(str(toolchain.python), without))
    with_s, without_s = (statistics.median(timed[kind]) for kind in ("with", "without"))
    print(f"import ttnn with the environment's bytecode: median {with_s:.2f} s")
    print(f"import ttnn without bytecode (every module compiled): median {without_s:.2f} s")
    print(f"with / without: {with_s / without_s:.2f}x")


if __name__ == "__main__":
    main()
