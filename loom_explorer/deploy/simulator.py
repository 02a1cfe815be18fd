"""Run an exported TT-Lang kernel in tt-lang-sim and read back its numerics and its traffic.

The simulator runs in a process of its own (``python -m loom_explorer.deploy.sim_launch``, forked from a
warm process that has imported the simulator: ``warm_sim``) inside its own temporary folder, with a time
limit; the kernel file prints ``LOOM_RESULT {"pcc": ...}`` and the simulator's ``--trace`` JSON lines give
the traffic:

* ``copy_end`` events with ``direction`` ``read`` / ``write`` carry the tensor and its DRAM tile count;
* ``pipe_recv`` events carry the tiles a node received; the node is the ``nodeN`` of the event's kernel,
  ``N = x * grid_y + y`` for node ``(x, y)`` of the operation's grid (checked against the
  ``pipe_(x,y)_to_...`` names of the ``pipe_send`` events).

With ``tensors=True`` the file's ``main()`` does not run: the launcher runs its ``KERNEL`` on its
``kernel_arguments()`` and hands back the arguments before and after the run (``Simulation.tensors``), for a
reference the caller builds itself (``verify``); ``pcc`` is then None.
"""

from __future__ import annotations

import importlib.util
import json
import re
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loom_explorer.deploy.warm_sim import RunTimedOut, ServerError, run_launcher
from loom_explorer.errors import LoomError
from loom_explorer.traffic.tiles import TileTraffic

RESULT_PREFIX = "LOOM_RESULT "
_NODE = re.compile(r"^node(\d+)-")
_PIPE_SRC = re.compile(r"^pipe_\((\d+),(\d+)\)_to_")


class SimulationError(LoomError, RuntimeError):
    """The simulator is missing, failed, timed out, or gave no result; the message says which."""


@dataclass(frozen=True, slots=True)
class Simulation:
    pcc: float | None  # the file's own check (None with ``tensors``)
    traffic: TileTraffic
    seconds: float
    tensors: tuple[list[Any], list[Any]] | None = None  # the kernel's host arguments, before and after the run


def parse_trace(lines: list[str], grid: tuple[int, int]) -> TileTraffic:
    """DRAM tiles per tensor and pipe tiles per node (module docstring) of a ``--trace`` file's lines."""
    gx, gy = grid
    read: dict[str, int] = defaultdict(int)
    written: dict[str, int] = defaultdict(int)
    received: dict[tuple[int, int], int] = defaultdict(int)

    def node_of(event: dict[str, object]) -> tuple[int, int]:
        match = _NODE.match(str(event.get("kernel") or ""))
        if match is None:
            raise SimulationError(f"trace event without a node: {event}")
        n = int(match.group(1))
        if not 0 <= n < gx * gy:
            raise SimulationError(f"trace names node {n}, outside the {gx}x{gy} grid")
        return n // gy, n % gy

    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            raise SimulationError(f"trace line {number} is not JSON: {line[:80]!r}") from None
        kind = event.get("event")
        if kind == "copy_end" and event.get("direction") in ("read", "write") and event.get("dram"):
            (read if event["direction"] == "read" else written)[str(event["tensor"])] += int(event["dram"])
        elif kind == "pipe_recv":
            received[node_of(event)] += int(event["tiles"])
        elif kind == "pipe_send":
            src = _PIPE_SRC.match(str(event.get("pipe", "")))
            if src and (int(src.group(1)), int(src.group(2))) != node_of(event):
                raise SimulationError(f"trace node numbering is not x * grid_y + y: {event}")
    return TileTraffic(dict(read), dict(written), dict(received))


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


def simulate(
    kernel_file: str | Path, grid: tuple[int, int], timeout_seconds: float = 600.0, tensors: bool = False
) -> Simulation:
    """Run ``kernel_file`` in tt-lang-sim (module docstring)."""
    source = Path(kernel_file).resolve()
    if not source.is_file():
        raise SimulationError(f"kernel file {kernel_file} does not exist")
    if not _installed("ttl.sim"):  # found, not imported: the runs import it (warm_sim)
        raise SimulationError("tt-lang-sim is not installed: pip install 'loom-explorer[sim]'")
    with tempfile.TemporaryDirectory(prefix="loom-sim-") as work:
        trace, saved = Path(work) / "trace.jsonl", Path(work) / "tensors.npz"
        launch = ["--loom-tensors", str(saved)] if tensors else []
        start = time.perf_counter()
        try:
            proc = run_launcher([*launch, str(source), "--trace", str(trace)], Path(work), timeout_seconds)
        except RunTimedOut:
            raise SimulationError(f"tt-lang-sim did not finish {source.name} within {timeout_seconds:g} s") from None
        except ServerError as exc:
            raise SimulationError(f"tt-lang-sim could not start {source.name}: {exc}") from None
        seconds = time.perf_counter() - start
        output = proc.stdout + proc.stderr
        result = next(
            (line[len(RESULT_PREFIX) :] for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)), None
        )
        if tensors and proc.returncode == 0 and saved.is_file():
            result = "null"
        if result is None:
            tail = "\n".join(output.strip().splitlines()[-12:])
            raise SimulationError(f"tt-lang-sim ran {source.name} without a result (exit {proc.returncode}):\n{tail}")
        if not trace.is_file():
            raise SimulationError(f"tt-lang-sim wrote no trace for {source.name}")
        traffic = parse_trace(trace.read_text().splitlines(), grid)
        if tensors:
            import numpy
            import torch

            with numpy.load(saved, allow_pickle=False) as arrays:
                count = sum(name.startswith("before_") for name in arrays.files)
                before, after = (
                    [torch.from_numpy(arrays[f"{when}_{i}"]) for i in range(count)] for when in ("before", "after")
                )
            return Simulation(pcc=None, traffic=traffic, seconds=seconds, tensors=(before, after))
    return Simulation(pcc=float(json.loads(result)["pcc"]), traffic=traffic, seconds=seconds)
