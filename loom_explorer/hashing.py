"""SHA-256 digests that identify what a result was computed from, as 64 lowercase hex digits.

* ``hardware_sha256(hw)``: of a hardware description's validated contents (``HardwareSpec.model_dump_json()``)
  but its ``card`` section, so two YAML files that differ only in comments, order or spelling of defaults
  hash the same, and a changed constant (a calibrated cost, a grid) changes it. The card section (the board's
  name, its Ethernet, whether it is its architecture's reference card) only sorts the shipped chips into the
  accuracy tools' card lists: no prediction depends on it, and leaving it out keeps the hash of every chip
  what it was before the section existed, so stored results and schedule files still name their chip.
  Schedule documents record it (``export/schedule_json.py``), and so do the results store's measurements
  and sweep results, whose sweep key starts with it (``sweep/task.py``).
* ``file_sha256(path)``: of a file's bytes (a kernel's source, ``export/schedule_json.py: kernel_sha256``).

This module reads the hardware schema's type only, so every layer from ``hardware`` up may import it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loom_explorer.hardware.schema import HardwareSpec


def hardware_sha256(hw: HardwareSpec) -> str:
    """The SHA-256 of ``hw``'s validated contents (its pydantic JSON dump) without its ``card`` section."""
    return hashlib.sha256(hw.model_dump_json(exclude={"card"}).encode()).hexdigest()


def file_sha256(path: Path) -> str:
    """The SHA-256 of the bytes of the file at ``path``."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
