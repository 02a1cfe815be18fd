"""Fit a hardware description's estimated constants to measured times: the fit of ``loom-explorer calibrate``,
whatever kernel's published measurements it fits (``published_runs``; the kernel's family says which
constants and how a row is predicted: ``published.PublishedKernel``).

The fit minimises a loss over every row of the chip's card (``fit_constants``; the families' is
``scoring.log_loss``, the mean squared log error ``mean(log(predicted/measured)^2)``: least squares on
relative error) by coordinate descent over a grid of values per constant (a coarse pass, then up to two fine
ones). Every evaluation re-predicts every row. A fitted value stays within what the hardware can do
(``PHYSICAL_LIMIT``), and a tile matmul's cycles never below the shipped (ideal) figures. How well the fit
predicts what it has not seen is measured by leaving groups of rows out (``cross_validation``).

The result is a new YAML: the original file, line for line, with each fitted value replaced and its
comment saying so (``calibrated_yaml``). The shipped files are never written. A file an earlier calibration
wrote is fitted again from the values it had before that fit (``start_values``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

from loom_explorer.accuracy.progress import Progress
from loom_explorer.accuracy.published_table import CARDS
from loom_explorer.errors import LoomError
from loom_explorer.hardware.load import resolve_hardware_path, shipped_hardware_dir
from loom_explorer.hardware.schema import Fidelity, HardwareSpec

MapFn = Callable[..., Iterable[Any]]
Loss = Callable[[list[Any], HardwareSpec, str], float]  # (rows, hardware, card) -> the loss of predicting them

# a fitted value may not pass what the hardware can do: one core reads through one NoC link, and a tile
# matmul takes at least the cycles the ideal figures give (the shipped values are those)
PHYSICAL_LIMIT = {"dram.core_read_bytes_per_cycle": lambda hw: float(hw.noc.link_bytes_per_cycle)}
AT_LEAST_SHIPPED = ("compute.matmul_tile_cycles.",)
SCALES = (0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0)
# then passes around the current best until one moves nothing
FINE_SCALES = (0.8, 0.9, 1.1, 1.2)
FINE_PASSES = 2


def _allowed(hw: HardwareSpec, path: str, value: float) -> bool:
    """Within the constant's physical limit, and a tile matmul never faster than its shipped (ideal) cycles."""
    if path in PHYSICAL_LIMIT and value > PHYSICAL_LIMIT[path](hw):
        return False
    shipped = shipped_value(hw, path)
    return not (path.startswith(AT_LEAST_SHIPPED) and shipped is not None and value < shipped)


class CalibrationError(LoomError, ValueError):
    """Calibration input the fit cannot use; the message names it."""


@dataclass(frozen=True, slots=True)
class Calibration:
    hardware: HardwareSpec
    values: dict[str, float]  # "section.key" -> fitted value
    shipped: dict[str, float]  # the values the fit started from
    given: dict[str, float]  # the values of the file as given
    rows: int  # the card's rows the fit used


def card_of(hw: HardwareSpec) -> str:
    for card, name in CARDS.items():
        if hw.name.split("@")[0] == name:
            return card
    raise CalibrationError(
        f"hardware {hw.name}: no measured card maps to it (cards: {', '.join(f'{c} -> {n}' for c, n in CARDS.items())})"
    )


def shipped_value(hw: HardwareSpec, path: str) -> float | None:
    """The constant at ``path`` in ``hw``; None for an optional one the file leaves out."""
    section, key, *entry = path.split(".")
    value = getattr(getattr(hw, section), key)
    if value is None:
        return None
    return float(value[_entry_key(value, entry[0])] if entry else value)


def _entry_key(table: dict[Any, Any], name: str) -> Any:
    """The key of a table's entry ``name``: a ``Fidelity`` in the per-fidelity tables, else the name."""
    return Fidelity(name) if any(isinstance(k, Fidelity) for k in table) else name


