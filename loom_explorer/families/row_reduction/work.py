"""The row-reduction family's work: the passes over a block with their cycles per tile, and the operations
and ideal cycles of the whole problem (the compute roofline).

TTNN's norm kernels (``KernelTarget.ttnn``) run every FPU op on a rows tensor as its own pass: they unpack
its operands from circular buffers and pack its result tiles to another before the next op starts
(``ttnn/cpp/ttnn/operations/normalization/layernorm/device/kernels/compute/layernorm.cpp`` @
b5410d983e539adeb3da7b0c24b08d49ca2457fa: ``x - E[x]``, its square, the scaling by ``1/sqrt``, ``* gamma``
and ``+ beta`` each ``pack_tile`` their ``blk`` tiles; the group norm's ``groupnorm_sharded_v2.cpp`` @
ccc20cfb19827414099acad1fc531b044b5dfba0 and ``groupnorm.cpp`` @ b011ee5c07c90a56bcf9bfff6b421ed3189e2e44
likewise for the masking, centring, re-masking, squaring and scaling), where the model chains a run of ops
in the destination registers and packs once; an SFPU op (``rsqrt``, ``exp``) runs in the registers of the op
before it. Their group norm then adds each group's normalised tiles into the output tile its group shares
with the others (``copy_tile`` for the first group of a tile, ``add_tiles`` after), one more FPU op and pack
a tile. TTNN's softmax (``sub`` then ``exp`` in the registers, one pack) is as the model chains it.

Every op that starts from circular buffers first unpacks its tiles into the source registers: the tile it
starts from (the first op of a run; every FPU op of TTNN's norms) and its operand's (a reduction: its
operand and the ``1/W`` scaler, a bfloat16 tile). Where the chip file gives the unpackers' rate ``U``
(``compute.unpack_bytes_per_cycle``: Wormhole's 64 B/cycle; Blackhole's is not a bottleneck), an op's tile
costs the longer of its math and its unpack, as the matmul's does (``model/latency.py``,
``matmul_cycles``):

    c_op' = max(c_op, ceil((b_source + b_operand) / U))

TTNN keeps the norms' and softmax's intermediates in Float32 tiles with fp32 accumulation and in bfloat16
otherwise, whatever the input's format (``cb_data_format`` in
``ttnn/cpp/ttnn/operations/normalization/layernorm/device/multi_core/layernorm_op_multi_core.cpp`` @
384607bd2e93a91367ed8c6ef255a8f7bde55eb7); the TT-Lang kernels keep them in the problem's format.

TTNN's norm and softmax kernels work a row in blocks of ``blk`` tiles, the largest divisor of the row's
``Wt`` tiles up to 8 (4 with fp32 accumulation: ``block_size`` in the same factory and in the softmax's),
and acquire and release the destination registers once per block of each pass (``ACQ()``/``REL()``,
``tile_regs_acquire``/``tile_regs_release`` around each ``blk`` or ``ndst`` tiles in ``layernorm.cpp`` and
``softmax.cpp`` @ 766145fdcf52e4ea20feeefe474123b5fe7f493c), once per row for a reduction or an op on the
row's column vector; their group norm once per tile row of a group (one tile: the groups' ``block_w``) and
once per tile it adds into the output. Each costs ``o = compute.subblock_overhead_cycles`` (the chip file's
acquire/release of a sub-block), so a pass over a row's tiles adds ``ceil(o * sections / blk)`` a tile
(``sections``: its packs, one per FPU op of TTNN's norms), and a reduction or a column-vector run ``o`` a
row.

TTNN's kernels run their multiplies and their sum reductions at the kernel's math fidelity (the compute
config's ``math_fidelity``, one define for the whole compute kernel). The FPU's multipliers take at most 5
bits of ``SrcA``'s mantissa and 7 of ``SrcB``'s, so a fidelity of ``f`` phases passes over every row of the
operands ``f`` times: ``ELWMUL`` runs its macro op once per fidelity phase of each face
(``eltwise_binary_configure_mop``: ``high_fidelity ? NUM_FIDELITY_PHASES : outerloop`` in
``tt_llk_wormhole_b0/llk_lib/llk_math_eltwise_binary.h`` @ 001c23a46fba8fea8f5646aa96d99c23c2143367, the
same in ``tt_llk_blackhole``), and a sum reduction issues ``GAPOOL`` once per phase
(``MATH_FIDELITY_PHASES - 1`` more in ``llk_math_reduce.h``), while ``ELWADD``/``ELWSUB`` and the max
reduction's ``GMPOOL`` do not multiply and run once. The phases are the chip file's ratio of a tile's
matmul at that fidelity to LoFi's (``compute.matmul_tile_cycles``: 1, 2, 3 and 4 for LoFi to HiFi4), so

    c_mul = c_fpu * phases(f),   c_sum = c_fpu * phases(f),   c_add = c_sub = c_max = c_fpu

before the unpack bound above (on Wormhole, with Float32 intermediates, the unpack of an op's two tiles
takes as long as a HiFi4 multiply: the bound hid this cost there, where Blackhole shows it)."""

