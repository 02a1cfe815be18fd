"""Screenshots stay out of the repository unless ``$LOOM_SCREENSHOTS`` asks for a folder (docs/explorer.md,
"Refreshing the screenshots")."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_screenshots_go_to_a_temporary_folder_unless_asked(screenshots: Path) -> None:
    chosen = os.environ.get("LOOM_SCREENSHOTS")
    if chosen:
        assert screenshots == Path(chosen)
    else:
        assert screenshots.resolve() != ROOT and ROOT not in screenshots.resolve().parents
    assert screenshots.is_dir()