def with_constants(hw: HardwareSpec, values: dict[str, float]) -> HardwareSpec:
    """``hw`` with the constants at ``values``' paths replaced, as the YAML that ``calibrated_yaml`` writes holds
    them (integers rounded, others to 6 significant digits)."""
    sections: dict[str, dict[str, object]] = {}
    for path, value in values.items():
        section, key, *entry = path.split(".")
        current = getattr(getattr(hw, section), key)
        if entry:  # a table (per fidelity, per kernel): replace one entry, as the YAML will hold it
            table = sections.setdefault(section, {}).setdefault(key, dict(current))
            assert isinstance(table, dict), f"{section}.{key} is a table"
            name = _entry_key(table, entry[0])
            table[name] = round(value) if isinstance(table[name], int) else float(f"{value:g}")
        else:
            # as the YAML will hold it: integers rounded, other numbers to the 6 digits ``:g`` writes
            sections.setdefault(section, {})[key] = type(current)(
                round(value) if isinstance(current, int) else float(f"{value:g}")
            )
    return hw.model_copy(update={s: getattr(hw, s).model_copy(update=keys) for s, keys in sections.items()})


def shipped_constants(hw: HardwareSpec, constants: tuple[str, ...]) -> dict[str, float]:
    """The ``constants`` that ``hw`` gives, at their values."""
    return {path: value for path in constants if (value := shipped_value(hw, path)) is not None}


def chosen_constants(names: str | None, constants: tuple[str, ...]) -> tuple[str, ...]:
    """``--constants a,b``: the named ones of ``constants`` (the constants a kernel's calibration fits; all of
    them for None); an unknown name is refused."""
    if names is None:
        return constants
    chosen = tuple(n.strip() for n in names.split(",") if n.strip())
    unknown = [n for n in chosen if n not in constants]
    if unknown or not chosen:
        raise CalibrationError(
            f"--constants {names!r}: {', '.join(unknown) or 'no name'} is not a constant "
            f"calibrate fits ({', '.join(constants)})"
        )
    return chosen


def fit_constants(
    hw: HardwareSpec,
    train: list[Any],
    card: str,
    *,
    constants: tuple[str, ...],
    loss: Loss,
    map_fn: MapFn = map,
    progress: Progress | None = None,
) -> dict[str, float]:
    """The fitted value of each of ``constants`` that ``hw`` gives, on ``train`` (module docstring): any rows
    ``loss(train, hw, card)`` scores (a module-level function, so that ``map_fn`` may send it to worker
    processes).

    Coordinate descent from the shipped values: each constant in turn is tried at ``SCALES`` times its shipped
    value (within its physical limit), the others held at their current best, and the first trial of least
    loss that beats the current best is kept; then up to ``FINE_PASSES`` passes try ``FINE_SCALES`` times
    each constant's current best, stopping after a pass that moves nothing.
    ``map_fn`` costs the trials of one constant (``pool.map`` runs them in parallel: they do not depend on
    each other); ``progress`` counts the constants tried."""
    shipped = shipped_constants(hw, constants)
    best = dict(shipped)
    best_loss = loss(train, hw, card)
    passes = (SCALES, *[FINE_SCALES] * FINE_PASSES)
    if progress:
        progress.phase("fitting", len(passes) * len(shipped))
    done = 0
    for number, scales in enumerate(passes):
        moved = False
        for path, value in shipped.items():
            if progress:
                progress.update(done)
            done += 1
            around = value if number == 0 else best[path]  # coarse around the start, fine around the best
            trials = [{**best, path: around * scale} for scale in scales if _allowed(hw, path, around * scale)]
            losses = list(map_fn(loss, repeat(train), [with_constants(hw, t) for t in trials], repeat(card)))
            for trial, trial_loss in zip(trials, losses, strict=True):
                if trial_loss < best_loss - 1e-12:
                    best, best_loss, moved = trial, trial_loss, True
        if number > 0 and not moved:
            break
    if progress:
        progress.update(len(passes) * len(shipped))
    return best


