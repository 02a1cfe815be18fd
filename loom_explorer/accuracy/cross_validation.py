"""Cross-validation of ``calibrate``'s fit: how well the model predicts measurements no constant was fitted
on, whatever kernel's rows they are.

The rows of one card are split into groups (a kernel's family says what a group is: one shape of a matmul,
one problem of an attention); for each group ``g`` the constants are fitted (``calibrate.fit_constants``,
the same coordinate descent from the same starting values) on the rows of every other group, and the rows
of ``g`` are predicted with them (the family's ``fold``). The error of those predictions, over every group,
is the cross-validated error; the in-sample error predicts every row with constants fitted on all of them.
Folds are independent and run in parallel, one per worker process; each is a module-level function so that
the pool can send it to a worker.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from concurrent.futures import as_completed
from typing import Any, TypeVar

from loom_explorer.accuracy.progress import Progress
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.solve.children import worker_pool

R = TypeVar("R")  # a measured row
P = TypeVar("P")  # a predicted row

# (hardware to start from, card, rows to fit on, rows to predict, constants) -> the predicted rows
Fold = Callable[[HardwareSpec, str, list[R], list[R], tuple[str, ...]], list[P]]


def leave_groups_out(
    hw: HardwareSpec,
    card: str,
    rows: list[R],
    group: Callable[[R], Hashable],
    fold: Fold[R, P],
    constants: tuple[str, ...],
    order: Callable[[P], Any],
    what: str,
    processes: int | None = None,
    progress: Progress | None = None,
) -> tuple[int, list[P]]:
    """(groups, every row of ``rows`` predicted by ``fold`` from constants fitted without its group, sorted by
    ``order``): one fold per distinct ``group(row)``, ``processes`` at a time (default one per CPU core);
    ``progress`` counts the folds (``cross-validating (WHAT)``)."""
    keys = sorted({group(r) for r in rows}, key=repr)
    if progress:
        progress.phase(f"cross-validating ({what})", len(keys))
    workers = min(len(keys), processes or os.cpu_count() or 1) or 1
    out: list[P] = []
    with worker_pool(workers) as pool:  # workers ignore Ctrl-C and end with the command
        futures = [
            pool.submit(
                fold, hw, card, [r for r in rows if group(r) != key], [r for r in rows if group(r) == key], constants
            )
            for key in keys
        ]
        for done, future in enumerate(as_completed(futures), start=1):
            out += future.result()
            if progress:
                progress.update(done)
    out.sort(key=order)
    return len(keys), out
