"""The served explorer in real headless Chromium: default page, pinning, a conflict, FlashAttention."""

from __future__ import annotations

import re
from pathlib import Path

from page_driver import ExplorerPage

from loom_explorer.hardware import load_hardware

SMALL = "?shape=M=1024,K=1024,N=1024"


def _latency(text: str) -> str:
    match = re.search(r"([\d,.]+) us", text)
    assert match, text
    return match.group(1)


def test_default_page_renders_grid_and_table(explorer: tuple[ExplorerPage, str], screenshots: Path) -> None:
    page, url = explorer
    page.page.goto(url)
    page.record_statuses()
    page.wait_solved()
    # the proven best is selected and drawn before the other candidates' optima arrive
    shown = [s for s in page.statuses() if "best proven" in str(s["status"])]
    assert shown and "solving the others" in str(shown[0]["status"]), page.statuses()
    assert "M@y,N@x|in0=mcast_x,in1=mcast_y" in str(shown[0]["summary"])
    assert "20 candidates solved" in page.text(".status")
    assert page.candidate_rows() >= 5  # Tabulator renders the rows in view
    summary = page.text(".summary")
    assert "M@y,N@x|in0=mcast_x,in1=mcast_y" in summary and "pins: none" in summary
    assert not page.page.locator(".in-causal").is_visible()  # GEMM has no causal option
    hw = load_hardware("wormhole_n150")
    counts = page.grid_counts()
    assert counts["tiles"] == hw.grid.noc_width * hw.grid.noc_height
    assert counts["dram"] == hw.dram.channels
    assert counts["links"] > 100 and counts["rects"] == 16  # 8 row and 8 column multicasts
    page.page.screenshot(path=str(screenshots / "explorer.png"), full_page=True)


def test_pin_changes_the_schedule_and_compare_keeps_the_old_one(explorer: tuple[ExplorerPage, str]) -> None:
    page, url = explorer
    page.open(url + SMALL)
    before = page.text(".summary")
    page.click(".keep")
    page.watch_grid()
    page.choose_pin("in0_block_w", 1, domain_size=6)
    page.click(".pin")
    page.page.locator(".summary").get_by_text("in0_block_w=1", exact=True).wait_for()
    after = page.text(".summary")
    assert _latency(after) != _latency(before)
    page.page.wait_for_function("() => window.__gridChanged > 0")
    table = page.text(".compare")
    assert "A (kept)" in table and "in0_block_w" in table
    page.click(".free-all")
    page.page.locator(".summary").get_by_text("pins: none").wait_for()
    assert _latency(page.text(".summary")) == _latency(before)


def test_conflicting_pins_are_explained(explorer: tuple[ExplorerPage, str], screenshots: Path) -> None:
    page, url = explorer
    page.open(url + SMALL)
    page.choose_pin("out_block_h", 32, domain_size=32)
    page.click(".pin")
    page.page.locator(".summary").get_by_text("out_block_h=32", exact=True).wait_for()
    page.choose_pin("in0_block_w", 32, domain_size=6)
    page.click(".pin")
    page.page.locator(".conflict").get_by_text("l1_capacity").wait_for()
    text = page.text(".conflict")
    assert "in0_block_w=32" in text and "out_block_h=32" in text and "B of L1 per core" in text
    page.page.screenshot(path=str(screenshots / "explorer_conflict.png"), full_page=False)


def test_a_parameter_s_value_list_and_value_arrive_together(explorer: tuple[ExplorerPage, str]) -> None:
    """A value chosen between the two would be overwritten by the server's default value."""
    page, url = explorer
    frames: list[str] = []
    page.page.on(
        "websocket",
        lambda ws: ws.on(
            "framereceived", lambda f: frames.append(f if isinstance(f, str) else f.decode(errors="replace"))
        ),
    )
    page.open(url + SMALL)
    seen = len(frames)
    page.choose(".pin-name", "in0_block_w")
    page.page.locator(".pin-value option").nth(5).wait_for(state="attached")

    def received() -> list[str]:
        return [f for f in frames[seen:] if '"attr":"options"' in f or '"attr":"value"' in f]

    # until both the value list and the value have arrived (together, or the second of two messages)
    page.wait_until(
        lambda: any('"attr":"options"' in f for f in received()) and any('"attr":"value"' in f for f in received()),
        "the value list and the value",
    )
    page.page.wait_for_timeout(500)  # a quiet spell in which a further patch of either would show (none may)
    patches = received()
    assert len(patches) == 1 and '"attr":"options"' in patches[0] and '"attr":"value"' in patches[0], patches


def test_switching_the_kernel_to_flash_attention(explorer: tuple[ExplorerPage, str], screenshots: Path) -> None:
    page, url = explorer
    page.open(url + SMALL)
    page.choose(".in-kernel", "flash_attention")
    page.page.locator(".summary").get_by_text("Sq").first.wait_for()
    page.wait_solved()
    assert page.page.locator(".in-shape input").input_value() == "B=1,H=8,Sq=2048,Skv=2048,D=128"
    assert page.page.locator(".in-causal").is_visible()
    counts = page.grid_counts()
    assert counts["tiles"] > 0 and counts["links"] > 0
    assert "q_chunk_size" in page.text(".params")
    page.page.screenshot(path=str(screenshots / "explorer_attention.png"), full_page=True)


def test_switching_the_kernel_to_a_norm(explorer: tuple[ExplorerPage, str]) -> None:
    """A row reduction in the explorer: its example shape, its parameters, and a chip drawing with the
    reduction's gathers and multicasts on the links."""
    page, url = explorer
    page.open(url + SMALL)
    page.choose(".in-kernel", "rmsnorm")
    page.page.locator(".params").get_by_text("block_h", exact=True).first.wait_for()
    page.wait_solved()
    assert page.page.locator(".in-shape input").input_value() == "H=2048,W=4096"
    counts = page.grid_counts()
    assert counts["tiles"] > 0 and counts["links"] > 0
    assert "gathered" in page.text(".summary")


def test_measure_panel_runs_the_schedule_in_the_simulator(explorer, monkeypatch, tmp_path, simulate_only) -> None:
    monkeypatch.setenv("LOOM_EXPLORER_STORE", str(tmp_path / "results.sqlite"))  # the server runs in this process
    page, url = explorer
    page.open(url + "?shape=M=256,K=256,N=256")
    page.click(".measure")
    page.page.locator(".measure-result").get_by_text("traffic equal to the model").wait_for()
    assert "simulator" in page.text(".measure-result") and "PCC 1.0000" in page.text(".measure-result")

    from loom_explorer.store import open_store

    with open_store(tmp_path / "results.sqlite") as store:
        (m,) = store.measurements()
    assert m.source == "simulator" and m.traffic_equal and m.kernel == "gemm"
