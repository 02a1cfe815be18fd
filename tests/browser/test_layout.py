"""The served explorer's layout at the narrowest and widest screens it is built for (1280 and 1920 px): every
visible control lies inside the viewport (tables scroll inside their own frame, controls wrap), no table cell
shows NaN or None, the status line stays in the controls' column, and the selected candidate's row is in view
and highlighted after a pin sends it down the ranking. Also: the symbolic latency has no error marks, and the
Measure panel says there is nothing measured rather than drawing an empty chart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from page_driver import ExplorerPage

from loom_explorer.ui.app import RunningServer

SHAPE = "?shape=M=1024,K=1024,N=1024"
# pinning grid_x to 1 makes the best candidate (rank 1 of 20) one of the slowest: off the table's first page
DEMOTING_PIN = ("grid_x", 1, 8)  # name, value, size of its value list
CONTROLS = "button, select, input, textarea, .tabulator"


@pytest.fixture(params=[1280, 1920], ids=lambda w: f"{w}px")
def wide_page(
    request: pytest.FixtureRequest,
    served: tuple[RunningServer, object],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[ExplorerPage, int]]:
    monkeypatch.setenv("LOOM_EXPLORER_STORE", str(tmp_path / "results.sqlite"))
    server, browser = served
    width = int(request.param)
    page = browser.new_page(viewport={"width": width, "height": 1000})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        driver = ExplorerPage(page)
        driver.open(server.url + SHAPE)
        yield driver, width
        assert not errors, f"JavaScript errors on the page: {errors}"
    finally:
        page.close()


def beyond_the_viewport(page: ExplorerPage, width: int) -> list[str]:
    """Every visible control whose right edge is past the viewport's (CSS selectors pierce shadow roots)."""
    out = []
    for element in page.page.locator(CONTROLS).all():
        box = element.bounding_box() if element.is_visible() else None
        if box and box["width"] > 0 and box["x"] + box["width"] > width + 1:
            label = element.evaluate("e => e.className || e.tagName")
            out.append(f"{label} ends at {box['x'] + box['width']:.0f} px")
    return out


def cells(page: ExplorerPage) -> list[str]:
    return [t.strip() for t in page.page.locator(".tabulator-cell").all_inner_texts()]


def selected_row_in_view(page: ExplorerPage) -> bool:
    rows = page.page.locator(".candidates .tabulator-row.tabulator-selected")
    if rows.count() != 1 or not rows.first.is_visible():
        return False
    row, table = rows.first.bounding_box(), page.page.locator(".candidates .tabulator-tableholder").bounding_box()
    return bool(row and table and table["y"] <= row["y"] and row["y"] + row["height"] <= table["y"] + table["height"])


def test_the_layout_holds_and_the_selected_row_stays_in_view(wide_page: tuple[ExplorerPage, int]) -> None:
    page, width = wide_page
    assert beyond_the_viewport(page, width) == []
    shown = cells(page)
    assert shown and not {"NaN", "nan", "None"} & set(shown)
    status, table = page.page.locator(".status").bounding_box(), page.page.locator(".candidates").bounding_box()
    assert status and table and status["x"] + status["width"] <= table["x"]  # never drawn over the table side
    # the table draws its selection after the status line says solved
    page.wait_until(lambda: selected_row_in_view(page), "the selected candidate's row to be in view")
    # ttnn's default is the table's own first row, and the summary weighs the speed-up against the model's error
    first = page.page.locator(".candidates .tabulator-row").first.inner_text()
    assert "ttnn default: M@y,N@x|in0=mcast_x,in1=mcast_y" in first, first
    assert "predicted for this schedule; the model's error on " in page.text(".summary")
    name, value, domain = DEMOTING_PIN
    best = page.text(".summary")
    page.choose_pin(name, value, domain_size=domain)
    page.click(".pin")
    page.page.locator(".summary").get_by_text(f"{name}={value}", exact=True).wait_for()
    assert best.split("(")[0] in page.text(".summary")  # the same candidate, now pinned
    # its row, re-ranked onto a later page, is shown and highlighted
    page.wait_until(lambda: selected_row_in_view(page), "the selected candidate's row to be in view after the pin")
    pinned = [c for c in cells(page) if c]
    assert not {"NaN", "nan", "None"} & set(pinned)  # the unpinned parameters' "pinned" cells are empty
    assert beyond_the_viewport(page, width) == []


def test_the_formula_has_no_error_marks_and_measure_says_nothing_is_measured(
    wide_page: tuple[ExplorerPage, int],
) -> None:
    page, _ = wide_page
    formula = page.page.locator(".formula")
    assert "T1[" in page.text(".formula")  # the lookup tables are there, named once ...
    assert formula.locator(".err").count() == 0  # ... and nothing in it is marked as a syntax error
    assert "No measured time of gemm on wormhole_n150" in page.text(".measure-empty")
    assert page.page.locator(".bk-Figure").filter(has_text="predicted vs measured").count() == 0