from __future__ import annotations

import math

from loom_explorer.families.row_reduction.program import RowReduction, analyse_row_reduction
from loom_explorer.families.row_reduction.signature import shipped_kernel
from loom_explorer.families.row_reduction.ttnn_softmax import padded_columns
from loom_explorer.hardware.schema import DataFormat, Fidelity, HardwareSpec
from loom_explorer.model.latency import eltwise_op_cycles
from loom_explorer.problem import KernelTarget, Problem
from loom_explorer.program import Eltwise, Reduce

PACK_EVERY_OP = frozenset({"layernorm", "rmsnorm", "groupnorm"})  # TTNN's kernels that pack after each FPU op
SECTIONED = frozenset({*PACK_EVERY_OP, "softmax"})  # TTNN's kernels that acquire Dst per block of a pass
BLOCK_TILES, BLOCK_TILES_FP32 = 8, 4  # the factories' find_max_divisor(Wt, 8), (Wt, 4) with fp32 accumulation


def ttnn_kernel(problem: Problem) -> str | None:
    """The shipped kernel TTNN runs for ``problem`` (``KernelTarget.ttnn``), or None."""
    return shipped_kernel(problem.program) if problem.target is KernelTarget.ttnn else None


def row_block_tiles(problem: Problem, st: RowReduction, kernel: str) -> int:
    """``blk``: the tiles of a row TTNN's kernel works between two acquires of the destination registers
    (module docstring)."""
    if kernel == "groupnorm":
        return 1
    limit = BLOCK_TILES_FP32 if problem.fp32_acc else BLOCK_TILES
    wt = problem.tiles(st.cols_dim)
    return max(d for d in range(1, min(limit, wt) + 1) if wt % d == 0)


def ttnn_norm_kernel(problem: Problem) -> str | None:
    """The shipped norm kernel TTNN runs for ``problem`` (``PACK_EVERY_OP``), or None (another target or
    program, or softmax)."""
    kernel = ttnn_kernel(problem)
    return kernel if kernel in PACK_EVERY_OP else None


def tile_bytes(hw: HardwareSpec, problem: Problem, tensor: str) -> int:
    """Bytes of one tile of ``tensor`` in L1 as the kernel keeps it (module docstring): TTNN's intermediates
    Float32 with fp32 accumulation, else bfloat16; every other tensor in its format."""
    if problem.target is KernelTarget.ttnn and problem.program.tensor(tensor).role == "intermediate":
        return hw.tile_bytes[DataFormat.float32 if problem.fp32_acc else DataFormat.bfloat16]
    return hw.tile_bytes[problem.data_format(tensor)]


def unpack_bound(hw: HardwareSpec, problem: Problem, cycles: int, tensors: list[str | None]) -> int:
    """``max(c_op, ceil(bytes / U))`` of an op whose tile unpacks one tile of each of ``tensors`` (None: a
    bfloat16 scaler tile); ``c_op`` without ``U`` or for an op that is off (module docstring)."""
    rate = hw.compute.unpack_bytes_per_cycle
    if rate is None or cycles == 0:
        return cycles
    nbytes = sum(hw.tile_bytes[DataFormat.bfloat16] if t is None else tile_bytes(hw, problem, t) for t in tensors)
    return max(cycles, math.ceil(nbytes / rate))


