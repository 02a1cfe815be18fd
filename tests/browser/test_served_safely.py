"""A real ``loom-explorer serve`` (subprocess) driven by Chromium: what a page shows of a hostile query.

A path in the query string shows nothing of the file (no content, no path) and runs nothing; a bad value is
named in the page without a traceback or markup; nothing one session chose or typed appears in a second
session; a bad form value keeps the last good problem on screen; a kernel named on the server's command
line is offered by its name.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from page_driver import CHROMIUM, CHROMIUM_ARGS, WAIT_MS, ExplorerPage
from playwright.sync_api import Browser, sync_playwright
from served_cli import ROOT, Served

SMALL = "shape=M=256,K=256,N=256"

# Every text the page holds: text nodes and attribute values (shadow roots included), the value of each
# form control, and each string (or list of strings) held by a BokehJS model (a drop-down's options).
DEEP_TEXT = """() => {
  const out = [];
  const walk = (node) => {
    if (node.shadowRoot) walk(node.shadowRoot);
    for (const c of node.childNodes) {
      if (c.nodeType === Node.TEXT_NODE) out.push(c.textContent);
      else if (c.nodeType === Node.ELEMENT_NODE) {
        if (c.tagName === 'SCRIPT') continue;
        for (const a of c.attributes) out.push(a.value);
        if (typeof c.value === 'string') out.push(c.value);
        walk(c);
      }
    }
  };
  walk(document);
  for (const m of Bokeh.documents[0].all_models) {
    for (const v of Object.values(m.attributes)) {
      if (typeof v === 'string') out.push(v);
      else if (Array.isArray(v)) out.push(JSON.stringify(v.filter(x => typeof x === 'string' || Array.isArray(x))));
    }
  }
  return out.join('\\n');
}"""
# <img> elements anywhere (shadow roots included): a query value must never become markup
IMAGES = """() => { let n = 0; const walk = (node) => { if (node.shadowRoot) walk(node.shadowRoot);
  for (const c of node.children || []) { if (c.tagName === 'IMG') n++; walk(c); } }; walk(document); return n; }"""


@pytest.fixture(scope="module")
def cli_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("kernels")
    (folder / "my_gemm.py").write_text((ROOT / "kernels" / "gemm.py").read_text())
    server = Served(["--kernel", str(folder / "my_gemm.py")], folder)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=WAIT_MS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture()
def new_page(chromium: Browser) -> Iterator[object]:
    pages = []

    def make() -> ExplorerPage:
        page = chromium.new_page(viewport={"width": 1500, "height": 1900})
        pages.append(page)
        return ExplorerPage(page)

    try:
        yield make
    finally:
        for page in pages:
            page.close()


def _open(page: ExplorerPage, url: str) -> None:
    page.page.goto(url)
    page.page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
    page.page.locator(".in-kernel select").wait_for()


def _alert(page: ExplorerPage, text: str) -> str:
    page.page.locator(".error").get_by_text(text).first.wait_for()
    return page.text(".error")


def _deep_text(page: ExplorerPage) -> str:
    return str(page.page.evaluate(DEEP_TEXT))


def test_a_path_in_the_query_runs_nothing_and_shows_nothing_of_the_file(
    cli_server: Served,
    new_page,
    tmp_path: Path,
) -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    hw_file = tmp_path / "chip.yaml"
    hw_file.write_text(f"name: wormhole\nclock_ghz: {secret}: [\n")  # malformed: a YAML error quotes this line
    marker = tmp_path / "ran"
    kernel_file = tmp_path / "evil.py"
    kernel_file.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")

    page = new_page()
    _open(page, f"{cli_server.url}?hw={hw_file}&{SMALL}")
    assert "hw: unknown hardware (not a name); choose one of" in _alert(page, "hw:")
    page.wait_solved()  # the default hardware instead
    text = _deep_text(page)
    assert secret not in text and str(tmp_path) not in text and "Traceback" not in text

    page = new_page()
    _open(page, f"{cli_server.url}?kernel={kernel_file}&{SMALL}")
    assert "kernel: unknown kernel (not a name)" in _alert(page, "kernel:")
    text = _deep_text(page)
    assert str(tmp_path) not in text and "Traceback" not in text and "does not accept" not in text
    assert not marker.exists()


def test_a_second_session_shows_nothing_of_the_first(cli_server: Served, new_page) -> None:
    bad = {"kernel": "nonexistent", "hw": "/etc/passwd", "dtype": "<img src=x>", "fidelity": "ultra"}
    first = new_page()
    for query in ("kernel=nonexistent", "hw=/etc/passwd&dtype=<img src=x>&fidelity=ultra"):
        _open(first, f"{cli_server.url}?{query}&{SMALL}")
        message = _alert(first, "showing the default instead")
        assert "Traceback" not in _deep_text(first) and first.page.evaluate(IMAGES) == 0
        for field in bad:
            if field in query:
                assert f"{field}: unknown" in message
        if "kernel" in query:  # a plain name is quoted back, in its own session
            assert "kernel: unknown kernel 'nonexistent'" in message
    first.record_statuses()
    first.page.locator(".in-shape input").fill("M=768,K=256,N=256")
    first.page.locator(".in-shape input").press("Enter")
    first.page.wait_for_function("() => window.__statuses.length > 0")  # the server took it

    second = new_page()
    _open(second, f"{cli_server.url}?{SMALL}")
    text = _deep_text(second)
    for value in (*bad.values(), "M=768"):
        assert value not in text, f"{value!r} of the first session shows in the second"
    assert not second.page.locator(".error").is_visible()


def test_bad_form_values_name_the_field_and_keep_the_last_good_problem(cli_server: Served, new_page) -> None:
    page = new_page()
    _open(page, f"{cli_server.url}?{SMALL}")
    page.wait_solved()
    summary, rows = page.text(".summary"), page.candidate_rows()
    before = ""
    for shape in ("M=abc,K=256,N=256", "M=1000000000000,K=256,N=256"):  # unreadable; far too large to model
        page.page.locator(".in-shape input").fill(shape)
        page.page.locator(".in-shape input").press("Enter")
        page.wait_until(
            lambda shown=before: page.page.locator(".error").is_visible() and page.text(".error") != shown,
            f"a new error for shape {shape}",
        )
        message = before = page.text(".error")
        assert "shape: " in message and "Traceback" not in message
        assert len(message.split("shape: ", 1)[1].strip()) > 10, message  # a reason follows
        assert page.text(".summary") == summary and page.candidate_rows() == rows


def test_a_kernel_named_on_the_command_line_is_offered_by_its_name(cli_server: Served, new_page) -> None:
    page = new_page()
    _open(page, f"{cli_server.url}?kernel=my_gemm&{SMALL}")
    page.wait_solved()
    options = page.page.locator(".in-kernel option").all_inner_texts()
    assert "my_gemm" in options and "gemm" in options
    assert page.page.locator(".in-kernel select").input_value() == "my_gemm"
    assert not page.page.locator(".error").is_visible()
    assert page.candidate_rows() > 0
