"""Fit the hardware description's estimated constants to measured matmul times: ``loom-explorer calibrate``.

The constants fitted are the estimates of the YAML files that matmuls exercise (their comments name
``loom_explorer/data/published/gemm_flops_calibration.csv``): per-op launch, Dst sub-block overhead, tile
pack, the multicast handshake; one core's DRAM read bandwidth; and the achieved cycles of a tile matmul per
fidelity (LoFi, HiFi2, HiFi4), which the shipped files give at their ideal (tech report) values and the fit
may only raise. The fit minimises the mean squared log error ``mean(log(predicted/measured)^2)`` (least
squares on relative error) over the training rows of the chip's card (``gemm_data.held_out`` keeps a
third of the shapes out), by coordinate descent over a grid of values per constant (two passes). Every
evaluation re-predicts every training row with the exact config it ran.

The result is a new YAML: the original file, line for line, with each fitted value replaced and its
comment saying so. The shipped files are never written.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path

from loom_explorer.accuracy.gemm_data import (
    CARDS,
    Case,
    Summary,
    predict_cases,
    summarise,
)
from loom_explorer.accuracy.progress import Progress
from loom_explorer.errors import LoomError
from loom_explorer.hardware.load import resolve_hardware_path, shipped_hardware_dir
from loom_explorer.hardware.schema import Fidelity, HardwareSpec

# "section.key" or "section.key.entry" (an entry of a per-fidelity table); each is tried at SCALES times
# its shipped value
CONSTANTS: tuple[str, ...] = (
    "compute.kernel_launch_cycles",
    "compute.subblock_overhead_cycles",
    "compute.tile_pack_cycles",
    "noc.multicast_handshake_cycles",
    "dram.core_read_bytes_per_cycle",
    "compute.matmul_tile_cycles.lofi",
    "compute.matmul_tile_cycles.hifi2",
    "compute.matmul_tile_cycles.hifi4",
    "compute.unpack_bytes_per_cycle",  # only where the hardware file gives one
)
# a fitted value may not pass what the hardware can do: one core reads through one NoC link, and a tile
# matmul takes at least the cycles the ideal figures give (the shipped values are those)
PHYSICAL_LIMIT = {"dram.core_read_bytes_per_cycle": lambda hw: float(hw.noc.link_bytes_per_cycle)}
AT_LEAST_SHIPPED = ("compute.matmul_tile_cycles.",)
SCALES = (0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0)


class CalibrationError(LoomError, ValueError):
    """Calibration input the fit cannot use; the message names it."""


@dataclass(frozen=True, slots=True)
class Calibration:
    hardware: HardwareSpec
    values: dict[str, float]  # "section.key" -> fitted value
    shipped: dict[str, float]
    train_rows: int
    before: Summary  # held-out rows, shipped constants
    after: Summary  # held-out rows, fitted constants
    train_before: Summary
    train_after: Summary


def card_of(hw: HardwareSpec) -> str:
    for card, name in CARDS.items():
        if hw.name.split("@")[0] == name:
            return card
    raise CalibrationError(f"hardware {hw.name}: no measured card maps to it (cards: "
                           f"{', '.join(f'{c} -> {n}' for c, n in CARDS.items())})")


def shipped_value(hw: HardwareSpec, path: str) -> float | None:
    """The constant at ``path`` in ``hw``; None for an optional one the file leaves out."""
    section, key, *entry = path.split(".")
    value = getattr(getattr(hw, section), key)
    if value is None:
        return None
    return float(value[Fidelity(entry[0])] if entry else value)


def with_constants(hw: HardwareSpec, values: dict[str, float]) -> HardwareSpec:
    """``hw`` with the constants at ``values``' paths replaced (integers rounded)."""
    sections: dict[str, dict[str, object]] = {}
    for path, value in values.items():
        section, key, *entry = path.split(".")
        current = getattr(getattr(hw, section), key)
        if entry:  # a per-fidelity table: replace one entry
            table = sections.setdefault(section, {}).setdefault(key, dict(current))
            assert isinstance(table, dict), f"{section}.{key} is a per-fidelity table"
            table[Fidelity(entry[0])] = round(value)
        else:
            sections.setdefault(section, {})[key] = type(current)(round(value) if isinstance(current, int) else value)
    return hw.model_copy(update={s: getattr(hw, s).model_copy(update=keys) for s, keys in sections.items()})


