"""The measured rows the capture calibration fits and is judged on: every op of every shipped device-profiler
capture the model predicts, with the model's latency terms for it and what the baselines need.

A row is one profiler row that ``ingest`` predicts (``report_measurements`` on the chip the capture names, or
``data.CAPTURE_CHIPS`` states): its measured device kernel duration, and the uncalibrated schedule's latency
terms in cycles (``breakdown``; a batched matmul's with everything but ``launch`` and ``fill`` counted once
per batch: ``ingest.repeated_terms``), the chip's clock, its architecture, the op's kernel
and family. Two model-free sizes feed the baselines (``baselines.py``):

    work_tiles   = prod_d elements(d) / 1024       over every dimension of the problem but the parts of another
                                                   (x batch repeats): the iteration space in 32x32 tiles
                                                   (M*K*N/1024 for a matmul)
    tensor_bytes = sum_X prod_{d in X} elements(d) * tile_bytes(format_X) / 1024   every tensor once

``role`` is the capture's role (``data.CAPTURE_ROLES``): ``fit`` rows fit the shipped calibration
(``shipped_fit``; ``python -m loom_explorer.accuracy.calibration_rows`` prints the file), ``check`` rows never do.
"""

from __future__ import annotations

import math
import sys
from functools import cache

from loom_explorer.accuracy.calibration_row import TILE_ELEMENTS, CalibrationRow
from loom_explorer.accuracy.ingest import IngestedOp, choose_hardware, op_problem, read_ops_perf, report_measurements
from loom_explorer.accuracy.term_calibration import UNCALIBRATED, TermScales, gated_fit
from loom_explorer.data import CAPTURE_CHIPS, CAPTURE_ROLES, CAPTURES, capture_path
from loom_explorer.hardware.load import load_hardware
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.program import load_program
from loom_explorer.program.structure import program_family
from loom_explorer.store.records import Measurement


def _family(kernel: str) -> str:
    return program_family(load_program(kernel)).name


def _sizes(op: IngestedOp, hw: HardwareSpec) -> tuple[float, float]:
    """(work_tiles, tensor_bytes) of ``op``'s problem (module docstring), counted in elements: a dimension that
    is part of another (``Dim.part_of``: a padded tilize's input rows) is not counted twice, one no tensor
    indexes (a count the cost reads, e.g. a tiled reshape's input tile reads) not at all, and a row-major
    dimension's extent is elements, not tiles."""
    problem = op_problem(op)
    if problem is None:
        return 0.0, 0.0
    extents = {d: problem.elements(d) for d, _ in problem.shape}
    indexed = {d for t in problem.program.tensors for d in t.dims}
    whole = [d for d in extents if problem.program.dim(d).part_of is None and d in indexed]
    work = math.prod(extents[d] for d in whole) / TILE_ELEMENTS * op.batch_repeats
    total = 0.0
    for t in problem.program.tensors:
        if problem.is_enabled(t.name):
            element_bytes = hw.tile_bytes[problem.data_format(t.name)] / TILE_ELEMENTS
            total += math.prod(extents.get(d, 1) for d in t.dims) * element_bytes
    return float(work), total * op.batch_repeats


def rows_of(name: str, ops: tuple[IngestedOp, ...], measurements: list[Measurement]) -> list[CalibrationRow]:
    """The calibration rows of capture ``name``: its ``ops`` and their ``measurements`` (one to one)."""
    out = []
    chips: dict[str, HardwareSpec] = {}
    for op, m in zip(ops, measurements, strict=True):
        if m.predicted_ns is None or not m.measured_ns or not m.breakdown:
            continue
        hw = chips.get(m.hardware) or chips.setdefault(m.hardware, load_hardware(m.hardware.split("@")[0]))
        work, tensor_bytes = _sizes(op, hw)
        shape = ",".join(f"{k}={v}" for k, v in sorted((op.model_shape or op.shape).items()))
        formats = ",".join(f"{k}={v.value}" for k, v in sorted(op.formats.items()))
        out.append(
            CalibrationRow(
                capture=name,
                role=CAPTURE_ROLES[name],
                hardware=m.hardware,
                arch=hw.arch.name,
                family=_family(op.kernel),
                kernel=op.kernel,
                op_code=op.op_code,
                shape_key=f"{op.kernel} {shape} {formats} x{op.batch_repeats}",
                measured_ns=float(m.measured_ns),
                clock_ghz=hw.clock_ghz,
                terms_cycles=tuple(m.breakdown.items()),
                cores=op.core_count or (op.grid[0] * op.grid[1] if op.grid else hw.grid.columns * hw.grid.rows),
                work_tiles=work,
                tensor_bytes=tensor_bytes,
            )
        )
    return out


@cache
def capture_rows(name: str) -> tuple[CalibrationRow, ...]:
    """Every predicted row of the shipped capture ``name`` (module docstring)."""
    report = read_ops_perf(capture_path(name))
    stated = CAPTURE_CHIPS.get(name)
    hw, grid = stated if stated else choose_hardware(report)[:2]
    measurements = report_measurements(report, hw, None, grid, calibration=UNCALIBRATED)
    return tuple(rows_of(name, report.ops, measurements))


def all_capture_rows(names: tuple[str, ...] | None = None) -> tuple[CalibrationRow, ...]:
    """The rows of every shipped capture (or of ``names``), in ``CAPTURES`` order."""
    return tuple(r for n in (names or tuple(CAPTURES)) for r in capture_rows(n))


def shipped_fit() -> TermScales:
    """The shipped calibration (``data/capture_calibration.csv``): the gated fit (``term_calibration.gated_fit``)
    of every row of the captures whose role is ``fit``."""
    return gated_fit([r for r in all_capture_rows() if r.role == "fit"])


if __name__ == "__main__":
    sys.stdout.write(shipped_fit().to_csv())
