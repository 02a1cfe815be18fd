"""Third-party distributions installed for a test: a ``dist-info`` folder with entry points (and a module)
in the folder of the ``site`` fixture (``conftest.py``), read by the plug-in registry afresh
(``loom_explorer/plugins.py``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from loom_explorer import plugins


def forget() -> None:
    """Read the plug-in groups afresh."""
    plugins._loaded.cache_clear()
    plugins._entry_points.cache_clear()


def install(site: Path, name: str, entry_points: str, module: str = "") -> None:
    """A distribution ``name`` in ``site``: its metadata, its entry points and (optionally) a module
    ``<name>_mod.py``."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    if module:
        (site / f"{name}_mod.py").write_text(textwrap.dedent(module))
    forget()
