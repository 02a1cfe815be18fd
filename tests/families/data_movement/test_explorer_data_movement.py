"""The explorer's views are filled for a data-movement kernel: candidates with ttnn's default beside them, the
chip with the reads' and writes' NoC links, the latency breakdown, the L1 bars and the schedule JSON."""

from __future__ import annotations

import pytest

from loom_explorer.hardware import load_hardware
from loom_explorer.ui import Explorer


@pytest.mark.parametrize(("kernel", "shape"), [("tilize", "H=1024,Hx=1000,W=256,Wx=250"), ("transpose", "H=512,W=256")])
def test_every_view_is_filled_for_a_move(kernel: str, shape: str) -> None:
    ex = Explorer(hw="wormhole_n150", kernel=kernel, shape=shape)
    chip = load_hardware("wormhole_n150")
    assert ex.schedule.latency_cycles is not None
    assert ex.state.ttnn_default().result is not None  # ttnn's own split, costed beside the candidates
    assert len(ex.table.value) == len(ex.state.results) + 1 > 1
    assert len(ex.grid.links.data["x0"]) == len(ex.state.traffic().links) > 0  # DRAM reads and writes drawn
    assert sum(ex.breakdown.source.data["value"]) == ex.schedule.latency_cycles
    assert sum(ex.l1.source.data["value"]) == ex.schedule.l1_bytes <= chip.l1.usable_bytes  # type: ignore[operator]
    assert '"schema_version"' in ex.state.schedule_json()
