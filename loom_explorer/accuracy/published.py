"""What a kernel family supplies when its kernel has published measurements (``loom_explorer/data/published``):
the :class:`PublishedKernel` its ``AccuracyOps`` carries (``op_mapping.py``, ``published``), which
``loom-explorer accuracy --kernel K`` and ``calibrate --kernel K`` run (``published_runs.py``) and
``family_error.measure_family_errors`` scores.

The object names its kernel (``--kernel``'s choice; the one marked ``default`` is the flag's default), says
which measurement file ``--data`` defaults to (or that it must be given), which flags beyond the ones every
kernel takes (``--data``, ``--hw``, ``--json``, ``--skip-bad-rows``, ``--cross-validate``) it reads, and which
hardware constants its calibration fits; and it gives the runs:

* ``accuracy``: the kernel's rows read, predicted and scored (:class:`AccuracyRun`, its flags checked);
* ``calibrate``: the constants fitted on its rows and the hardware file written (:class:`CalibrateRun`);
* ``measure_errors``: the signed errors of its rows that ``model_error.csv`` summarises, one
  :class:`MeasuredErrors` per figure.

A run says what it finds through a :class:`Console` (the command line's output and status lines), in the
order it finds it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from loom_explorer.accuracy.csv_input import RowIssue
from loom_explorer.hardware.schema import HardwareSpec


class Console(Protocol):
    """Where a run's report goes."""

    def out(self, text: str) -> None:
        """A line (or lines) of the command's output."""

    def say(self, text: str) -> None:
        """A status line (what was recorded)."""

    def say_rows(self, title: str, issues: Sequence[RowIssue]) -> None:
        """``title`` and the grouped reasons of rows left out or not scored."""


@dataclass(frozen=True, slots=True)
class AccuracyRun:
    """``accuracy --kernel K`` with its flags checked (``published_runs.run_accuracy``)."""

    data: str  # the measurement file
    configs: str | None  # --configs
    hardware: Mapping[str, HardwareSpec]  # card -> the hardware --hw CARD=FILE gives (other cards: shipped)
    hardware_files: Mapping[str, str]  # card -> the file its rows are predicted with (--hw's, else shipped)
    skip_bad_rows: bool
    cross_validate: bool
    constants: tuple[str, ...] | None  # --constants, of the kernel's; None: the ones the files note fitted
    record: bool
    store: str | None
    json: bool


@dataclass(frozen=True, slots=True)
class CalibrateRun:
    """``calibrate --kernel K`` with its flags checked (``published_runs.run_calibrate``): the output is
    neither a shipped file nor, without ``force``, an existing one."""

    hw: str  # the hardware file to start from (name or path)
    data: str  # the measurement file
    configs: str | None
    output: str
    force: bool
    skip_bad_rows: bool
    cross_validate: bool
    constants: tuple[str, ...]  # the constants to fit, of the kernel's


@dataclass(frozen=True, slots=True)
class MeasuredErrors:
    """The signed errors (%; None: a row the model finds illegal) behind one figure of ``model_error.csv``."""

    family: str  # the family of the error table (``AccuracyOps.error_family``)
    hardware: str
    basis: str  # held out, cross-validated or in sample (``family_error.BASES``)
    errors: tuple[float | None, ...]
    data: str  # the file the rows are from


@dataclass(frozen=True, slots=True)
class PublishedKernel:
    """A family's published measurements of its kernel (module docstring)."""

    kernel: str  # the shipped kernel the rows time: ``--kernel``'s choice
    title: str  # what the flags only it takes are called in a refusal, e.g. "GEMM" ("GEMM options")
    ops: str  # its ops in a sentence, e.g. "matmul" (``captures_table``)
    constants: tuple[str, ...]  # the hardware constants its calibration fits (``--constants``' choices)
    kernel_help: str  # its part of ``accuracy --kernel``'s help, e.g. "gemm (default)"
    calibrate_help: str  # its part of ``calibrate --kernel``'s help
    data_help: str  # its part of ``--data``'s help: its file's format, and whether one is shipped
    accuracy: Callable[[AccuracyRun, Console], None]
    calibrate: Callable[[CalibrateRun, Console], None]
    measure_errors: Callable[[bool], list[MeasuredErrors]]  # (cross-validate too) -> its figures
    options: frozenset[str] = frozenset()  # the flags it takes beyond every kernel's, e.g. "--configs"
    shipped_data: str | None = None  # the file of ``loom_explorer/data/published`` --data defaults to
    example_data: str = ""  # a file of ``loom_explorer/data/published`` to name when --data must be given
    default: bool = False  # ``--kernel``'s default
