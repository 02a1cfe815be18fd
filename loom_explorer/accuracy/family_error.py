"""The model's measured error per kernel family, shown beside every predicted speed-up over ttnn's default.

A predicted speed-up ``s = t_default / t_ours`` is a ratio of two predictions of one model. If each
prediction is within a relative error ``e`` of the time a card measures (``|predicted - measured| <=
e * measured``), the measured speed-up lies in ``[s (1 - e) / (1 + e), s (1 + e) / (1 - e)]``; its floor
``s (1 - e) / (1 + e)`` (``speedup_floor``) is what the claim is worth at that error. The floor is given at
the family's median and at its worst measured error: a speed-up whose floor at the worst error is above 1
is real under every error seen so far; one whose floor at the median is below 1 is inside the error.

The figures (``model_error.csv`` in ``loom_explorer/data``, read by ``family_errors``) are made by
``measure_family_errors`` from the published data (``python -m loom_explorer.accuracy.family_error``
prints the file): each kernel with published measurements (``op_mapping.published_kernels``, the default
first) gives the signed errors behind its figures (``PublishedKernel.measure_errors``), e.g.

* ``matmul`` (the ``gemm`` kernel): ``gemm_flops_checking.csv``, the published matmul timings no fit and no
  model development used (``held out``), per card, each row predicted with the config it ran (ttnn's
  automatic config or the hand-tuned one);
* ``sdpa`` (``flash_attention`` with more than one query row: ttnn's prefill SDPA op): ``sdpa_op_times.csv``
  rows of the kernels the model describes, ``in sample`` (the shipped constants) and ``cross-validated``
  (the attention constant refitted without each problem).

* every kernel family (``contraction``, ``elementwise``, ``row_reduction``, ...) with at least 20 predicted
  rows of one architecture in the shipped device-profiler captures: ``cross-validated``, each capture's rows
  predicted by the capture calibration fitted without it (``capture_family_errors``; ``hardware`` is the
  architecture, ``wormhole`` or ``blackhole``).

An op's figure (``error_for_op``) is the larger of its error family's and its kernel family's; a family
with neither has no figure (None: the report says "not measured"). The most independent basis is preferred
(held out, then cross-validated, then in sample), and a figure of the same chip (or architecture) before one
of another chip, which the report then names.
"""

from __future__ import annotations

import csv
import datetime
import io
import statistics
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from loom_explorer.accuracy.op_mapping import error_family, published_kernels
from loom_explorer.errors import LoomError

MODEL_ERROR_FILE: Path = Path(__file__).resolve().parent.parent / "data" / "model_error.csv"
BASES = ("held out", "cross-validated", "in sample")  # most independent first
CAPTURES_DATA = "captures, leave one out"  # the ``data`` of the figures measured on the shipped captures
COLUMNS = ("family", "hardware", "basis", "rows", "median_abs_err_pct", "worst_abs_err_pct", "data", "run_date")


class ModelErrorFileError(LoomError, ValueError):
    """``model_error.csv`` cannot be read; the message names the line and column."""


@dataclass(frozen=True, slots=True)
class FamilyError:
    """The model's absolute relative error on ``rows`` published timings of one family on one chip."""

    family: str
    hardware: str
    basis: str
    rows: int
    median_abs_err_pct: float
    worst_abs_err_pct: float
    data: str
    run_date: str

    def figure(self) -> str:
        """Median / worst |error|, e.g. ``4.3% / 35.8%``."""
        return f"{self.median_abs_err_pct:.1f}% / {self.worst_abs_err_pct:.1f}%"

    def floors(self, speedup: float) -> tuple[float, float]:
        """``speedup``'s floor (``speedup_floor``) at this family's median and at its worst error."""
        return speedup_floor(speedup, self.median_abs_err_pct), speedup_floor(speedup, self.worst_abs_err_pct)

    def source(self) -> str:
        """What the figure was measured on, e.g. ``held out, 35 rows, wormhole_n150``."""
        return f"{self.basis}, {self.rows} rows, {self.hardware}"


def family_of(kernel: str, shape: Mapping[str, int]) -> str:
    """The family whose timings speak for an op: the one the kernel's family names (``op_mapping``: e.g.
    ``matmul`` for ``gemm``, ``sdpa`` for prefill attention, ``sdpa_decode`` for one query row, which ttnn
    runs as its decode op), else the kernel's own name."""
    return error_family(kernel, shape)


def speedup_floor(speedup: float, error_pct: float) -> float:
    """``s (1 - e) / (1 + e)``: the least measured speed-up when both predictions are within ``e``."""
    e = error_pct / 100.0
    return 0.0 if e >= 1.0 else speedup * (1.0 - e) / (1.0 + e)


