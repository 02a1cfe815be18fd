"""The card runner refuses, with the reason and before anything runs, the schedules TTNN would not run as
they were scheduled: fp32 attention (SDPA takes bf16/bfp8_b/bfp4_b) and L1 placements TTNN cannot realise."""

from __future__ import annotations

import pytest
from contract_helpers import ATTENTION_SHAPE, GEMM_SHAPE, solved

from loom_explorer.deploy.runner import CardRunner, RunnerError


def test_the_card_runner_refuses_fp32_attention_with_the_reason() -> None:
    docs = solved("flash_attention", ATTENTION_SHAPE, dtype="float32")
    (candidate,) = [c for c in docs if c.startswith("H*Sq@xy|q=dram,k=dram,v=dram")]
    with pytest.raises(RunnerError, match="SDPA takes q, k and v in bfloat16"):
        CardRunner().run(docs[candidate], runs=2, warmup=1)


@pytest.mark.parametrize(
    "placements,candidate,why",
    [
        ((("in1", "l1_width"),), "N@xy|in0=mcast_xy,in1=local", "in1=l1_width: TTNN's multicast matmuls read in1"),
        ((("in0", "l1"),), "M@y,N@x|in0=mcast_x,in1=mcast_y", "in0=l1: a what-if placement"),
    ],
)
def test_the_card_runner_refuses_a_placement_ttnn_cannot_realise(placements, candidate, why) -> None:
    doc = solved("gemm", GEMM_SHAPE, placements)[candidate]
    with pytest.raises(RunnerError, match=why):
        CardRunner().run(doc, runs=2, warmup=1)