def _loss(cases: list[Case], hw: HardwareSpec, card: str) -> tuple[float, Summary]:
    report = predict_cases(cases, {card: hw})
    pairs = [(r.predicted_ns, r.measured_ns) for r in report.rows if r.predicted_ns]
    if not pairs:
        return math.inf, summarise([])
    illegal = len(report.rows) - len(pairs)
    return sum(math.log(p / m) ** 2 for p, m in pairs) / len(pairs) + illegal, summarise(pairs)


def _trial_loss(train: list[Case], hw: HardwareSpec, card: str) -> float:
    return _loss(train, hw, card)[0]


def calibrate(hw: HardwareSpec, cases: list[Case], processes: int | None = None,
              progress: Progress | None = None) -> Calibration:
    """Fit ``CONSTANTS`` of ``hw`` on its card's training rows (module docstring).

    The trial values of one constant are costed in parallel (``processes``, default one per CPU core):
    each is the current best with only that constant changed, so they do not depend on each other, and
    the one kept is the first of least loss that beats the current best, as a sequential pass keeps.
    ``progress`` counts the constants tried (two passes)."""
    card = card_of(hw)
    mine = [c for c in cases if c.card == card]
    train = [c for c in mine if not c.held_out]
    test = [c for c in mine if c.held_out]
    if len(train) < 5 or not test:
        raise CalibrationError(f"only {len(train)} training and {len(test)} held-out rows for card {card}")
    shipped = {path: value for path in CONSTANTS if (value := shipped_value(hw, path)) is not None}
    best = dict(shipped)
    best_loss, train_before = _loss(train, hw, card)
    workers = processes or os.cpu_count() or 1
    if progress:
        progress.phase("fitting", 2 * len(shipped))
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for done, (path, value) in enumerate([*shipped.items()] * 2):
            if progress:
                progress.update(done)
            trials = [{**best, path: value * scale} for scale in SCALES
                      if not (path in PHYSICAL_LIMIT and value * scale > PHYSICAL_LIMIT[path](hw))
                      and not (path.startswith(AT_LEAST_SHIPPED) and scale < 1)]
            losses = list(pool.map(_trial_loss, repeat(train), (with_constants(hw, t) for t in trials),
                                   repeat(card)))
            for trial, loss in zip(trials, losses, strict=True):
                if loss < best_loss - 1e-12:
                    best, best_loss = trial, loss
        if progress:
            progress.update(2 * len(shipped))
    fitted = with_constants(hw, best)
    return Calibration(
        hardware=fitted, values=best, shipped=shipped, train_rows=len(train),
        before=_loss(test, hw, card)[1], after=_loss(test, fitted, card)[1],
        train_before=train_before, train_after=_loss(train, fitted, card)[1])


def calibrated_yaml(source: str | Path, calibration: Calibration, data: str) -> str:
    """The hardware file at ``source`` with the fitted values written into their lines."""
    text = Path(resolve_hardware_path(str(source))).read_text()
    for path, value in calibration.values.items():
        if written_value(calibration, path) == calibration.shipped[path]:
            continue  # unchanged: the line keeps its source
        section, key, *entry = path.split(".")
        pattern = re.compile(rf"^(\s+{key}:\s*)([^#\n]+?)(\s*#.*)?$", re.MULTILINE)
        hits = pattern.findall(text)
        if len(hits) != 1:
            raise CalibrationError(f"{source}: expected one line for {key}, found {len(hits)}")
        shipped = calibration.shipped[path]
        current = getattr(getattr(calibration.hardware, section), key)
        number = str(round(value)) if entry or isinstance(current, int) else f"{value:g}"
        note = f"{entry[0] if entry else key} calibrated (was {shipped:g}) on {calibration.train_rows} rows of {data}"

        def replace(m: re.Match[str], number: str = number, note: str = note, entry: list[str] = entry,
                    key: str = key) -> str:
            old = m.group(2)
            if entry and not re.search(rf"\b{entry[0]}:\s*[\d.]+", old):
                raise CalibrationError(f"{source}: no entry {entry[0]} in the {key} line")
            new = re.sub(rf"\b({entry[0]}:\s*)[\d.]+", rf"\g<1>{number}", old) if entry else number
            return f"{m.group(1)}{new}  # {note}; {(m.group(3) or '').strip().lstrip('#').strip()}"

        text = pattern.sub(replace, text)
    return text


def written_value(calibration: Calibration, path: str) -> float:
    """The value as the YAML holds it (integer constants and per-fidelity entries rounded)."""
    value = shipped_value(calibration.hardware, path)
    assert value is not None, path  # only constants the file gives are fitted
    return value


def is_shipped(path: str | Path) -> bool:
    return Path(path).resolve().parent == shipped_hardware_dir().resolve()
