"""The SFPU's cycles per tile for the ops ttnn's element-wise kernels run, counted from the LLK functions that
run them.

An SFPU op on a tile in Dst is one LLK function (``_llk_math_eltwise_unary_sfpu_params_``) that calls the
op's ``calculate_*`` loop once per face, 4 faces of 16x16 in the default ``VectorMode::RC``, each loop
``ITERATIONS = 8`` passes of the loop body over 32 lanes (two rows of the face: ``dst_reg++``). The SFPU is a
32-lane SIMD unit issuing one instruction a cycle (tt-isa-documentation, ``WormholeB0/TensixTile/
TensixCoprocessor/VectorUnit.md``; Blackhole's is the same width), and it runs every instruction of a
``v_if``/``v_else`` on every lane, the condition only masking the write: both branches cost. So

    c_sfpu(op) = (1024 / 32) * s_op = 32 * s_op      cycles per tile

``s_op`` the instruction slots of one pass of the op's loop body (``LLK_SLOTS``). They are counted from the
sfpi source by one rule (an estimate, the compiled code not being at hand): one slot for each Dst load and
store, each arithmetic op (``SFPMAD``: a multiply, an add, a multiply-add), each bit or exponent op
(``setsgn``, ``setexp``, ``exexp``, ``abs``, a shift, an integer add), each comparison and each
``v_if``/``v_elseif``/``v_else``/``v_endif`` (the condition-code stack); a float immediate costs one
``SFPLOADI`` when it fits 16 bits (a bfloat16 value: ``0.5``, ``2.5``) and two when it needs 32
(``_sfpu_load_imm32_``: the low and high halves), a value of a constant register (``vConst1``,
``vConstFloatPrgm0``) none; loops are unrolled. Instruction latencies the code must pad with ``SFPNOP``
(an ``SFPMAD`` result used at once on Wormhole) are not counted: a lower bound there.

Counted in tenstorrent/tt-llk ``tt_llk_wormhole_b0/common/inc/sfpu/`` @36b092e8 (Blackhole's functions
are the same sfpi code), for the variants ttnn's unary op runs by default (the ``op_chain``'s parameter 0:
not the fast approximation):

* ``relu`` (``ckernel_sfpu_relu.h``, ``_relu_min_impl_`` with threshold 0): ``SFPLOAD``, ``SFPMOV``,
  ``SFPSWAP``, ``SFPSTORE``, the swap taking two cycles (the comment on ``SFPSWAP`` in
  ``ckernel_sfpu_exp.h``: "takes 2 cycles and ... is not pipelined"): 5;
* ``exp`` (``ckernel_sfpu_exp.h``, ``_calculate_exponential_piecewise_`` not approximate: ``_sfpu_exp_`` of
  ``|x|`` and, under ``v_if (x < 0)``, ``_sfpu_reciprocal_<2>``): load and ``setsgn`` 2; ``_sfpu_exp_`` 33
  (``exexp``, a ``v_if`` with its comparison, ``setexp``, ``v_endif``, two multiply-adds and an immediate,
  a ``v_if`` with its comparison, a square, 7 x (integer subtract, narrowing comparison, square),
  ``v_endif``); ``v_if`` and comparison 2; ``_sfpu_reciprocal_<2>`` 13 (``setman`` twice, ``~``, 8
  multiply-adds, the ``0.5`` immediate, ``setsgn``); ``v_endif`` and store 2: 52;
* ``recip`` (``ckernel_sfpu_recip.h``, ``_calculate_reciprocal_internal_`` on a bfloat16 Dst:
  ``_sfpu_reciprocal_<1>`` then ``float_to_fp16b``): load, 11 (one Newton step, two multiply-adds, fewer),
  the rounding, store: 14;
* ``gelu`` (``ckernel_sfpu_gelu.h``, ``_calculate_gelu_accurate_``: ``x * cdf(x)``, ``ckernel_sfpu_cdf.h``):
  ``_calculate_pos_cdf_appx_`` is 28 (a ``v_if`` on ``x < 2.5``, a degree-4 polynomial in Horner form, four
  multiply-adds and five 32-bit immediates, the ``v_else`` line and its two immediates, ``v_endif``, the
  clamp to 1 in a ``v_if``), run on both branches of ``v_if (x < 0)``; with the load, the zero, the
  negation, ``1 - cdf``, the condition codes, the scaling by ``x`` and the store: 66;
* ``silu`` (``ckernel_sfpu_silu.h``: ``x * sigmoid(|x|)`` by a line below 1 and a degree-4 polynomial below
  5, ``1 - s`` for ``x < 0``): 33;
* ``sigmoid`` (``ckernel_sfpu_sigmoid.h``: a six-entry piecewise-linear ``lut2`` plus ``0.5``): load,
  ``SFPLUTFP32``, the immediate and the add, store: 5;
* ``erf`` (tenstorrent/tt-metal ``tt_metal/hw/ckernels/wormhole_b0/metal/llk_api/llk_sfpu/
  ckernel_sfpu_erf_erfc.h`` @07368c4a, ``calculate_erf``): ``calculate_erf_body`` is 40 (three ``v_if``
  levels on ``x >= 3``, ``x >= 1``, ``x >= 0``, two degree-4 polynomials with five 32-bit immediates each),
  run on both branches of ``v_if (x < 0)``; with the load, the two negations, the condition codes and the
  store: 88.

An op without a count here (``rsqrt``, or an op a user's hardware file adds) keeps the hardware file's
``compute.sfpu_tile_cycles``.
"""

from __future__ import annotations

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.problem import ProblemError

TILE_ELEMENTS = 32 * 32
SFPU_LANES = 32
"""The SFPU's SIMD width: one instruction over 32 lanes a cycle (tt-isa-documentation VectorUnit.md)."""

PASSES_PER_TILE = TILE_ELEMENTS // SFPU_LANES
"""Passes of an op's loop body over one tile: 4 faces x ``ITERATIONS = 8`` (module docstring)."""

LLK_SLOTS: dict[str, int] = {
    "relu": 5,
    "exp": 52,
    "recip": 14,
    "gelu": 66,
    "silu": 33,
    "sigmoid": 5,
    "erf": 88,
}
"""Instruction slots of one pass of each op's LLK loop body (module docstring: how each is counted)."""


def sfpu_tile_cycles(hw: HardwareSpec, name: str) -> int:
    """Cycles of the SFPU op (or ``+``-chain of ops, run one after another on the tile) ``name`` on one tile:
    ``PASSES_PER_TILE * LLK_SLOTS[op]`` summed over the chain; an op without a count takes the hardware file's
    ``compute.sfpu_tile_cycles``; ProblemError for an op neither costs."""
    total = 0
    for part in name.split("+"):
        if part in LLK_SLOTS:
            total += PASSES_PER_TILE * LLK_SLOTS[part]
        elif part in hw.compute.sfpu_tile_cycles:
            total += hw.compute.sfpu_tile_cycles[part]
        else:
            known = sorted({*LLK_SLOTS, *hw.compute.sfpu_tile_cycles})
            raise ProblemError(f"no SFPU cost for op {part!r} on {hw.name} (costed: {', '.join(known)})")
    return total
