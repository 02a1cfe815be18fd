"""The row-reduction family's model (softmax, RMSNorm, LayerNorm): parameters, traffic, L1 buffers and
latency of one candidate.

Notation (counts in 32x32 tiles): rows ``R`` (parallel) x columns ``C`` (reduced). The rows may be spread
over a grid axis (or a 1-D layout); the columns may be split over the other axis (or alone over a 1-D
layout), over ``g`` cores. A core's share is ``r x c`` tiles (``r = per_core_R`` or ``R``, ``c =
per_core_C`` or ``C``), worked in blocks of ``block_h`` whole tile rows of its share (``block_h | r``):

    n = r / block_h blocks,   a rows tensor's block: B = block_h * c tiles,   a column vector's: block_h.

Per block, each input indexed by rows and columns streams its ``B`` tiles and each input column vector its
``block_h`` (a buffer of ``depth_X`` blocks each); a row vector (``gamma[C]``) is read once per core (its
``c`` tiles, held), as is a scalar. The block's intermediates and outputs stay in L1 while the ops run, one
pass each, in the program's order (``program/row_reduction.py``).

Per block, on the slowest core (``b_X`` bytes per tile; ``c_op`` an op's cycles per tile from the hardware
file, ``compute.eltwise_tile_cycles`` for an FPU op and for a reduction's tile, ``compute.sfpu_tile_cycles``
for an SFPU op; ``c_pack = compute.tile_pack_cycles``):

    compute = sum_ops tiles(op) * c_op + sum_runs tiles(T) * c_pack     a run: consecutive ops on one tensor
              (tiles(op): B for an op on a rows tensor or a reduction, block_h for an op on a column vector)

With the columns split over ``g > 1`` cores, each reduction also gathers the ``g - 1`` other cores'
partial column vectors to the first core along the axis, combines them there and multicasts the result
back (TTNN's sharded LayerNorm):

    round   = ceil((g-1)*block_h*b_acc / w_unicast) + h*(g-1) + L_tx        gather
            + (g-1)*block_h*c_fpu + block_h*c_pack                          combine
            + ceil(block_h*b / w_mcast) + h*(g-1) + L_handshake             multicast back
    rounds  = (number of reductions) * round

    read_X  = ceil(B_X*b_X / r_core) + L_read(depth_X) + mcast_X      each input read every block
    reads   = sum_X read_X;   writes = sum_Y max(ceil(B*b_Y / w_core), link_Y)
    chip    = ceil(sum_X readers_X * B_X*b_X / R_chip)
    step    = max(compute + rounds + sum_{X: depth_X = 1} read_X, reads, writes, chip, link_X...)

    T_total = launch + fill + n*step + drain
    fill    = sum_{X read every block} (ceil(b_X / r_core) + L_read)
            + sum_{X read once} (ceil(tiles_X*b_X / r_core) + L_read [+ its multicast])
    drain   = sum_Y ceil(b_Y / w_core) + L_write

Within a block the passes stream: the reader pushes the block's tiles while the first pass consumes them
and the writer drains the last pass's tiles as they come (TTNN's norm and softmax kernels push and pop a
few tiles at a time), so a block costs the longest of its reads, passes and writes, and only the first
tile read and the last tile written are outside the blocks.

Named terms: ``launch``, ``fill``, ``compute = n*compute``, ``gather = n*rounds`` (split columns only),
``data_movement = n*(step - compute - rounds)``, ``write_back = drain``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.domain import Domain
from loom_explorer.model.dram_reads import reads_dram
from loom_explorer.model.expr import Expr, Var, ceil_div, ceil_rate, const, mul, total
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.model.latency import (
    block_bytes,
    eltwise_op_cycles,
    one_reader_step,
    read_once_cycles,
    streamed_dram_read_bytes,
    write_transfer_cycles,
)
from loom_explorer.model.quantities import (
    BUFFER_DEPTHS,
    GridQuantities,
    grid_params,
    l1_block_limit,
    param_maker,
    spread_domain,
)
from loom_explorer.model.schedule import L1Buffer, LatencyTerm, Param
from loom_explorer.model.traffic import WRITER_NOC, input_flows, write_flow
from loom_explorer.noc.tables import Senders
from loom_explorer.problem import Problem
from loom_explorer.program.row_reduction import RowReduction, analyse_row_reduction

if TYPE_CHECKING:
    from loom_explorer.model.noc_bound import LinkShare

_HEADS: dict[str, Senders] = {"x": "row_heads", "y": "col_heads", "xy": "origin"}


@dataclass(frozen=True, eq=False)
class RowReductionQuantities(GridQuantities):
    st: RowReduction
    block_h: Var

    def share(self, dim: str) -> Expr:
        """A core's tiles of ``dim``: ``per_core_dim``, or all of it on no axis."""
        return self.per_core[dim] if dim in self.per_core else const(self.problem.tiles(dim))

    @property
    def cols(self) -> Expr:
        """``c``: a core's columns."""
        return self.share(self.st.cols_dim)

    @property
    def blocks(self) -> Expr:
        """``n``: blocks per core (exact under the divisibility constraint)."""
        return ceil_div(self.share(self.st.rows_dim), self.block_h)

    def tiles(self, tensor: str) -> Expr:
        """Tiles of ``tensor`` in one block (a row vector: the ``c`` tiles a core holds)."""
        return {"rows": mul(self.block_h, self.cols), "col": self.block_h, "row": self.cols,
                "scalar": const(1)}[self.st.kind(tensor)]

    def block_tiles(self, tensor: str) -> Expr:
        return self.tiles(tensor)

    def resident_tiles(self, tensor: str) -> Expr:
        """Tiles of an L1-resident tensor one core holds: its share of the tensor's dimensions."""
        rows = self.share(self.st.rows_dim)
        return {"rows": mul(rows, self.cols), "col": rows, "row": self.cols,
                "scalar": const(1)}[self.st.kind(tensor)]

    @property
    def per_block(self) -> tuple[str, ...]:
        """Inputs read every block: the rows inputs and the column vectors."""
        return tuple(t for t in self.streamed if self.st.kind(t) in ("rows", "col"))

    @property
    def once(self) -> tuple[str, ...]:
        """Inputs read once per core: row vectors and scalars."""
        return tuple(t for t in self.streamed if t not in self.per_block)

    @property
    def split_cores(self) -> Expr:
        """``g``: cores a row's columns are split over (1 when they are not)."""
        axis = self.candidate.gather_axis
        return const(1) if axis is None else self.axis_cores(axis)

    @property
    def output(self) -> str:
        return self.st.output

    @property
    def dram_outputs(self) -> tuple[str, ...]:
        return tuple(t for t in self.st.outputs if not self.problem.placement(t).in_l1)

    def divisibility_pairs(self) -> list[tuple[Var, Expr, str]]:
        rows = self.st.rows_dim
        return [(self.block_h, self.per_core[rows], f"per_core_{rows}")] if rows in self.per_core else []

    def subblock_pairs(self) -> list[tuple[str, Var, Var]]:
        return []


