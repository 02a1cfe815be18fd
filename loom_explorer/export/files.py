"""Write an output file whole or not at all, and never over an existing file unless asked to."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


class OutputError(ValueError):
    """An output file that exists (without ``force``) or whose folder is missing."""


def write_new(path: str | Path, text: str, force: bool = False) -> Path:
    """Write ``text`` to ``path`` atomically (a temporary file in the same folder, then a rename)."""
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"{target} is a folder; give a file name")
    if target.exists() and not force:
        raise OutputError(f"{target} exists; pass --force to overwrite it")
    if not target.parent.is_dir():
        raise OutputError(f"folder {target.parent} of {target} does not exist")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
