"""Every script in ``benchmarks/`` runs with ``--quick`` and prints its figures.

Each runs in a subprocess, as a user runs it (``python benchmarks/NAME.py --quick``, plus the arguments
``ARGUMENTS`` gives a script that needs some), from an empty temporary folder, so a script that needs the
repository as its working directory, or writes into it, fails here. The quick runs take seconds; their
figures are not checked, only that they are printed, except where the quick run has a known answer
(``schedule_changes.py`` compares a hardware file with itself: nothing may move). Each run is a fresh
interpreter running a benchmark (3-13 s): the slow tier runs them, the quick tier only ``schedule_changes.py``
(about 3 s, with a known answer).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from waits import WAIT_S

from loom_explorer.program import list_kernels

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

# script -> (pytest marks, patterns its --quick output must contain: the lines that carry its figures)
EXPECTED: dict[str, tuple[tuple[pytest.MarkDecorator, ...], tuple[str, ...]]] = {
    "solve_speed.py": (
        (pytest.mark.slow,),
        (
            r"M=256,K=256,N=256 +20 +20 ",
            r"solve all candidates: median \d+\.\d+ s",
            r"re-solve one candidate after a pin: median \d+ ms",
            r"fastest schedule only .*: median \d+\.\d+ s",
            r"brute force finished \d+ candidate spaces .*: True",
        ),
    ),
    "mesh_llama70b.py": (
        (pytest.mark.slow,),
        (r"matmul M=32,K=1024,N=4096: cold \d+\.\d+ s .* warm \d+\.\d+ s; per-chip problems solved \d+",),
    ),
    "joint_settings.py": (
        (pytest.mark.slow,),
        (
            r"t3000 matmul M=32,K=1024,N=4096: \d+ rounds: every config, 8 workers \d+\.\d+ s",
            r"all \d+ rounds, pruned, 1 worker, no probing: \d+\.\d+ s \(1\.0x the shipped setting's time\)",
        ),
    ),
    "model_variants.py": (
        (pytest.mark.slow,),
        (r"wormhole_n150 +M=2048,K=2048,N=2048 +\d+\.\d+", r"total \d+\.\d+ s, CPU \d+\.\d+ s"),
    ),
    "large_inputs.py": (
        (pytest.mark.slow,),
        (r"accuracy +1000 +40 +\d+\.\d+ +\d+", r"ingest +1000 +40 +\d+\.\d+ +\d+"),
    ),
    "sweep_scaling.py": (
        (pytest.mark.slow,),  # two Dask clusters: about 20 s
        (
            r"1 worker\(s\): 2 rows \(0 failed\) in \d+\.\d+ s",
            r"2 worker\(s\): 2 rows \(0 failed\) in \d+\.\d+ s",
            r"2 workers / 1 worker: \d+\.\d+x",
        ),
    ),
    "ui_latency.py": (
        (pytest.mark.browser,),
        (
            r"first page: the best candidate proven and shown \d+\.\d+ s",
            r"browser: click Pin -> grid updated median +\d+\.\d+ ms",
            r"of which solve \(no browser\) +median +\d+\.\d+ ms",
            r"target: median under 300 ms -> (met|MISSED)",
        ),
    ),
    # each kernel's tiny shape and two crash regressions: tests/test_shipped_matrix.py runs the same cells
    "shipped_matrix.py": (
        (pytest.mark.slow,),
        (
            r"\d+ cells in \d+\.\d+ s: schedule \d+, no schedule \d+, "
            r"bad input \d+, fail 0",
            r"internal errors: 0; over 60 s: 0",
        ),
    ),
    "solve_order.py": (
        (pytest.mark.slow,),
        (
            r"gemm M=256,K=256,N=256: at once \d+\.\d+ s, at the end \d+\.\d+ s",
            r"2 problems: at once \d+\.\d+ s, at the end \d+\.\d+ s; at once / at the end \d+\.\d+x",
        ),
    ),
    "store_referee.py": ((pytest.mark.slow,), (r"gemm M=256,K=256,N=256 +20 +20 +\d+\.\d+ +\d+ +\d+",)),
    "solve_memory.py": (
        (pytest.mark.slow,),
        (r"gemm M=256,K=256,N=256 +\d+\.\d+ +\d+\.\d+ +\d+\.\d+ +\d+\.\d+  True",),
    ),
    "simulator_runs.py": (
        (pytest.mark.slow,),
        (
            r"fresh interpreter per run: median \d+\.\d+ s",
            r"forked, later runs: median \d+\.\d+ s",
            r"forked / fresh interpreter: \d+\.\d+x",
        ),
    ),
    "toolchain_imports.py": (
        (pytest.mark.toolchain,),  # the toolchain's Python: installed for the toolchain tier
        (
            r"import ttnn with the environment's bytecode: median \d+\.\d+ s",
            r"import ttnn without bytecode \(every module compiled\): median \d+\.\d+ s",
            r"with / without: \d+\.\d+x",
        ),
    ),
    # the stored answer came from the store, and without OR-Tools, pandas or networkx
    "startup.py": (
        (pytest.mark.slow,),
        (
            r"python -c pass +\d+\.\d+ +\d+\.\d+ +1\.0 +1\.0",
            r"loom-explorer --help +\d+\.\d+ +\d+\.\d+ +\d+\.\d+ +\d+\.\d+  True +-\n",
            r"stored answer: solve gemm M=256,K=256,N=256 +(\d+\.\d+ +){4}True +(?!.*(ortools|pandas|"
            r"networkx)).*\n",
            r"target: --help and the stored answer under 0\.4 s wall -> (met|MISSED)",
        ),
    ),
    # the quick cells written twice: the same files
    "behaviour_snapshot.py": (
        (pytest.mark.slow,),
        (rf"{len(list_kernels())} cells in \d+ s -> ", r"\d+ files in both, 0 differences"),  # a cell per kernel
    ),
    # one file against itself: the same choice, costed the same
    "schedule_changes.py": (
        (),
        (
            r"M=256,K=256,N=256 +M@\S+ g\d+x\d+ .* same +- +([\d,]+) +\1 +1\.000\b",
            r"1 shapes, choices changed on 0 \(candidate on 0; ties 0\); old choice under new "
            r"model / new choice: median 1\.000, max 1\.000; best predicted latency after/before: "
            r"median 1\.000",
        ),
    ),
}

# script -> the arguments it needs besides --quick
ARGUMENTS: dict[str, tuple[str, ...]] = {
    "schedule_changes.py": ("--before", "wormhole_n150", "--after", "wormhole_n150"),
}


def test_every_benchmark_script_has_a_quick_run_here() -> None:
    assert sorted(p.name for p in BENCHMARKS.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("script", [pytest.param(name, marks=marks) for name, (marks, _) in EXPECTED.items()])
def test_quick_run_prints_its_figures(script: str, tmp_path: Path) -> None:
    command = [sys.executable, str(BENCHMARKS / script), "--quick", *ARGUMENTS.get(script, ())]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=WAIT_S, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    for pattern in EXPECTED[script][1]:
        assert re.search(pattern, done.stdout), f"{script} --quick printed no line matching {pattern!r}:\n{done.stdout}"
    assert list(tmp_path.iterdir()) == [], "the benchmark left files in its working directory"
