"""``work.py::staging_cycles``: the running value moved between L1 and Dst around a shipped kernel's ops, counted
by hand from each program's ops (an SFPU op on a tile in L1 copies it into Dst first; an FPU op after another op
needs the running value packed back to L1)."""

from __future__ import annotations

import pytest

from loom_explorer.families.elementwise.program import analyse_elementwise
from loom_explorer.families.elementwise.work import staging_cycles
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program


@pytest.mark.parametrize(
    ("kernel", "copies", "packs"),
    [
        ("unary", 1, 0),  # y = f(x): x copied into Dst, then the SFPU op
        ("binary", 0, 0),  # y = a + b: the FPU reads both from L1, leaves y in Dst
        ("binary_act", 0, 0),  # y = f(a + b): the SFPU op on the FPU's result in Dst
        ("swiglu", 1, 1),  # y = silu(a) * b: a copied in, silu, packed back for the FPU multiply
        ("rotary", 0, 3),  # four FPU ops: the three intermediates packed back to L1 between them
    ],
)
def test_staging_by_hand(kernel: str, copies: int, packs: int) -> None:
    hw = load_hardware("wormhole_n150")
    c = hw.compute
    program = load_program(kernel)
    problem = make_problem(program, program.example_shape, activation="gelu" if program.uses_activation else None)
    cycles = staging_cycles(hw, problem, analyse_elementwise(program))
    assert cycles == copies * c.eltwise_tile_cycles + packs * c.tile_pack_cycles
