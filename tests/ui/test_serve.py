"""Both ways of serving the explorer answer with its page: ``loom-explorer serve`` and
``panel serve apps/explorer.py`` (the browser tests drive the same ``create_app`` in Chromium)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from waits import WAIT_S

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def _page(command: list[str], port: int) -> str:
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + WAIT_S  # until it answers (imports take minutes on a loaded machine)
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"{' '.join(command)} exited with {proc.returncode}: {proc.stdout.read()}")
            try:
                with urllib.request.urlopen(f"http://localhost:{port}/explorer", timeout=WAIT_S) as resp:
                    assert resp.status == 200
                    return resp.read().decode()
            except OSError:
                time.sleep(0.3)
        pytest.fail(f"{' '.join(command)} did not answer within {WAIT_S:.0f} s")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_loom_explorer_serve_answers() -> None:
    port = _free_port()
    html = _page([sys.executable, "-m", "loom_explorer.cli", "serve", "--port", str(port)], port)
    assert "<title>loom-explorer</title>" in html


@pytest.mark.slow
def test_panel_serve_apps_explorer_answers() -> None:
    port = _free_port()
    html = _page([sys.executable, "-m", "panel", "serve", "apps/explorer.py", "--port", str(port)], port)
    assert "<title>loom-explorer</title>" in html


def test_the_layout_renders_to_bokeh_models_as_in_a_notebook() -> None:
    import panel as pn

    from loom_explorer.ui import Explorer

    pn.extension("tabulator")
    explorer = Explorer(shape={"M": 512, "K": 512, "N": 512})
    root = explorer.__panel__().get_root()
    names = {m.name for m in root.references() if getattr(m, "name", None)}
    assert {"grid_tiles", "grid_links"} <= names
    assert explorer.schedule.latency_cycles is not None
