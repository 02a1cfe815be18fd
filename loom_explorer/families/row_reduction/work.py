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
a tile. TTNN's softmax (``sub`` then ``exp`` in the registers, one pack) is as the model chains it."""

from __future__ import annotations

from loom_explorer.families.row_reduction.program import RowReduction, analyse_row_reduction
from loom_explorer.families.row_reduction.signature import shipped_kernel
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.latency import eltwise_op_cycles
from loom_explorer.problem import KernelTarget, Problem

PACK_EVERY_OP = frozenset({"layernorm", "rmsnorm", "groupnorm"})  # TTNN's kernels that pack after each FPU op


def ttnn_norm_kernel(problem: Problem) -> str | None:
    """The shipped norm kernel TTNN runs for ``problem`` (``PACK_EVERY_OP``), or None (another target or
    program, or softmax)."""
    if problem.target is not KernelTarget.ttnn:
        return None
    kernel = shipped_kernel(problem.program)
    return kernel if kernel in PACK_EVERY_OP else None


def passes(hw: HardwareSpec, problem: Problem, st: RowReduction) -> list[tuple[str, int]]:
    """``(tensor, cycles per tile)`` of each pass over a block (``RowReduction.passes``): a reduction over its
    operand's tiles at the FPU's cost and a pack of its output's; a run of ops over its tensor's tiles, each
    op at its cost, and one pack; TTNN's norms (module docstring) a pack after every FPU op on a rows
    tensor, and the group norm's accumulation into the output (an FPU op and a pack a tile)."""
    c = hw.compute
    norm = ttnn_norm_kernel(problem)
    out: list[tuple[str, int]] = []
    for p in st.passes:
        if p.reduce is not None:
            out.append((p.reduce.operand, c.eltwise_tile_cycles))
        costs = [(op, eltwise_op_cycles(hw, problem, op)) for op in p.ops]
        out += [(p.tensor, cycles) for _, cycles in costs]
        fpu = sum(1 for op, cycles in costs if op.unit == "fpu" and cycles > 0)
        packs = fpu if norm is not None and st.kind(p.tensor) == "rows" and fpu > 1 else 1
        out += [(p.tensor, c.tile_pack_cycles)] * packs
    if norm == "groupnorm":
        out += [(st.output, c.eltwise_tile_cycles), (st.output, c.tile_pack_cycles)]
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
