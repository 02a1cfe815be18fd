"""The collective model's two fitted constants, their fit, and the shipped file of them.

The collective family's first-principles latency (``model/collective.py``'s terms: ``link``, ``local``,
``hop``, ``fixed`` cycles) takes its rates from the mesh file: the fabric goldens' unicast rate of one
link (``fabric_bytes_per_cycle``) and the per-hop latency. Two things first principles do not give:

* ``link_efficiency`` ``eta``: the share of that golden rate a collective's transfers reach (its workers
  read, packetise and synchronise between chunks; the golden is one sender streaming);
* ``extra_fixed_cycles`` ``c``: the op's fixed cost beyond the kernels' launch and the barrier round
  trip (worker and fabric connection set-up, semaphore handshakes, the last chunk's drain).

The calibrated time of an op on a mesh of clock ``f`` is

    t = (c + fixed + hop + max(link / eta, local)) / f

Both constants are global (one value for every architecture and mesh), so that a topology left out of the
fit is predicted from the others (``collective_accuracy``). The fit (``fit_constants``) minimises over the
**measured** rows only (an upper bound is never fitted)

    sum_i rho(sqrt(m / n_t(i)) * log(t_i / measured_i))

with ``rho`` the Cauchy loss of ``least_squares.robust_least_squares`` (relative error, over- and
under-prediction alike), ``n_t(i)`` the rows of row ``i``'s topology and ``m`` the mean rows per topology:
each topology weighs alike, whatever its row count (a capture gives one row per device). The parameters are
``log(1 / eta)`` and ``log(c / 1000)``, so both stay positive; the Jacobian is by central differences.

The shipped constants (``data/collective_calibration.csv``) are the fit of every measured row of
``collective_times.csv``, of the CCL bandwidth benchmark (``ccl_benchmark.py``) and of the shipped captures'
collective rows (``collective_accuracy.all_rows``),
kept only where they beat the first-principles model out of sample (``collective_accuracy.gated_constants``:
leave one topology out, a lower pooled median |error| and no higher 90th percentile); otherwise the file
holds ``eta = 1``, ``c = 0`` and says why. ``python -m loom_explorer.accuracy.collective_accuracy`` prints it.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from loom_explorer.accuracy.least_squares import Matrix, Vector, robust_least_squares
from loom_explorer.errors import LoomError
from loom_explorer.hardware.mesh_load import mesh_chip
from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.model.collective import CollectiveLatency, CollectiveOp, collective_model

if TYPE_CHECKING:
    from loom_explorer.accuracy.collective_rows import CollectiveRow

CALIBRATION_FILE: Path = Path(__file__).resolve().parent.parent / "data" / "collective_calibration.csv"
COLUMNS = ("constant", "value", "unit", "rows", "topologies", "fitted_on")
FIXED_UNIT_CYCLES = 1000.0  # the scale of the fixed-cost parameter (log(c / 1000))


class CollectiveCalibrationError(LoomError, ValueError):
    """``collective_calibration.csv`` cannot be read; the message names the line."""


@dataclass(frozen=True, slots=True)
class CollectiveConstants:
    """``eta`` and ``c`` (module docstring), and what they were fitted on (no rows: uncalibrated)."""

    link_efficiency: float = 1.0
    extra_fixed_cycles: float = 0.0
    rows: int = 0
    topologies: tuple[str, ...] = ()

    def cycles(self, lat: CollectiveLatency) -> float:
        """The calibrated cycles of an op whose first-principles terms are ``lat``."""
        return (
            self.extra_fixed_cycles
            + lat.fixed_cycles
            + lat.hop_cycles
            + max(lat.link_cycles / self.link_efficiency, lat.local_cycles)
        )

    def predict_us(self, op: CollectiveOp, mesh: MeshSpec) -> float:
        chip = mesh_chip(mesh)
        return self.cycles(collective_model().latency(op, mesh, chip)) / chip.clock_ghz / 1e3

    def to_csv(self, fitted_on: str) -> str:
        """The shipped file's text; ``fitted_on`` says what fitted the values (or why they are not kept)."""
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(COLUMNS)
        tops = ";".join(self.topologies)
        w.writerow(
            ["link_efficiency", f"{self.link_efficiency:.4f}", "of fabric_bytes_per_cycle", self.rows, tops, fitted_on]
        )
        w.writerow(["extra_fixed_cycles", f"{self.extra_fixed_cycles:.0f}", "cycles", self.rows, tops, fitted_on])
        return out.getvalue()

    @staticmethod
    def parse(text: str, source: str) -> CollectiveConstants:
        reader = csv.DictReader(io.StringIO(text))
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise CollectiveCalibrationError(f"{source}: header must be {','.join(COLUMNS)}")
        values: dict[str, float] = {}
        rows = 0
        topologies: tuple[str, ...] = ()
        for line, cells in enumerate(reader, start=2):
            try:
                value = float(cells["value"])
                if not (math.isfinite(value) and value >= 0):
                    raise ValueError(f"value {cells['value']!r} is not a number >= 0")
                values[cells["constant"]] = value
                rows = int(cells["rows"])
                topologies = tuple(t for t in cells["topologies"].split(";") if t)
            except (TypeError, ValueError) as e:
                raise CollectiveCalibrationError(f"{source} line {line}: {e}") from None
        missing = {"link_efficiency", "extra_fixed_cycles"} - set(values)
        if missing or not values["link_efficiency"] > 0:
            raise CollectiveCalibrationError(f"{source}: needs link_efficiency > 0 and extra_fixed_cycles rows")
        return CollectiveConstants(values["link_efficiency"], values["extra_fixed_cycles"], rows, topologies)


