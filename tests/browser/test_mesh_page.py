"""The explorer's mesh section in real headless Chromium: ``?mesh=t3000`` with a matmul draws the chips, the
loaded Ethernet lanes and the ops table; pinning the matmul's split re-solves it (the lanes follow); clicking
the op opens its per-chip problem on the mesh's chip in the explorer below. Takes ``mesh_view.png``."""

from __future__ import annotations

from pathlib import Path

from page_driver import ExplorerPage

QUERY = "?shape=M=256,K=256,N=256&mesh=t3000&graph=matmul&mesh_shape=M=32,K=2048,N=8192"
ROWS = ".mesh-ops .tabulator-row"


def _source(page: ExplorerPage, name: str) -> dict[str, list[object]]:
    """A BokehJS source's columns (numbers and strings only)."""
    return dict(
        page.page.evaluate(
            f"() => {{ const d = Bokeh.documents[0].get_model_by_name('{name}').data; const out = {{}}; "
            "for (const k of ['bytes', 'src', 'dst', 'axis', 'label', 'collectives']) "
            "if (d[k] !== undefined) out[k] = Array.from(d[k]); return out }"
        )
    )


def _cell(page: ExplorerPage, field: str) -> str:
    return page.page.locator(f'{ROWS} .tabulator-cell[tabulator-field="{field}"]').first.inner_text().strip()


def test_mesh_section_draws_pins_and_opens_an_op(explorer: tuple[ExplorerPage, str], screenshots: Path) -> None:
    page, url = explorer
    page.page.goto(url + QUERY)
    page.page.locator(".mesh-summary").get_by_text("best (proven)").wait_for()
    chips = _source(page, "mesh_chips")
    assert chips["label"] == [str(i) for i in range(8)]
    lanes = _source(page, "mesh_links")
    assert len(lanes["bytes"]) == 20  # both directions of the T3000's 10 neighbouring pairs
    page.page.locator(ROWS).first.wait_for()
    assert page.page.locator(ROWS).count() == 2  # the matmul and the total
    assert _cell(page, "split") == "N@ring"  # as fast as a fused gather of the replicated x, one collective fewer
    status = page.text(".mesh-status")  # a single matmul: bf16, its own weights, the DRAM they take per chip
    assert "bf16 precision, 1 layer of weights per chip (" in status and "GB of DRAM)" in status
    loaded = [i for i, b in enumerate(lanes["bytes"]) if float(b)]  # type: ignore[arg-type]
    assert len(loaded) == 16 and all("all_gather on ring" in str(lanes["collectives"][i]) for i in loaded)

    page.choose(".mesh-pin-field", "split")
    page.choose(".mesh-pin-target", "matmul")
    page.wait_until(
        lambda: "K@columns" in page.page.locator(".mesh-pin-value option").all_inner_texts(), "the split list"
    )
    page.choose(".mesh-pin-value", "K@columns")
    page.click(".mesh-pin")
    page.wait_until(lambda: _cell(page, "split") == "K@columns", "the matmul re-solved under its pin")
    assert "matmul.split=K@columns" in page.text(".mesh-pins")
    lanes = _source(page, "mesh_links")
    loaded_axes = {str(lanes["axis"][i]) for i, b in enumerate(lanes["bytes"]) if float(b)}  # type: ignore[arg-type]
    assert loaded_axes == {"columns"}  # the partial sums are all-reduced along each row
    assert "all_reduce on columns" in _cell(page, "collectives after it")

    page.page.locator(ROWS).first.click()
    page.wait_until(lambda: "opened matmul" in page.text(".mesh-opened"), "the op opened in the explorer")
    page.wait_until(lambda: page.page.locator(".in-hw select").input_value() == "wormhole_n300", "the mesh's chip")
    assert page.page.locator(".in-shape input").input_value() == "M=32,K=512,N=8192"
    page.wait_solved()
    page.page.wait_for_timeout(300)  # the last figures' paint
    page.page.screenshot(path=str(screenshots / "mesh_view.png"), clip={"x": 0, "y": 0, "width": 1500, "height": 1500})