def build_row_reduction_quantities(hw: HardwareSpec, problem: Problem, candidate: Candidate) -> RowReductionQuantities:
    """Parameters: ``per_core_d`` as the other families' (``spread_domain``); ``block_h`` over ``1..R`` (the
    divisors of ``R`` when the rows are on no axis), cut where one tile row of the held tensors alone
    overflows L1; a buffer depth per input read every block."""
    st = analyse_row_reduction(problem.program)
    params: list[Param] = []
    param = param_maker(params)
    gx, gy = grid_params(hw, candidate, param)
    per_core: dict[str, Var] = {}
    for axis, dim in candidate.axes:
        extent = problem.tiles(dim)
        domain, bound = spread_domain(hw, axis, extent, extent)
        per_core[dim] = param(f"per_core_{dim}", domain, f"{dim} tiles per core", "tiles", bound)
    rows, cols = st.dims
    least_cols = per_core[cols].values.min if cols in per_core else problem.tiles(cols)
    row_bytes = least_cols * sum(hw.tile_bytes[problem.data_format(t)] for t in (*st.full, *st.held)
                                 if st.kind(t) == "rows")
    limit = l1_block_limit(hw, max(1, row_bytes), 0)
    extent = problem.tiles(rows)
    values = Domain.range(1, min(extent, limit)) if rows in per_core else \
        Domain.of(v for v in range(1, min(extent, limit) + 1) if extent % v == 0)
    block_h = param("block_h", values, f"{rows} tiles per block (whole rows of the share)", "tiles",
                    f"a block over {limit:,} tile rows overflows L1 on its own" if limit < extent else "")
    streamed = tuple(t for t, _ in candidate.comms if st.kind(t) in ("rows", "col"))
    depth = {t: param(f"{t}_buffer_depth", BUFFER_DEPTHS, f"{t} circular buffer depth", "blocks") for t in streamed}
    return RowReductionQuantities(hw=hw, problem=problem, candidate=candidate, params=tuple(params), grid_x=gx,
                                  grid_y=gy, per_core=per_core, depth=depth, st=st, block_h=block_h)