def _parse(text: str, source: str) -> tuple[FamilyError, ...]:
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise ModelErrorFileError(f"{source}: header must be {','.join(COLUMNS)}")
    out = []
    for line, cells in enumerate(reader, start=2):
        try:
            basis = cells["basis"]
            if basis not in BASES:
                raise ValueError(f"basis {basis!r} is not one of {', '.join(BASES)}")
            out.append(
                FamilyError(
                    cells["family"],
                    cells["hardware"],
                    basis,
                    int(cells["rows"]),
                    float(cells["median_abs_err_pct"]),
                    float(cells["worst_abs_err_pct"]),
                    cells["data"],
                    cells["run_date"],
                )
            )
        except (TypeError, ValueError) as e:
            raise ModelErrorFileError(f"{source} line {line}: {e}") from None
    return tuple(out)


@cache
def family_errors() -> tuple[FamilyError, ...]:
    """The shipped figures (module docstring)."""
    return _parse(MODEL_ERROR_FILE.read_text(encoding="utf-8"), str(MODEL_ERROR_FILE))


def _same_chip(figure: FamilyError, hardware: str) -> bool:
    """A figure of ``hardware`` itself, or of its architecture (the capture figures are per architecture)."""
    return figure.hardware == hardware or hardware.startswith(figure.hardware + "_")


def error_for(family: str, hardware: str, table: tuple[FamilyError, ...] | None = None) -> FamilyError | None:
    """The figure that speaks for ``family`` on ``hardware``: the same chip first, then the most independent
    basis; None when the family has never been scored."""
    rows = [f for f in (family_errors() if table is None else table) if f.family == family]
    if not rows:
        return None
    return min(rows, key=lambda f: (not _same_chip(f, hardware), BASES.index(f.basis)))


def error_for_op(
    kernel: str, shape: Mapping[str, int], hardware: str, table: tuple[FamilyError, ...] | None = None
) -> FamilyError | None:
    """The figure that speaks for an op: of its error family (``family_of``: e.g. the published matmul
    timings) and of its kernel family on real captures (``CAPTURES_DATA``), the larger median error (the
    published benchmarks' shapes are kinder than real models'); None when neither was ever scored."""
    figures = [
        f
        for f in (
            error_for(family_of(kernel, shape), hardware, table),
            error_for(_program_family(kernel), hardware, table),
        )
        if f is not None
    ]
    return max(figures, key=lambda f: f.median_abs_err_pct, default=None)


@cache
def _program_family(kernel: str) -> str:
    from loom_explorer.program import load_program
    from loom_explorer.program.structure import program_family

    try:
        return program_family(load_program(kernel)).name
    except (ValueError, FileNotFoundError):  # a user's kernel file the shipped figures cannot speak for
        return kernel


# ------------------------------------------------------------------------------ making the figures


def _figure(family: str, hardware: str, basis: str, errors: list[float | None], data: str, today: str) -> FamilyError:
    absolute = [abs(e) for e in errors if e is not None]
    return FamilyError(
        family,
        hardware,
        basis,
        len(absolute),
        round(statistics.median(absolute), 2),
        round(max(absolute), 2),
        data,
        today,
    )


def capture_family_errors(today: str) -> list[FamilyError]:
    """Each kernel family's error on the shipped captures per architecture, leave one capture out
    (``capture_cv``: the calibrated model, each capture's rows predicted from a fit on the others), for the
    families and architectures with at least ``capture_cv.MIN_FAMILY_ROWS`` rows."""
    from loom_explorer.accuracy.calibration_rows import all_capture_rows
    from loom_explorer.accuracy.capture_cv import MIN_FAMILY_ROWS, held_out

    rows = all_capture_rows()
    predicted = held_out(rows, "capture", methods=("model",))["model"]
    errors: dict[tuple[str, str], list[float | None]] = {}
    for r, p in zip(rows, predicted, strict=True):
        errors.setdefault((r.family, r.arch), []).append(100 * (p / r.measured_ns - 1))
    return [
        _figure(family, arch, "cross-validated", e, CAPTURES_DATA, today)
        for (family, arch), e in sorted(errors.items())
        if len(e) >= MIN_FAMILY_ROWS
    ]


def measure_family_errors(cross_validate: bool = True) -> list[FamilyError]:
    """Score the model on the published data (module docstring); a cross-validated figure refits the
    kernel's constants once per group of rows (the SDPA one: about a minute on 2 cores; the captures' about
    a minute), ``cross_validate=False`` leaves those figures out."""
    today = datetime.date.today().isoformat()
    published = [
        _figure(m.family, m.hardware, m.basis, list(m.errors), m.data, today)
        for kernel in published_kernels()
        for m in kernel.measure_errors(cross_validate)
    ]
    return published + (capture_family_errors(today) if cross_validate else [])


def family_errors_csv(figures: list[FamilyError]) -> str:
    """``figures`` as the text of ``model_error.csv``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for f in figures:
        writer.writerow(
            [f.family, f.hardware, f.basis, f.rows, f.median_abs_err_pct, f.worst_abs_err_pct, f.data, f.run_date]
        )
    return buffer.getvalue()


if __name__ == "__main__":
    sys.stdout.write(family_errors_csv(measure_family_errors()))
