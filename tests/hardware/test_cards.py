"""The hardware files' ``arch`` (an :class:`Arch`) and ``card`` sections, and the card lists the accuracy
tools derive from them (``hardware/cards.py``): the lists are what they were when they were written by hand,
a bad architecture is refused naming the field and the allowed values, and the card section is not part of
the hardware hash."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from loom_explorer.accuracy.capture_chip import ARCH_CARDS, SINGLE_CHIP_ONLY
from loom_explorer.accuracy.published_table import CARDS
from loom_explorer.hardware import HardwareError, load_hardware
from loom_explorer.hardware.load import shipped_hardware_dir
from loom_explorer.hardware.schema import Arch
from loom_explorer.hashing import hardware_sha256


def test_card_lists_come_from_the_hardware_files() -> None:
    assert ARCH_CARDS == {
        "wormhole": ("wormhole_n150", "wormhole_n300"),
        "blackhole": ("blackhole_p150a", "blackhole_p100a"),
    }
    assert list(ARCH_CARDS) == ["wormhole", "blackhole"]
    assert frozenset({"blackhole_p100a"}) == SINGLE_CHIP_ONLY
    assert list(CARDS.items()) == [("n150", "wormhole_n150"), ("p150", "blackhole_p150a")]


def test_arch_is_an_enumeration_spelled_as_before() -> None:
    assert load_hardware("wormhole_n150").arch is Arch.wormhole
    assert load_hardware("blackhole_p100a").arch is Arch.blackhole
    assert load_hardware("wormhole_n300").model_dump(mode="json")["arch"] == "wormhole_b0"


def test_an_unknown_arch_is_refused_naming_the_field_and_the_values(tmp_path: Path) -> None:
    text = (shipped_hardware_dir() / "wormhole_n150.yaml").read_text()
    bad = tmp_path / "chip.yaml"
    bad.write_text(text.replace("\narch: wormhole_b0\n", "\narch: grayskull\n"))
    with pytest.raises(HardwareError, match=r"field arch: .*'wormhole_b0' or 'blackhole'"):
        load_hardware(bad)


def test_the_card_section_is_optional_and_outside_the_hash(tmp_path: Path) -> None:
    shipped = load_hardware("wormhole_n150")
    text = (shipped_hardware_dir() / "wormhole_n150.yaml").read_text()
    start = text.index("\ncard:")
    end = text.index("\nclock_ghz:")
    bare = tmp_path / "n150_no_card.yaml"
    bare.write_text(text[:start] + text[end:])
    hw = load_hardware(bare)
    assert hw.card is None and shipped.card is not None
    assert hardware_sha256(hw) == hardware_sha256(shipped)
    # the hash is the one of the contents without the card section, as before the section existed
    assert hardware_sha256(shipped) == hashlib.sha256(hw.model_dump_json(exclude={"card"}).encode()).hexdigest()
