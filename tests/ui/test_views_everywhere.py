"""Every view of the explorer works for GEMM, batched GEMM, FlashAttention, an element-wise add, RMSNorm and a
conv2d on every shipped chip."""

from __future__ import annotations

import pytest

from loom_explorer.hardware import list_hardware, load_hardware
from loom_explorer.ui import Explorer

SHAPES = {
    "gemm": "M=512,K=1024,N=768",
    "batched_gemm": "B=2,M=256,K=512,N=256",
    "flash_attention": "B=1,H=2,Sq=512,Skv=512,D=64",
    "binary": "H=300,W=190",
    "rmsnorm": "H=96,W=1024",
    "conv2d": "M=4096,N=64,KH=3,KWC=192",
}


@pytest.mark.slow
@pytest.mark.parametrize("hw", list_hardware())
@pytest.mark.parametrize("kernel", sorted(SHAPES))
def test_every_view_is_filled(hw: str, kernel: str) -> None:
    ex = Explorer(hw=hw, kernel=kernel, shape=SHAPES[kernel], causal=kernel == "flash_attention")
    chip = load_hardware(hw)
    assert ex.schedule.latency_cycles is not None
    assert len(ex.table.value) == len(ex.state.results) + (ex.state.ttnn_default().result is not None) > 1
    assert list(ex.params_table.value["parameter"]) == list(ex.state.symbolic.param_names)
    tiles = ex.grid.tiles.data
    assert len(tiles["x"]) == chip.grid.noc_width * chip.grid.noc_height
    assert sum(k == "core" for k in tiles["kind"]) == len(_working(ex))
    assert len(ex.grid.links.data["x0"]) == len(ex.state.traffic().links)
    assert sum(ex.breakdown.source.data["value"]) == ex.schedule.latency_cycles
    assert sum(ex.l1.source.data["value"]) == ex.schedule.l1_bytes <= chip.l1.usable_bytes  # type: ignore[operator]
    assert ex.formula.object.startswith("latency = ")
    assert "```text\n" in ex.formula.object  # plain text: a guessed language marks ":" in the tables as errors
    assert '"schema_version"' in ex.state.schedule_json()
    if kernel == "flash_attention":
        assert ex.state.problem.options == frozenset({"causal"})
    # one operand's traffic only
    tensor = ex.state.tensors_moved()[0]
    ex.w_operand.value = tensor
    assert len(ex.grid.links.data["x0"]) == len(ex.state.traffic(tensor).links)


def _working(ex: Explorer) -> list[tuple[int, int]]:
    from loom_explorer.traffic.transfers import used_cores

    assert ex.state.solution is not None
    return used_cores(ex.state.symbolic, ex.state.solution.values())
