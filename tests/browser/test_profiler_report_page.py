"""The profiler-report section of the served explorer in real headless Chromium: a shipped capture's ops,
biggest predicted gain first; a click opens the op in the explorer and marks its measured time on the
Measure chart; a file that is no profiler report is refused in one line."""

from __future__ import annotations

from page_driver import ExplorerPage

SMALL = "?shape=M=1024,K=1024,N=1024"
CLIP = "wh_clip_encoder_2.csv.gz"
TOP_OP = "MinimalMatmulOp gemm M=19,K=1280,N=1280 bfloat16 hifi4"
ROWS = ".profiler-ops .tabulator-row"
VIEWPORT_WIDTH = 1500  # the explorer fixture's page


def _open_section(page: ExplorerPage) -> None:
    """Open the profiler-report section (built when first asked for)."""
    page.page.locator(".profiler-open button").click()
    page.page.locator(".profiler-capture select").wait_for()


def _cells(page: ExplorerPage, field: str) -> list[str]:
    """The shown cells of one column of the ops table, top down."""
    cells = page.page.locator(f'{ROWS} .tabulator-cell[tabulator-field="{field}"]')
    return [t.strip() for t in cells.all_inner_texts()]


def _wait_for_value(page: ExplorerPage, css: str, wanted: str) -> None:
    """Until input ``css`` reads ``wanted``; AssertionError saying what it reads when the page's wait ends."""
    field = page.page.locator(css)
    try:
        page.wait_until(lambda: field.input_value() == wanted, f"{css} to read {wanted}")
    except AssertionError:
        raise AssertionError(f"{css} reads {field.input_value()!r}, not {wanted!r}") from None


def _click_until_opened(page: ExplorerPage, tries: int = 3) -> None:
    """Click the top row until the server says it opened its op (``.profiler-opened`` names it). A click that
    lands while Tabulator re-renders the rows is dropped in the browser and never reaches the server (seen
    once in a full CI run, the page then waiting its whole 600 s); a user clicks again, and so does this,
    at most ``tries`` times, each waited 30 s."""
    for attempt in range(tries):
        page.page.locator(ROWS).first.click()
        try:
            page.wait_until(lambda: TOP_OP in page.text(".profiler-opened"), f"{TOP_OP} opened", timeout_ms=30_000)
            return
        except AssertionError:
            if attempt == tries - 1:
                raise


def test_a_capture_s_op_opens_in_the_explorer_with_its_measured_time(explorer: tuple[ExplorerPage, str]) -> None:
    page, url = explorer
    page.open(url + SMALL)
    _open_section(page)
    page.page.evaluate(  # every status line the server sends, in window.__profilerStatuses
        "() => { window.__profilerStatuses = []; const s = [...Bokeh.documents[0].all_models].find("
        "m => (m.css_classes || []).includes('profiler-status')); "
        "s.properties.text.change.connect(() => window.__profilerStatuses.push(s.text)) }"
    )
    options = page.page.locator(".profiler-capture option").all_inner_texts()
    page.page.locator(".profiler-capture select").select_option(label=next(o for o in options if o.startswith(CLIP)))
    page.page.locator(".profiler-status").get_by_text("biggest predicted gain first").wait_for()
    statuses = page.page.evaluate("() => window.__profilerStatuses")
    assert any("solving op 1 of" in s for s in statuses), statuses  # progress, op by op
    assert "predicted on wormhole_n150, 8x8 grid" in page.text(".profiler-summary")
    assert "error, gemm" in page.text(".profiler-summary")  # the coverage lines
    page.page.locator(ROWS).first.wait_for()
    assert _cells(page, "op")[0] == TOP_OP
    gains = [float(g) for g in _cells(page, "gain ms") if g]
    assert gains and gains == sorted(gains, reverse=True) and gains[0] > 0
    shown = page.page.locator(".profiler-ops .tabulator-cell").all_inner_texts()
    assert not {"NaN", "nan", "None"} & {t.strip() for t in shown}
    # the coverage by op code: every op code, most device time first, predicted or why not
    coverage = '.profiler-coverage .tabulator-row .tabulator-cell[tabulator-field="{}"]'
    page.page.locator(coverage.format("op code")).first.wait_for()
    codes = [t.strip() for t in page.page.locator(coverage.format("op code")).all_inner_texts()]
    assert codes[0] == "MinimalMatmulOp", codes
    shares = [float(t) for t in page.page.locator(coverage.format("share %")).all_inner_texts()]
    assert shares == sorted(shares, reverse=True) and shares[0] > 0
    shown = page.page.locator(".profiler-coverage .tabulator-cell").all_inner_texts()
    assert not {"NaN", "nan", "None"} & {t.strip() for t in shown}
    for css in (
        ".profiler-capture",
        ".profiler-upload",
        ".profiler-hw",
        ".profiler-run",
        ".profiler-ops",
        ".profiler-coverage",
    ):
        box = page.page.locator(css).first.bounding_box()
        assert box and box["x"] + box["width"] <= VIEWPORT_WIDTH, (css, box)  # inside the page's width
    measured_us = float(_cells(page, "measured us")[0])

    _click_until_opened(page)
    try:
        page.wait_until(lambda: TOP_OP in page.text(".measure-marked"), f"{TOP_OP} marked on the Measure chart")
    except AssertionError as exc:  # what the page said instead
        raise AssertionError(
            f"{exc}; the section says {page.text('.profiler-opened')!r}; the explorer's summary "
            f"{page.text('.summary')!r}; its status {page.text('.status')!r}"
        ) from None
    page.wait_solved()
    _wait_for_value(page, ".in-shape input", "M=19,N=1280,K=1280")
    assert page.page.locator(".in-hw select").input_value() == "wormhole_n150"
    assert "selected" in page.text(".summary")
    opened = page.text(".profiler-opened")
    assert TOP_OP in opened and "fp32 accumulation" in opened and "bias" in opened
    # the chart's point may reach the browser in a message after the marked line's: wait for it to be drawn
    page.page.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('measure_marker').data.measured_us.length > 0"
    )
    marked = page.page.evaluate(
        "() => { const d = Bokeh.documents[0]; return {"
        "measured: d.get_model_by_name('measure_marker').data.measured_us,"
        " visible: d.get_model_by_name('measure_figure').visible} }"
    )
    assert marked["visible"] and len(marked["measured"]) == 1
    assert abs(marked["measured"][0] - measured_us) < 0.1  # the table's measured us, on the chart
    assert f"measured {measured_us:,.1f} us per call" in page.text(".measure-marked")


def test_an_upload_that_is_no_report_shows_its_error(explorer: tuple[ExplorerPage, str]) -> None:
    page, url = explorer
    page.open(url + SMALL)
    _open_section(page)
    page.page.locator(".profiler-upload input[type=file]").set_input_files(
        files=[{"name": "notes.csv", "mimeType": "text/csv", "buffer": b"name,value\nx,1\n"}]  # type: ignore[arg-type]
    )
    shown = page.page.locator(".profiler-error").get_by_text("required column")
    shown.wait_for()
    error = shown.inner_text().strip()
    assert error.startswith("notes.csv: required column") and "not an ops_perf_results CSV" in error
    assert "\n" not in error  # one line
    assert page.page.locator(ROWS).count() == 0