def fidelity_phases(hw: HardwareSpec, problem: Problem) -> int:
    """``phases(f)``: the FPU's passes over a multiply's operands at the problem's fidelity, the chip file's
    ``matmul_tile_cycles[f] / matmul_tile_cycles[lofi]`` (module docstring)."""
    cycles = hw.compute.matmul_tile_cycles
    return max(1, cycles[problem.fidelity] // cycles[Fidelity.lofi])


def fpu_op_cycles(hw: HardwareSpec, problem: Problem, op: Eltwise) -> int:
    """An op's cycles a tile (``eltwise_op_cycles``); a multiply of TTNN's kernels (``KernelTarget.ttnn``)
    once per fidelity phase (module docstring)."""
    cycles = eltwise_op_cycles(hw, problem, op)
    if op.unit == "fpu" and op.op == "mul" and problem.target is KernelTarget.ttnn:
        return cycles * fidelity_phases(hw, problem)
    return cycles


def reduce_tile_cycles(hw: HardwareSpec, problem: Problem, op: Reduce) -> int:
    """A reduction's FPU cycles a tile: ``c_fpu``; a sum or mean of TTNN's kernels once per fidelity phase
    (module docstring)."""
    c = hw.compute.eltwise_tile_cycles
    if op.op != "max" and problem.target is KernelTarget.ttnn:
        return c * fidelity_phases(hw, problem)
    return c


def skips_max(problem: Problem, kernel: str | None, reduce: Reduce) -> bool:
    """Whether TTNN's kernel skips the max reduction ``reduce``: its softmax with ``numeric_stable=False``
    (the program option ``unstable``) has no ``NUMERIC_STABLE`` define, so ``softmax.cpp`` @
    766145fdcf52e4ea20feeefe474123b5fe7f493c reduces no max and copies each tile to the registers
    (``copy_tile``) where the stable kernel subtracts the max (``sub_bcast_cols``) before ``exp``. The copy
    costs as the subtraction it replaces (an FPU op a tile with its unpack), so only the max's pass goes."""
    return kernel == "softmax" and reduce.op == "max" and problem.has_option("unstable")


def passes(hw: HardwareSpec, problem: Problem, st: RowReduction) -> list[tuple[str, int]]:
    """``(tensor, cycles per tile)`` of each pass over a block (``RowReduction.passes``): a reduction over its
    operand's tiles at the FPU's cost and a pack of its output's; a run of ops over its tensor's tiles, each
    op at its cost, and one pack; TTNN's norms (module docstring) a pack after every FPU op on a rows
    tensor, and the group norm's accumulation into the output (an FPU op and a pack a tile). Each op's tile
    at least its unpack (module docstring)."""
    c = hw.compute
    norm = ttnn_norm_kernel(problem)
    kernel = ttnn_kernel(problem)
    sectioned = kernel in SECTIONED
    o = c.subblock_overhead_cycles if sectioned else 0
    blk = row_block_tiles(problem, st, kernel) if kernel is not None and sectioned else 1
    out: list[tuple[str, int]] = []
    first = st.passes[0]
    if padded_columns(problem, st) > 0 and first.reduce is not None:
        # TTNN's softmax copies a padded row once more to mask it (``ttnn_softmax.py``): an FPU op, a pack
        # and a register acquire per block
        x = first.reduce.operand
        out += [(x, unpack_bound(hw, problem, c.eltwise_tile_cycles, [x])), (x, c.tile_pack_cycles)]
        out += [(x, -(-o // blk))] if o else []
    for p in st.passes:
        if p.reduce is not None and skips_max(problem, kernel, p.reduce):
            pass  # TTNN's numeric_stable=False softmax takes no max (``skips_max``)
        elif p.reduce is not None:
            reduce = reduce_tile_cycles(hw, problem, p.reduce)
            out.append((p.reduce.operand, unpack_bound(hw, problem, reduce, [p.reduce.operand, None])))
            if o:
                out.append((p.tensor, o))
        costs = [(op, fpu_op_cycles(hw, problem, op)) for op in p.ops]
        for i, (op, cycles) in enumerate(costs):
            unpacked = i == 0 or (norm is not None and op.unit == "fpu" and st.kind(p.tensor) == "rows")
            source = (op.source or p.tensor) if unpacked else None
            operand = op.operand if op.unit == "fpu" or i == 0 else None
            out.append((p.tensor, unpack_bound(hw, problem, cycles, [t for t in (source, operand) if t])))
        fpu = sum(1 for op, cycles in costs if op.unit == "fpu" and cycles > 0)
        packs = fpu if norm is not None and st.kind(p.tensor) == "rows" and fpu > 1 else 1
        out += [(p.tensor, c.tile_pack_cycles)] * packs
        if o and any(cycles for _, cycles in costs):
            out.append((p.tensor, -(-o * packs // blk) if st.kind(p.tensor) == "rows" else o))
    if norm == "groupnorm":
        out += [(st.output, c.eltwise_tile_cycles), (st.output, c.tile_pack_cycles)]
        out += [(st.output, o)] if o else []
    return out


def row_reduction_work(hw: HardwareSpec, problem: Problem) -> tuple[int, int]:
    """(operations, one core's cycles at the ideal rates) of the whole problem: each op once per element of
    its tensor (a reduction per element reduced); every pass over all the tiles, unsplit."""
    st = analyse_row_reduction(problem.program)
    rows, cols = st.dims
    tiles = {"rows": problem.tiles(rows) * problem.tiles(cols), "col": problem.tiles(rows)}
    elements = {"rows": problem.elements(rows) * problem.elements(cols), "col": problem.elements(rows)}
    operations = sum(
        elements[st.kind(p.reduce.operand if p.reduce else p.tensor)] * max(1, len(p.ops)) for p in st.passes
    )
    return operations, sum(tiles[st.kind(t)] * cycles for t, cycles in passes(hw, problem, st))