UNCALIBRATED = CollectiveConstants()


@cache
def shipped_constants() -> CollectiveConstants:
    """The shipped constants (``data/collective_calibration.csv``)."""
    return CollectiveConstants.parse(CALIBRATION_FILE.read_text(encoding="utf-8"), str(CALIBRATION_FILE))


def _terms(rows: Sequence[CollectiveRow]) -> list[CollectiveLatency]:
    model = collective_model()
    return [model.latency(r.op, r.mesh, mesh_chip(r.mesh)) for r in rows]


def fit_constants(rows: Sequence[CollectiveRow]) -> CollectiveConstants:
    """``eta`` and ``c`` fitted on the measured rows of ``rows`` (module docstring); uncalibrated when none."""
    measured = [r for r in rows if not r.upper_bound]
    if not measured:
        return UNCALIBRATED
    lats = _terms(measured)
    per_topology = Counter(r.topology for r in measured)
    mean = len(measured) / len(per_topology)
    weight = np.sqrt(np.array([mean / per_topology[r.topology] for r in measured]))
    clock = np.array([mesh_chip(r.mesh).clock_ghz for r in measured])
    target = np.array([r.time_us for r in measured])
    link = np.array([x.link_cycles for x in lats], dtype=np.float64)
    local = np.array([x.local_cycles for x in lats], dtype=np.float64)
    rest = np.array([x.fixed_cycles + x.hop_cycles for x in lats], dtype=np.float64)

    def r_of(p: Vector) -> Vector:
        cycles = math.exp(p[1]) * FIXED_UNIT_CYCLES + rest + np.maximum(link * math.exp(p[0]), local)
        out: Vector = weight * np.log(cycles / clock / 1e3 / target)
        return out

    def residuals(p: Vector) -> tuple[Vector, Matrix]:
        h = 1e-6
        cols = [(r_of(p + h * e) - r_of(p - h * e)) / (2 * h) for e in np.eye(len(p))]
        return r_of(p), np.stack(cols, axis=1)

    x = robust_least_squares(residuals, np.array([0.0, math.log(10.0)])).x
    return CollectiveConstants(
        link_efficiency=math.exp(-x[0]),
        extra_fixed_cycles=math.exp(x[1]) * FIXED_UNIT_CYCLES,
        rows=len(measured),
        topologies=tuple(sorted(per_topology)),
    )
