"""Pin-to-grid latency of the served explorer, measured in the browser (real headless Chromium).

    python benchmarks/ui_latency.py                 # default GEMM 4096^3 on wormhole_n150, 20 pins
    python benchmarks/ui_latency.py --pins 40 --shape M=1024,K=1024,N=1024
    python benchmarks/ui_latency.py --quick         # GEMM 256^3, 3 pins: a smoke run of the whole path

The page is served in this process (``RunningServer``); Chromium opens it and solves every candidate. Then,
for the best candidate, ``in0_block_w`` is pinned to each of its values in turn (then all freed). Each
timing runs in the page: from the Pin button's click to the moment BokehJS applies the new link data of
the grid (a listener on the grid's link source), so it covers the websocket round trip, the re-solve on
the server, routing the new schedule's traffic, and the update of every view.

Beside it, in the same process and for the same pins, the time ``ExplorerState.pin`` takes without any
browser (solve + referee only), and the time to build the grid scene (transfers, routing): the browser
figure minus these two is Panel/Bokeh and the websocket.

Needs Chromium and Playwright, as the browser tests do (``tests/page_driver.py``, the browser tests' driver of
the page: this script puts ``tests/`` on sys.path to import it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from loom_explorer.ui.scene import grid_scene
from loom_explorer.ui.state import ExplorerState

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the browser tests' page driver
from page_driver import ExplorerPage, served_browser

PARAM = "in0_block_w"


def _summary(name: str, ms: list[float]) -> str:
    ms = sorted(ms)
    p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
    return (
        f"{name:<34} median {statistics.median(ms):7.1f} ms   p90 {p90:7.1f} ms   max {ms[-1]:7.1f} ms   (n={len(ms)})"
    )


def fresh_store() -> None:
    """A new, empty results store: a solve timed here is solved, not answered from an earlier proof."""
    os.environ["LOOM_EXPLORER_STORE"] = str(Path(tempfile.mkdtemp(prefix="ui-latency-")) / "results.sqlite")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="M=4096,K=4096,N=4096")
    ap.add_argument("--hw", default="wormhole_n150")
    ap.add_argument("--pins", type=int, default=20, help="pin clicks to time")
    ap.add_argument("--quick", action="store_true", help="GEMM 256^3 and 3 pins (seconds, for a smoke run)")
    args = ap.parse_args()
    if args.quick:
        args.shape, args.pins = "M=256,K=256,N=256", 3
    fresh_store()
    state = ExplorerState(hw=args.hw, shape=args.shape)
    state.solve_all()
    domain = [v for v in state.symbolic.param(PARAM).values]
    sequence = [domain[i % len(domain)] for i in range(args.pins)]

    solve_ms, scene_ms = [], []
    for v in sequence:
        t = time.perf_counter()
        state.pin(PARAM, v)
        solve_ms.append((time.perf_counter() - t) * 1e3)
        t = time.perf_counter()
        if state.solution is not None:
            grid_scene(state.hardware, state.symbolic, state.solution.values(), state.transfers(), state.traffic())
        scene_ms.append((time.perf_counter() - t) * 1e3)

    browser_ms = []
    fresh_store()  # the page solves the problem itself, as on a first visit
    with served_browser() as (server, browser):
        page = ExplorerPage(browser.new_page(viewport={"width": 1500, "height": 1900}))
        start = time.perf_counter()
        page.page.goto(f"{server.url}?hw={args.hw}&shape={args.shape}")
        page.record_statuses()
        page.wait_solved()
        best_s = next(float(s["ms"]) for s in page.statuses() if "best proven" in str(s["status"])) / 1e3
        first_s = time.perf_counter() - start
        page.watch_grid()
        page.choose_pin(PARAM, sequence[0], domain_size=len(domain))
        for i, v in enumerate(sequence):
            if i:
                page.choose(".pin-value", str(v))
            browser_ms.append(page.click_and_time_grid(".pin"))
            page.page.locator(".summary").get_by_text(f"{PARAM}={v}", exact=True).wait_for(timeout=30_000)
        free_ms = page.click_and_time_grid(".free-all")

    print(
        f"explorer pin -> grid latency: {args.hw}, gemm {args.shape}, candidate {state.candidate}, "
        f"pinning {PARAM} over {domain}"
    )
    print(
        f"first page: the best candidate proven and shown {best_s:.1f} s after opening it, "
        f"every candidate solved and shown {first_s:.1f} s after"
    )
    print(_summary("browser: click Pin -> grid updated", browser_ms))
    print(_summary("  of which solve (no browser)", solve_ms))
    print(_summary("  of which transfers + routing", scene_ms))
    print(f"{'browser: click Free all -> grid':<34} {free_ms:7.1f} ms")
    print(f"target: median under 300 ms -> {'met' if statistics.median(browser_ms) < 300 else 'MISSED'}")


if __name__ == "__main__":
    main()