def row_reduction_flows(q: RowReductionQuantities) -> list[TrafficFlow]:
    """Inputs read (and multicast) every block or once; with split columns, each reduction's partials
    gathered to the first core along the axis and the combined vector multicast back; outputs written."""
    n = q.blocks
    flows = input_flows(q, {t: (n if t in q.per_block else const(1)) for t in q.streamed})
    axis = q.candidate.gather_axis
    if axis is not None:
        for r in q.st.reductions:
            flows.append(TrafficFlow(f"{r.out} partials gather", r.out, "gather", "all", axis, WRITER_NOC,
                                     mul(q.block_h, q.acc_tile_bytes), n))
            flows.append(TrafficFlow(f"{r.out} multicast", r.out, "multicast", _HEADS[axis], axis, WRITER_NOC,
                                     mul(q.block_h, q.tile_bytes(r.out)), n))
    return [*flows, *(write_flow(q, t, q.tiles(t), n) for t in q.dram_outputs)]


def row_reduction_buffers(q: RowReductionQuantities) -> list[L1Buffer]:
    """Per core: each input's circular buffer (``depth`` blocks; a row vector's or scalar's tiles, held), or
    its resident shard when it lives in L1; a block per version of each intermediate (each pass stores a new
    one), two of an output (its shard when it lives in L1); a scaler tile
    per kind of reduction (ones; ``1/W`` for a mean); with split columns, ``(R*g + 5)*block_h`` tiles for
    ``R`` reductions (module docstring of ``export/ttlang_row_reduction.py``: every core's, as every count
    is the slowest core's)."""
    out: list[L1Buffer] = []
    for t in q.streamed:
        if q.problem.placement(t).in_l1:
            out.append(L1Buffer(f"{t}_shard", mul(q.resident_tiles(t), q.tile_bytes(t)), f"{t} resident shard"))
        elif t in q.per_block:
            out.append(L1Buffer(t, mul(q.depth[t], q.tiles(t), q.tile_bytes(t)), f"{t} circular buffer"))
        else:
            out.append(L1Buffer(t, mul(q.tiles(t), q.tile_bytes(t)), f"{t}, held for the whole kernel"))
    for p in q.st.passes:
        if p.tensor in q.st.outputs and q.problem.placement(p.tensor).in_l1:
            out.append(L1Buffer(f"{p.tensor}_shard", mul(q.resident_tiles(p.tensor), q.tile_bytes(p.tensor)),
                                f"{p.tensor} shard (lives in L1)"))
            continue
        blocks = 2 if p.tensor in q.st.outputs else 1
        out.append(L1Buffer(f"{p.tensor}{p.version}", mul(blocks, q.tiles(p.tensor), q.tile_bytes(p.tensor)),
                            f"{p.tensor}, version {p.version}{' (double-buffered)' if blocks == 2 else ''}"))
    kinds = {r.op == "mean" for r in q.st.reductions}
    tile = q.tile_bytes(q.st.full[0])
    out.append(L1Buffer("scalers", const(len(kinds) * tile), "the reductions' scaler tiles"))
    reductions = len(q.st.reductions)
    if q.candidate.gather_axis is not None and reductions:
        out.append(L1Buffer("partials", mul(reductions * q.split_cores + 5, q.block_h, q.acc_tile_bytes),
                            "per reduction the g - 1 partials the first core receives (a slot per gather pipe) and "
                            "the result another core receives; the own or sent partial, two accumulator blocks, "
                            "the result sent"))
    return out


def passes(hw: HardwareSpec, problem: Problem, st: RowReduction) -> list[tuple[str, int]]:
    """``(tensor, cycles per tile)`` of each pass over a block (``RowReduction.passes``): a reduction over its
    operand's tiles at the FPU's cost and a pack of its output's; a run of ops over its tensor's tiles, each
    op at its cost, and one pack."""
    out: list[tuple[str, int]] = []
    for p in st.passes:
        if p.reduce is not None:
            out.append((p.reduce.operand, hw.compute.eltwise_tile_cycles))
        out += [(p.tensor, eltwise_op_cycles(hw, problem, op)) for op in p.ops]
        out.append((p.tensor, hw.compute.tile_pack_cycles))
    return out