CALIBRATED_NOTE = re.compile(r"(\w+) calibrated \(was ([-+\d.eE]+)\) on \d+ rows of [^;#]*;\s*")


def calibration_notes(source: str | Path, constants: tuple[str, ...]) -> dict[str, float]:
    """The ``constants`` an earlier ``calibrate`` wrote into the hardware file at ``source``, each at the value
    it had before that fit (the ``KEY calibrated (was V) on N rows of FILE;`` notes of its comments)."""
    text = Path(resolve_hardware_path(str(source))).read_text()
    values: dict[str, float] = {}
    for path in constants:
        section, key, *entry = path.split(".")
        for line in re.findall(rf"^\s+{key}:.*$", text, re.MULTILINE):
            for word, was in CALIBRATED_NOTE.findall(line):
                if word == (entry[0] if entry else key):
                    values[path] = float(was)
    return values


def start_values(hw: HardwareSpec, source: str | Path, constants: tuple[str, ...]) -> HardwareSpec:
    """``hw`` (read from ``source``) with each constant that an earlier ``calibrate`` wrote back at the value
    it had before that fit (``calibration_notes``). Fits start there, so a cross-validated fit never starts
    from values fitted on the shape it leaves out, and refitting a calibrated file on the same rows gives
    the same file."""
    return with_constants(hw, calibration_notes(source, constants))


def calibrated_yaml(source: str | Path, calibration: Calibration, data: str) -> str:
    """The hardware file at ``source`` with the fitted values written into their lines."""
    text = Path(resolve_hardware_path(str(source))).read_text()
    for path, value in calibration.values.items():
        if written_value(calibration, path) == calibration.given[path]:
            continue  # unchanged: the line keeps its source
        section, key, *entry = path.split(".")
        pattern = re.compile(rf"^(\s+{key}:\s*)([^#\n]+?)(\s*#.*)?$", re.MULTILINE)
        hits = pattern.findall(text)
        if len(hits) != 1:
            raise CalibrationError(f"{source}: expected one line for {key}, found {len(hits)}")
        shipped = calibration.shipped[path]
        current = getattr(getattr(calibration.hardware, section), key)
        exact = current[_entry_key(current, entry[0])] if entry else current
        number = str(round(value)) if isinstance(exact, int) else f"{value:g}"
        word = entry[0] if entry else key
        # back at the value the fit started from, the line needs no note
        note = (
            ""
            if written_back(calibration, path)
            else f"{word} calibrated (was {shipped:g}) on {calibration.rows} rows of {data}; "
        )

        def replace(
            m: re.Match[str],
            number: str = number,
            note: str = note,
            entry: list[str] = entry,
            key: str = key,
            word: str = word,
        ) -> str:
            old = m.group(2)
            if entry and not re.search(rf"\b{entry[0]}:\s*[\d.]+", old):
                raise CalibrationError(f"{source}: no entry {entry[0]} in the {key} line")
            new = re.sub(rf"\b({entry[0]}:\s*)[\d.]+", rf"\g<1>{number}", old) if entry else number
            comment = (m.group(3) or "").strip().lstrip("#").strip()
            # an earlier note on the same constant is replaced, not stacked
            comment = CALIBRATED_NOTE.sub(lambda n: "" if n.group(1) == word else n.group(0), comment)
            return f"{m.group(1)}{new}  # {note}{comment}"

        text = pattern.sub(replace, text)
    return text


def written_back(calibration: Calibration, path: str) -> bool:
    """The fitted value is the value the fit started from: the line needs no note."""
    return written_value(calibration, path) == calibration.shipped[path]


def written_value(calibration: Calibration, path: str) -> float:
    """The value as the YAML holds it (integer constants and per-fidelity entries rounded)."""
    value = shipped_value(calibration.hardware, path)
    assert value is not None, path  # only constants the file gives are fitted
    return value


def is_shipped(path: str | Path) -> bool:
    return Path(path).resolve().parent == shipped_hardware_dir().resolve()
