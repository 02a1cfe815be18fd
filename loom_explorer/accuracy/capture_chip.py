"""Which chip and which worker grid a device-profiler capture ran on, told from the capture itself.

An ``ops_perf_results`` CSV names the architecture (``DEVICE ARCH``: ``wormhole_b0``, ``blackhole``), the
worker cores the run had (``AVAILABLE WORKER CORE COUNT``, the same on every row of one run), the devices
(``DEVICE ID``) and, in program configs, the grids ops were given (``compute_with_storage_grid_size``). From
those:

* the card is the shipped hardware file of that architecture whose compute grid has exactly the available
  worker count (Blackhole: 110 = the 11x10 grid of a 120-core part; 130 = the p150a's 13x10), leaving out
  the p100a when the capture has more than one device (the p100a has no Ethernet ports, so it is never
  part of a multi-chip system: docs.tenstorrent.com p100a specifications); failing that the architecture's
  reference card (``wormhole_n150``, ``blackhole_p150a``). The cards, which is each architecture's
  reference and which have no Ethernet come from the shipped hardware files' ``card`` sections
  (``hardware/cards.py``);
* the grid is the available worker count laid out as a config of the capture gives it (the largest
  ``compute_with_storage_grid_size`` with that many cores), else over the card's rows when they divide it,
  else the card's whole grid. A grid smaller than the card's restricts the prediction to it.

A p150 on firmware >= 19.5.0 also exposes 110 workers (11x10), as the p100a does: a single-device 110-core
capture is told as ``blackhole_p100a`` and the note says so (``--hw blackhole_p150a`` to predict otherwise).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.cards import arch_cards, single_chip_only

# from the shipped hardware files' card sections (hardware/cards.py): each architecture's chips, its reference
# card first; the cards without chip-to-chip links (never in a multi-device capture)
ARCH_CARDS = arch_cards()
SINGLE_CHIP_ONLY = single_chip_only()


@dataclass(frozen=True, slots=True)
class CaptureRun:
    """What a capture says of the machine: architectures, available worker counts, devices, config grids."""

    archs: frozenset[str]
    available_cores: frozenset[int]
    devices: frozenset[int]
    config_grids: frozenset[tuple[int, int]]


@dataclass(frozen=True, slots=True)
class CaptureChip:
    """The shipped hardware a capture is predicted on, the worker grid of the run, and how they were told."""

    hardware: str
    grid: tuple[int, int]
    reason: str


def arch_family(device_arch: str) -> str:
    """``wormhole_b0`` -> ``wormhole``; ``Blackhole`` -> ``blackhole``."""
    return device_arch.strip().lower().split("_")[0]


def tell_chip(run: CaptureRun) -> CaptureChip | None:
    """The chip and grid of ``run`` (module docstring); None when it names no single known architecture."""
    archs = {arch_family(a) for a in run.archs}
    if len(archs) != 1 or next(iter(archs)) not in ARCH_CARDS:
        return None
    arch = archs.pop()
    multi = len(run.devices) > 1
    cards = [c for c in ARCH_CARDS[arch] if not (multi and c in SINGLE_CHIP_ONLY)]
    workers = max(run.available_cores) if run.available_cores else None
    specs = {c: load_hardware(c) for c in cards}
    exact = [c for c in cards if workers == specs[c].grid.columns * specs[c].grid.rows]
    card = exact[0] if exact else cards[0]
    spec = specs[card]
    grid = (spec.grid.columns, spec.grid.rows)
    if workers is not None and not exact:
        grid = _grid_of(workers, run.config_grids, spec.grid.columns, spec.grid.rows)
    devices = f"{len(run.devices)} devices" if multi else "one device"
    told = (
        f"{arch}, {workers} available worker cores, {devices}"
        if workers is not None
        else f"{arch}, {devices}; no AVAILABLE WORKER CORE COUNT column: the card's whole grid"
    )
    note = ""
    if card in SINGLE_CHIP_ONLY:
        note = "; a p150 on firmware >= 19.5.0 shows the same 11x10 grid (--hw blackhole_p150a if it was one)"
    return CaptureChip(card, grid, f"{card}, {grid[0]}x{grid[1]} grid (told from the capture: {told}){note}")


def _grid_of(workers: int, config_grids: Iterable[tuple[int, int]], columns: int, rows: int) -> tuple[int, int]:
    fits = [g for g in config_grids if g[0] * g[1] == workers and g[0] <= columns and g[1] <= rows]
    if fits:
        return max(fits)
    if workers % rows == 0 and workers // rows <= columns:
        return workers // rows, rows
    return columns, rows
