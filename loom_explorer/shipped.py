"""Where the data shipped with the package lives: ``hw/`` and ``kernels/``.

A wheel carries them as ``loom_explorer/data/{hw,kernels}`` (see pyproject's force-include); an editable
install or a checkout reads the top-level folders.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def shipped_dir(name: str) -> Path:
    packaged = Path(str(resources.files("loom_explorer"))) / "data" / name
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[1] / name
