"""ttnn's SDPA kernels as the model describes them (``families/attention/quantities.py``,
``families/attention/buffers.py``): which kernel a call routes to, and its circular buffers (totals from ttnn's
program factories)."""

from __future__ import annotations

import pytest

from loom_explorer.families.attention.quantities import ACCURATE, STREAMING, ttnn_sdpa_kernel
from loom_explorer.families.attention.ttnn_config import TtnnSdpaConfig, sdpa_schedule, sdpa_values
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import Fidelity, HardwareSpec
from loom_explorer.problem import KernelTarget, Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.targets.ttnn.evaluate import evaluate_values

P150 = "blackhole_p150a"
BIG = "B=1,H=10,Sq=8192,Skv=8192,D=128"  # the P150b throughput problem of the precision-recipes report


@pytest.fixture(scope="module")
def p150() -> HardwareSpec:
    return load_hardware(P150)


def attention(
    shape: str,
    *,
    causal: bool = False,
    fp32: bool = False,
    fidelity: Fidelity = Fidelity.hifi2,
    target: KernelTarget = KernelTarget.ttnn,
) -> Problem:
    return make_problem(
        load_program("flash_attention"),
        shape,
        fidelity=fidelity,
        fp32_acc=fp32,
        options={"causal"} if causal else set(),
        target=target,
    )


# ------------------------------------------------------------------------------------------ routing


@pytest.mark.parametrize(
    "hw_name,fp32,target,kernel",
    [
        (P150, True, KernelTarget.ttnn, ACCURATE),  # fp32 Dst on Blackhole: the ACCURATE recipe
        (P150, False, KernelTarget.ttnn, STREAMING),
        ("blackhole_p100a", True, KernelTarget.ttnn, ACCURATE),
        ("wormhole_n150", True, KernelTarget.ttnn, STREAMING),  # no routing on Wormhole
        ("wormhole_n150", False, KernelTarget.ttnn, STREAMING),
        (P150, True, KernelTarget.ttlang, STREAMING),  # the exported TT-Lang kernel is not ttnn's
    ],
)
def test_ttnn_sdpa_kernel_routing(hw_name: str, fp32: bool, target: KernelTarget, kernel: str) -> None:
    problem = attention("B=1,H=4,Sq=1024,Skv=1024,D=64", fp32=fp32, target=target)
    assert ttnn_sdpa_kernel(load_hardware(hw_name), problem) == kernel


# ------------------------------------------------------------------------------------------ L1 totals


def l1_bytes(hw: HardwareSpec, problem: Problem, depths: dict[str, int] | None = None) -> tuple[int, dict[str, int]]:
    """(L1 bytes per core, values) of ttnn's SDPA config 13x10 q256/k512 on ``problem``, with the buffer
    depths overridden by ``depths``."""
    schedule = sdpa_schedule(hw, problem)
    values = sdpa_values(
        schedule, TtnnSdpaConfig(compute_with_storage_grid_size=(13, 10), q_chunk_size=256, k_chunk_size=512)
    )
    given = dict(values)
    values.update({f"{t}_buffer_depth": d for t, d in (depths or {}).items()})
    solution = evaluate_values(schedule, values).result.solution
    assert solution is not None
    return solution.l1_bytes, given


# totals of ttnn's own program factories (streaming: sdpa_program_factory.cpp; ACCURATE: sdpa_recipe.cpp)
@pytest.mark.parametrize(
    "causal,fp32,depths,ttnn_depths,total",
    [
        (True, False, {"q": 2, "k": 2, "v": 2}, (2, 2, 2), 1_347_584),  # streaming, q double-buffered
        (True, False, {"q": 1, "k": 2, "v": 2}, (2, 2, 2), 1_282_048),  # streaming, q in one slot
        (False, True, {"q": 2, "k": 1, "v": 1}, (2, 1, 1), 1_335_296),  # ACCURATE
        (True, True, {"q": 2, "k": 1, "v": 1}, (2, 1, 1), 1_347_456),  # ACCURATE, causal
    ],
)
def test_sdpa_buffers_match_ttnn(
    p150: HardwareSpec, causal: bool, fp32: bool, depths: dict[str, int], ttnn_depths: tuple[int, int, int], total: int
) -> None:
    problem = attention(BIG, causal=causal, fp32=fp32, fidelity=Fidelity.hifi4 if fp32 else Fidelity.hifi2)
    assert ttnn_sdpa_kernel(p150, problem) == (ACCURATE if fp32 else STREAMING)
    got, values = l1_bytes(p150, problem, depths)
    # the depths ttnn allocates for this config are what sdpa_values gives
    assert tuple(values[f"{t}_buffer_depth"] for t in "qkv") == ttnn_depths
    assert got == total
