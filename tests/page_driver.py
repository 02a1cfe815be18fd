"""Drive the served explorer in real headless Chromium (Debian's, through Playwright): used by the browser
tests and by ``benchmarks/ui_latency.py`` (test-only: beside the tests, not in the package; imported as
``page_driver``, conftest.py puts this folder on sys.path). Needs Playwright (the ``dev`` extra) and a Chromium at
``$LOOM_CHROMIUM`` (default ``/usr/bin/chromium``; ``tests/install_chromium.sh`` installs it).

Panel renders every widget inside a shadow root; Playwright's CSS selectors pierce open shadow roots, so the
``css_classes`` the explorer gives its widgets (``.pin-name``, ``.summary``, ...) find them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from playwright.sync_api import Browser, Page, sync_playwright

from loom_explorer.ui.app import RunningServer

CHROMIUM = os.environ.get("LOOM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-dev-shm-usage",
]
# The longest anything waits for the page or the server to reach a state (a solve, a report's analysis, a
# widget's round trip). Every wait is on a condition and returns as soon as it holds, so the bound costs
# nothing on an idle machine; it is generous because a machine running two suites at once is many times
# slower than an idle one (the reported failure: a 60 s wait on a suite that took 35 min).
WAIT_MS = 600_000
POLL_MS = 50  # between two checks of a condition read from Python

T = TypeVar("T")

# BokehJS: the grid's link source, and the time its data last changed (set by a listener installed below)
_GRID_LINKS = "Bokeh.documents[0].get_model_by_name('grid_links')"


@contextmanager
def served_browser() -> Iterator[tuple[RunningServer, Browser]]:
    server = RunningServer()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=WAIT_MS)
            try:
                yield server, browser
            finally:
                browser.close()
    finally:
        server.stop()


class ExplorerPage:
    """``page`` driven as the explorer: every Playwright action and wait on it without its own ``timeout``
    (a click, a ``select_option``, a locator's ``wait_for``, ``goto``) waits up to ``WAIT_MS``."""

    def __init__(self, page: Page) -> None:
        self.page = page
        page.set_default_timeout(WAIT_MS)
        page.set_default_navigation_timeout(WAIT_MS)

    def wait_until(self, condition: Callable[[], T], what: str, timeout_ms: float = WAIT_MS) -> T:
        """Check ``condition`` every ``POLL_MS`` (the page's events are handled in between) until it returns a
        true value, and return that value; AssertionError saying ``what`` was awaited once ``timeout_ms``
        have passed without it."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise AssertionError(f"waited {timeout_ms / 1000:.0f} s for {what}")
            self.page.wait_for_timeout(POLL_MS)

    def open(self, url: str) -> ExplorerPage:
        self.page.goto(url)
        self.wait_solved()
        return self

    def text(self, css: str) -> str:
        """Visible text of a widget (inside its shadow root)."""
        return str(self.page.locator(css).first.evaluate("e => (e.shadowRoot || e).textContent"))

    def record_statuses(self) -> None:
        """Record in ``window.__statuses`` every status line the server sends, with the summary shown beside
        it at that moment and the milliseconds since navigation (a listener on the status pane's BokehJS
        model). Reading the record after the solve avoids racing the page for a status that is soon
        replaced. Call it right after ``goto``: the first status worth recording comes after the
        candidates' models are built."""
        self.page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=WAIT_MS)
        self.page.evaluate(
            "() => { window.__statuses = []; const models = [...Bokeh.documents[0].all_models]; "
            "const find = c => models.find(m => (m.css_classes || []).includes(c)); "
            "const status = find('status'), summary = find('summary'); "
            "status.properties.text.change.connect(() => "
            "window.__statuses.push({status: status.text, summary: summary.text, ms: performance.now()})) }"
        )

    def statuses(self) -> list[dict[str, str | float]]:
        return list(self.page.evaluate("() => window.__statuses"))

    def wait_solved(self) -> None:
        """Until the status line says the candidates are solved (the first solve starts after page load)."""
        self.page.locator(".status").get_by_text("candidates solved").wait_for(timeout=WAIT_MS)

    def candidate_rows(self) -> int:
        return self.page.locator(".candidates .tabulator-row").count()

    def grid_counts(self) -> dict[str, int]:
        """Rows of the grid's tile, DRAM, multicast and link sources, as BokehJS holds them."""
        counts = self.page.evaluate(
            "() => Object.fromEntries(['tiles', 'dram', 'rects', 'links'].map(n => "
            "[n, Bokeh.documents[0].get_model_by_name('grid_' + n).get_length() || 0]))"
        )
        return {str(name): int(rows) for name, rows in counts.items()}

    def choose(self, css: str, value: str) -> None:
        self.page.locator(f"{css} select").select_option(value)

    def choose_pin(self, name: str, value: int, domain_size: int) -> None:
        """Pick parameter ``name`` and ``value``. Picking the name makes the server send its domain to the
        value list (``domain_size`` options), which would undo a value chosen before it arrives: wait for a
        list of that size that is not the previous parameter's (another parameter may have as many values)."""
        options = self.page.locator(".pin-value option")
        before = options.all_inner_texts()
        changing = self.page.locator(".pin-name select").input_value() != name

        def arrived() -> bool:
            shown = options.all_inner_texts()
            return len(shown) == domain_size and (shown != before or not changing)

        self.choose(".pin-name", name)
        self.wait_until(arrived, f"the value list of {name} to show {domain_size} options")
        self.choose(".pin-value", str(value))
        chosen = self.page.locator(".pin-value select").input_value()
        assert chosen == str(value), f"the value list of {name} shows {chosen}, not {value}"

    def click(self, css: str) -> None:
        self.page.locator(f"{css} button").click()

    def watch_grid(self) -> None:
        """Record (in ``window.__gridChanged``) when the grid's link data last changed."""
        self.page.evaluate(
            f"() => {{ window.__gridChanged = 0; const s = {_GRID_LINKS}; "
            "s.change.connect(() => { window.__gridChanged = performance.now() }) }"
        )

    def click_and_time_grid(self, css: str, timeout_ms: int = WAIT_MS) -> float:
        """Milliseconds from clicking ``css``'s button to the grid's link data changing in the browser."""
        button = self.page.locator(f"{css} button")
        start = button.evaluate("b => { window.__gridChanged = 0; const t = performance.now(); b.click(); return t }")
        self.page.wait_for_function("() => window.__gridChanged > 0", timeout=timeout_ms, polling=5)
        return float(self.page.evaluate("() => window.__gridChanged")) - float(start)
