"""``examples/explorer.ipynb`` runs headless in a real Jupyter kernel (nbclient, ipykernel) and says what it
should: the best schedule, ttnn's default and the speed-up, a pinned schedule beside the kept one, a TTNN
program config, and the explorer both through Panel's extension and as a plain ipywidget (jupyter_bokeh).
The notebook is executed in memory from a temporary folder: nothing is written into the tree."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from waits import WAIT_S

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "explorer.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _text(cell: nbformat.NotebookNode) -> str:
    out = []
    for o in cell.get("outputs", []):
        out.append(o.get("text", ""))
        out.append(str(o.get("data", {}).get("text/plain", "")))
    return "".join(out)


@pytest.mark.slow
def test_the_example_notebook_runs_and_shows_each_step(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    NotebookClient(
        nb, timeout=int(WAIT_S), kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    for cell in code:
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
    opened, default, pinned, exported, inline, widget = code
    best = re.search(r"best: (\S+), ([\d.]+) us, ([\d.]+) TFLOP/s", _text(opened))
    assert best and best.group(1) == "M@y,N@x|in0=mcast_x,in1=mcast_y", _text(opened)
    assert "ttnn.matmul: ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(" in _text(default)
    assert re.search(r"speed-up of the best: \d+\.\d\dx", _text(default))
    assert re.search(r"pinned: \{'in0_block_w': 1\}, [\d.]+ us \(optimal\)", _text(pinned))
    table = "".join(str(o.get("data", {}).get("text/html", "")) for o in pinned.outputs)
    assert "A (kept)" in table and "in0_block_w" in table  # the comparison frame, rendered
    assert "MatmulMultiCoreReuseMultiCastProgramConfig" in _text(exported)
    assert any(
        WIDGET_VIEW in o.get("data", {})
        or "application/vnd.holoviews_load.v0+json" in o.get("data", {})
        or "text/html" in o.get("data", {})
        for o in inline.outputs
    )
    assert "BokehModel" in _text(widget)
    assert any(WIDGET_VIEW in o.get("data", {}) for o in widget.outputs)  # a real ipywidget view
    assert list(tmp_path.iterdir()) == [] or all(p.suffix != ".ipynb" for p in tmp_path.iterdir())
