"""One served explorer and one headless Chromium for the browser tests of this folder (marked ``browser``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from page_driver import ExplorerPage, served_browser

from loom_explorer.ui.app import RunningServer

# Screenshots go to a temporary folder; LOOM_SCREENSHOTS=docs/images refreshes the docs' pictures on purpose
# (tests never write into the tree by themselves).
SCREENSHOTS_ENV = "LOOM_SCREENSHOTS"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the page tests save their screenshots (``$LOOM_SCREENSHOTS``, else a temporary folder)."""
    chosen = os.environ.get(SCREENSHOTS_ENV)
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[RunningServer, object]]:
    with served_browser() as pair:
        yield pair


@pytest.fixture()
def explorer(
    served: tuple[RunningServer, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[ExplorerPage, str]]:
    """A new page of the served explorer; the server (in this process) solves into a results store of this
    test's own, so no test's page is answered from another's proofs."""
    monkeypatch.setenv("LOOM_EXPLORER_STORE", str(tmp_path / "results.sqlite"))
    server, browser = served
    page = browser.new_page(viewport={"width": 1500, "height": 1900})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield ExplorerPage(page), server.url
        assert not errors, f"JavaScript errors on the page: {errors}"
    finally:
        page.close()