def gather_round_cycles(q: RowReductionQuantities) -> Expr:
    """One reduction's gather, combine and multicast back (module docstring); 0 without split columns."""
    if q.candidate.gather_axis is None:
        return const(0)
    g, noc, c = q.split_cores, q.hw.noc, q.hw.compute
    gather = (ceil_rate(mul(g - 1, q.block_h, q.acc_tile_bytes), noc.unicast_bytes_per_cycle)
              + mul(noc.hop_latency_cycles, g - 1) + noc.transaction_latency_cycles)
    combine = mul(g - 1, q.block_h, c.eltwise_tile_cycles) + mul(q.block_h, c.tile_pack_cycles)
    back = (ceil_rate(mul(q.block_h, q.tile_bytes(q.st.reductions[0].out)), noc.multicast_bytes_per_cycle)
            + mul(noc.hop_latency_cycles, g - 1) + noc.multicast_handshake_cycles)
    return gather + combine + back


def row_reduction_latency_terms(q: RowReductionQuantities, step_links: Sequence[LinkShare] = (),
                                write_links: Sequence[LinkShare] = ()) -> tuple[Expr, list[LatencyTerm], Expr]:
    """The objective, its named terms and a lower bound (module docstring); the lower bound drops
    ``data_movement`` (``step >= compute + rounds``)."""
    hw = q.hw
    compute = total(mul(q.tiles(t), cycles) for t, cycles in passes(hw, q.problem, q.st))
    rounds = mul(len(q.st.reductions), gather_round_cycles(q))
    write_block = total(write_transfer_cycles(q, t, q.tiles(t), write_links) for t in q.dram_outputs)
    links = [link.cycles(q, block_bytes(q, link.tensor)) for link in step_links]
    step, _ = one_reader_step(q, compute + rounds, q.per_block, write_block, links)
    held = read_once_cycles(q, q.once)
    first = total(ceil_rate(q.tile_bytes(t), hw.dram.core_read_bytes_per_cycle) + hw.dram.read_latency_cycles
                  for t in q.per_block if reads_dram(q, t))
    fill = first + held
    drain = total(ceil_rate(q.tile_bytes(t), hw.dram.core_write_bytes_per_cycle) for t in q.dram_outputs) + \
        (hw.dram.write_latency_cycles if q.dram_outputs else 0)
    launch = const(hw.compute.kernel_launch_cycles)
    n = q.blocks
    objective = launch + fill + mul(n, step) + drain
    terms = [LatencyTerm("launch", launch, "fixed per-op launch on the device"),
             LatencyTerm("fill", fill, "the first tiles, and the inputs read once, loaded before any compute"),
             LatencyTerm("compute", mul(n, compute), "the reductions and element-wise passes, and their packs")]
    if q.candidate.gather_axis is not None:
        terms.append(LatencyTerm("gather", mul(n, rounds),
                                 "each reduction's partials gathered, combined and multicast back"))
    terms += [LatencyTerm("data_movement", mul(n, step) - mul(n, compute + rounds),
                          "blocks where reads, writes, shared DRAM bandwidth or a NoC link outlast compute"),
              LatencyTerm("write_back", drain, "the last tile written to DRAM")]
    lower = launch + fill + mul(n, compute + rounds) + drain
    return objective, terms, lower


def row_reduction_dram_read_bytes(q: RowReductionQuantities) -> Expr:
    """Bytes read from DRAM by all cores: inputs read every block once per block, the others once."""
    return streamed_dram_read_bytes(q, q.blocks, q.per_block)


def row_reduction_work(hw: HardwareSpec, problem: Problem) -> tuple[int, int]:
    """(operations, one core's cycles at the ideal rates) of the whole problem: each op once per element of
    its tensor (a reduction per element reduced); every pass over all the tiles, unsplit."""
    st = analyse_row_reduction(problem.program)
    rows, cols = st.dims
    tiles = {"rows": problem.tiles(rows) * problem.tiles(cols), "col": problem.tiles(rows)}
    elements = {"rows": problem.elements(rows) * problem.elements(cols), "col": problem.elements(rows)}
    operations = sum(elements[st.kind(p.reduce.operand if p.reduce else p.tensor)] * max(1, len(p.ops))
                     for p in st.passes)
    return operations, sum(tiles[st.kind(t)] * cycles for t, cycles in passes(hw, problem, st))
