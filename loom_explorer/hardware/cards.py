"""The card lists of the shipped hardware files, read from their ``card`` sections (``schema.CardSpec``).

* ``arch_cards()``: per architecture family (``Arch`` member name: ``wormhole``, ``blackhole``, in the enum's
  order), the names of its shipped chips that sit on a known card: the reference card first, then the
  variants in name order. ``{"wormhole": ("wormhole_n150", "wormhole_n300"), "blackhole": ("blackhole_p150a",
  "blackhole_p100a")}`` for the shipped files.
* ``single_chip_only()``: the shipped chips whose card has no chip-to-chip links (``{"blackhole_p100a"}``).
* ``reference_cards()``: card name -> shipped chip of each architecture's reference card, in the enum's
  order (``{"n150": "wormhole_n150", "p150": "blackhole_p150a"}``): the cards the published measurements
  name.

A shipped file without a ``card`` section is on no list. Each list is read once per process.
"""

from __future__ import annotations

from functools import cache

from loom_explorer.hardware.load import list_hardware, load_hardware
from loom_explorer.hardware.schema import Arch, HardwareSpec


@cache
def _carded() -> tuple[HardwareSpec, ...]:
    """The shipped chips with a card section, in name order."""
    return tuple(hw for hw in (load_hardware(name) for name in list_hardware()) if hw.card is not None)


@cache
def arch_cards() -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for arch in Arch:
        chips = [hw for hw in _carded() if hw.arch is arch]
        ordered = sorted(chips, key=lambda hw: (not (hw.card is not None and hw.card.reference), hw.name))
        if ordered:
            out[arch.name] = tuple(hw.name for hw in ordered)
    return out


@cache
def single_chip_only() -> frozenset[str]:
    return frozenset(hw.name for hw in _carded() if hw.card is not None and not hw.card.multi_chip)


@cache
def reference_cards() -> dict[str, str]:
    out: dict[str, str] = {}
    for arch in Arch:
        for hw in _carded():
            if hw.arch is arch and hw.card is not None and hw.card.reference:
                out[hw.card.name] = hw.name
    return out
