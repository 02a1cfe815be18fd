"""One served explorer and one headless Chromium for the browser tests of this folder (marked ``browser``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from explorer_page import ExplorerPage, served_browser

from loom_explorer.ui.app import RunningServer

DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[RunningServer, object]]:
    with served_browser() as pair:
        yield pair


@pytest.fixture()
def explorer(served: tuple[RunningServer, object]) -> Iterator[tuple[ExplorerPage, str]]:
    server, browser = served
    page = browser.new_page(viewport={"width": 1500, "height": 1900})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield ExplorerPage(page), server.url
        assert not errors, f"JavaScript errors on the page: {errors}"
    finally:
        page.close()
