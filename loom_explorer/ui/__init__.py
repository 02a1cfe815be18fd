"""The explorer: state (``state.py``, no widgets) and its Panel views; the only package that imports panel.

``from loom_explorer.ui import Explorer`` (imported lazily, so the state and scene modules load without
building any widget).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loom_explorer.ui.explorer import Explorer

__all__ = ["Explorer"]


def __getattr__(name: str) -> object:
    if name == "Explorer":
        from loom_explorer.ui.explorer import Explorer

        return Explorer
    raise AttributeError(name)
