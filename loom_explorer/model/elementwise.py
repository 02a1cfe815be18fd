"""The element-wise family's model: parameters, traffic, L1 buffers and latency of one candidate.

Notation (counts in 32x32 tiles): the iteration space is rows ``R`` x columns ``C`` (the program's two
dimensions, as a TTNN tensor's last two). The candidate puts one or both on grid axes, or deals all tiles
out row-major over a 1-D layout (*flattened*, ``H*W@xy``); ``per_core_d`` is a core's share (coverage
allows a ragged tail: the host pads the tensors), and a dimension on no axis is whole on every core.

*Rectangular* layouts: a core's share is ``r x c`` tiles (``r = per_core_R`` or ``R``, likewise ``c``),
worked in blocks of ``block_h x block_w`` (``block_h | r``, ``block_w | c``), rows of blocks outer:

    n = (r / block_h) * (c / block_w) blocks of  B = block_h * block_w  output tiles.

*Flattened*: a core's share is a run of ``per_core_R*C`` tiles in row-major order, worked in blocks of
``block`` tiles (``block | per_core``), ``n = per_core / block``, ``B = block``.

Per block, every full-rank input streams its ``B`` tiles; a broadcast input its tiles for the block: a
row vector (indexed by the columns only) ``block_w`` tiles, a column vector ``block_h`` (flattened: one
tile per output tile, ``B``); a scalar (indexed by nothing) is read once. Every input that streams has a
circular buffer of ``depth_X`` blocks; every output a double-buffered block. An input may be read from
DRAM by every core, or by the first core of its row / column / grid and multicast along the axis it is
shared along.

Per block, on the slowest core (``b_X`` bytes per tile of ``X``, ``c_op`` each op's cycles per tile from
the hardware file: ``compute.eltwise_tile_cycles`` on the FPU, ``compute.sfpu_tile_cycles[op]`` on the
SFPU; ``c_pack = compute.tile_pack_cycles`` per output tile):

    read_X  = ceil(B_X*b_X / r_core) + L_read(depth_X) + mcast_X   each streamed input (B_X its block tiles)
    reads   = sum_X read_X                                       (one reader, one input after another)
    compute = B*(sum_op c_op + outputs*c_pack)
    writes  = sum_Y max(ceil(B*b_Y / w_core), link_Y)            each output written to DRAM
    chip    = ceil(sum_X readers_X * B_X*b_X / R_chip)           (every reader at once)
    step    = max(compute + sum_{X: depth_X = 1} read_X, reads, writes, chip, link_X...)

and the whole kernel

    T_total = launch + fill + n*step + drain
    fill    = reads + sum_{scalar X} (ceil(b_X / r_core) + L_read [+ its multicast])
    drain   = writes + L_write                                   (the last block's write-back)

The named terms (``launch``, ``fill``, ``compute = n*compute``, ``data_movement = n*(step - compute)``,
``write_back = drain``) sum to the total, as for the other families.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.domain import Domain
from loom_explorer.model.dram_reads import dram_readers
from loom_explorer.model.expr import Expr, Var, ceil_div, ceil_rate, const, maximum, mul, total
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
from loom_explorer.model.traffic import input_flows, write_flow
from loom_explorer.problem import Problem, ProblemError
from loom_explorer.program.elementwise import Elementwise, analyse_elementwise

if TYPE_CHECKING:
    from loom_explorer.model.noc_bound import LinkShare


def tiles_of(problem: Problem, dims: Sequence[str]) -> int:
    """Tiles of ``dims`` together: the product of their tile counts."""
    return math.prod(problem.tiles(d) for d in dims)


@dataclass(frozen=True, eq=False)
class ElementwiseQuantities(GridQuantities):
    """``block_h``/``block_w`` are the block's sides on a rectangular layout; a flattened layout's block is
    a run of ``block_w`` tiles (its parameter ``block``) and ``block_h`` is 1."""

    st: Elementwise
    block_h: Expr
    block_w: Expr

    def units(self, dim: str) -> int:
        return self.problem.tiles(dim)

    def extent(self, dim: str) -> int:
        """Tiles of a dimension, or of several flattened (``H*W``)."""
        return tiles_of(self.problem, dim.split("*"))

    def share(self, dim: str) -> Expr:
        """A core's tiles of ``dim`` on a rectangular layout: ``per_core_dim``, or all of it on no axis."""
        return self.per_core[dim] if dim in self.per_core else const(self.units(dim))

    @property
    def flat(self) -> str | None:
        """The flattened axis entry (``H*W``), if the layout deals all tiles out row-major."""
        return next((carried for _, carried in self.candidate.axes if "*" in carried), None)

    @property
    def core_tiles(self) -> Expr:
        """Output tiles of the slowest core: ``r * c``, or the flattened run."""
        if self.flat is not None:
            return self.per_core[self.flat]
        return mul(1, *(self.share(d) for d in self.st.dims))

    @property
    def block(self) -> Expr:
        """``B``: output tiles per block."""
        return mul(self.block_h, self.block_w)

    @property
    def blocks(self) -> Expr:
        """``n``: blocks per core (exact under the divisibility constraints)."""
        return ceil_div(self.core_tiles, self.block)

    def block_tiles(self, tensor: str) -> Expr:
        """Tiles of ``tensor`` per block (module docstring)."""
        dims = self.problem.program.tensor(tensor).dims
        if tensor in self.st.full:
            return self.block
        if not dims:
            return const(1)
        if self.flat is not None:
            return self.block  # one tile of the vector per output tile
        rows, _ = self.st.dims
        return self.block_h if dims == (rows,) else self.block_w

    @property
    def per_block(self) -> tuple[str, ...]:
        """Inputs read every block (all but the scalars)."""
        return tuple(t for t in self.streamed if t not in self.st.scalars)

    @property
    def output(self) -> str:
        return self.st.output

    @property
    def dram_outputs(self) -> tuple[str, ...]:
        return tuple(t for t in self.st.outputs if not self.problem.placement(t).in_l1)

    def divisibility_pairs(self) -> list[tuple[Var, Expr, str]]:
        """A block side divides the share it cuts (a side on no axis has only divisors in its domain)."""
        if self.flat is not None:
            sides = [(self.block_w, self.flat)]
        else:
            sides = [(side, d) for side, d in zip((self.block_h, self.block_w), self.st.dims, strict=True)
                     if d in self.per_core]
        return [(side, self.per_core[d], f"per_core_{d}") for side, d in sides if isinstance(side, Var)]

    def subblock_pairs(self) -> list[tuple[str, Var, Var]]:
        return []  # no matmul accumulates in Dst


def build_elementwise_quantities(hw: HardwareSpec, problem: Problem, candidate: Candidate) -> ElementwiseQuantities:
    """Parameters over compact domains: ``per_core_d`` as the other families' (``spread_domain``); a block
    side over ``1..`` the tiles there are (the divisors of a dimension on no axis), cut where the streamed
    buffers alone overflow L1 (``side * (sum_full b_X + 2 sum_{DRAM outputs} b_Y) <= L1``); a buffer depth
    per input that streams."""
    st = analyse_elementwise(problem.program)
    params: list[Param] = []
    param = param_maker(params)
    gx, gy = grid_params(hw, candidate, param)
    per_core: dict[str, Var] = {}
    for axis, carried in candidate.axes:
        extent = tiles_of(problem, carried.split("*"))
        domain, bound = spread_domain(hw, axis, extent, extent)
        per_core[carried] = param(f"per_core_{carried}", domain, f"{carried} tiles per core", "tiles", bound)
    streamed_bytes = sum(hw.tile_bytes[problem.data_format(t)] for t in st.full) + \
        2 * sum(hw.tile_bytes[problem.data_format(t)] for t in st.outputs if not problem.placement(t).in_l1)
    limit = l1_block_limit(hw, max(1, streamed_bytes), 0)
    why = f"a block over {limit:,} tiles overflows L1 on its own"

    def side(name: str, dim_tiles: int, on_axis: bool, what: str) -> Var:
        values = Domain.range(1, min(dim_tiles, limit)) if on_axis else \
            Domain.of(v for v in range(1, min(dim_tiles, limit) + 1) if dim_tiles % v == 0)
        return param(name, values, what, "tiles", why if limit < dim_tiles else "")

    block_h: Expr
    if any("*" in carried for _, carried in candidate.axes):
        block_h = const(1)
        block_w = side("block", tiles_of(problem, st.dims), True, "tiles per block (each step), row-major")
    else:
        rows, cols = st.dims
        block_h = side("block_h", problem.tiles(rows), rows in per_core, f"block height ({rows} tiles)")
        block_w = side("block_w", problem.tiles(cols), cols in per_core, f"block width ({cols} tiles)")
    streamed = tuple(t for t, _ in candidate.comms if t not in st.scalars)
    depth = {t: param(f"{t}_buffer_depth", BUFFER_DEPTHS, f"{t} circular buffer depth", "blocks") for t in streamed}
    return ElementwiseQuantities(hw=hw, problem=problem, candidate=candidate, params=tuple(params), grid_x=gx,
                                 grid_y=gy, per_core=per_core, depth=depth, st=st, block_h=block_h, block_w=block_w)


def elementwise_flows(q: ElementwiseQuantities) -> list[TrafficFlow]:
    """Inputs read (and multicast) as ``model/traffic.py``'s ``input_flows``: once per block, a scalar once;
    every DRAM output written once per block."""
    counts = {t: (q.blocks if t in q.per_block else const(1)) for t in q.streamed}
    return [*input_flows(q, counts), *(write_flow(q, t, q.block, q.blocks) for t in q.dram_outputs)]


def _resident_tiles(q: ElementwiseQuantities, tensor: str) -> Expr:
    """Tiles of an L1-resident input one core holds: its share of each of the tensor's dimensions."""
    dims = q.problem.program.tensor(tensor).dims
    if q.flat is not None:
        return q.core_tiles if tensor in q.st.full else const(tiles_of(q.problem, dims))
    return mul(1, *(q.share(d) for d in dims))


def elementwise_buffers(q: ElementwiseQuantities) -> list[L1Buffer]:
    """Per core: each streamed input's circular buffer (``depth`` blocks of its block tiles), a scalar's one
    tile, an L1-resident input's shard; each output's double-buffered block (or its shard in L1)."""
    out: list[L1Buffer] = []
    for t in q.streamed:
        if q.problem.placement(t).in_l1:
            out.append(L1Buffer(f"{t}_shard", mul(_resident_tiles(q, t), q.tile_bytes(t)), f"{t} resident shard"))
        elif t in q.per_block:
            out.append(L1Buffer(t, mul(q.depth[t], q.block_tiles(t), q.tile_bytes(t)), f"{t} circular buffer"))
        else:
            out.append(L1Buffer(t, const(q.tile_bytes(t)), f"{t}, a scalar held for the whole kernel"))
    for t in q.st.outputs:
        if q.problem.placement(t).in_l1:
            out.append(L1Buffer(t, mul(q.core_tiles, q.tile_bytes(t)), f"{t} shard (lives in L1)"))
        else:
            out.append(L1Buffer(t, mul(2, q.block, q.tile_bytes(t)), f"{t} output blocks (double-buffered)"))
    return out


def tile_cycles(hw: HardwareSpec, problem: Problem, st: Elementwise) -> int:
    """``c_tile``: cycles per output tile, every op's cost plus one pack per output. An ``activation`` op
    needs ``--activation`` here (in an element-wise program it is the work, not an optional epilogue)."""
    if problem.activation is None and problem.program.uses_activation:
        raise ProblemError(f"{problem.program.name} applies the activation --activation names; give one of "
                           f"{', '.join(sorted(hw.compute.sfpu_tile_cycles))}")
    return sum(eltwise_op_cycles(hw, problem, op) for op in st.ops) + len(st.outputs) * hw.compute.tile_pack_cycles


def elementwise_latency_terms(q: ElementwiseQuantities, step_links: Sequence[LinkShare] = (),
                              write_links: Sequence[LinkShare] = ()) -> tuple[Expr, list[LatencyTerm], Expr]:
    """The objective, its named terms and a lower bound (module docstring); the lower bound takes for
    ``n * step`` the larger of two floors, each at most ``n * step`` on every schedule:

    * compute, ``T * c_tile`` (``step >= compute`` and ``n * B >= T``, ``T`` the slowest core's tiles);
    * the chip's DRAM reads, ``ceil(sum_X readers_X * T * b_X / R_chip)`` over the full-rank streamed inputs
      (``step >= chip >= sum_X readers_X * B * b_X / R_chip``, the other inputs' terms being >= 0, and
      ``n * B >= T``; ``ceil_rate`` rounds the same rational rate in both). Without it, a large DRAM-bound
      shape (65536x65536 on Blackhole) left CP-SAT unable to prove a candidate optimal within 30 s."""
    hw = q.hw
    c_tile = tile_cycles(hw, q.problem, q.st)
    compute = mul(q.block, c_tile)
    write_block = total(write_transfer_cycles(q, t, q.block, write_links) for t in q.dram_outputs)
    links = [link.cycles(q, block_bytes(q, link.tensor)) for link in step_links]
    step, reads = one_reader_step(q, compute, q.per_block, write_block, links)
    fill = reads + read_once_cycles(q, q.st.scalars)
    drain = write_block + (hw.dram.write_latency_cycles if q.dram_outputs else 0)
    launch = const(hw.compute.kernel_launch_cycles)
    n = q.blocks
    objective = launch + fill + mul(n, step) + drain
    terms = [LatencyTerm("launch", launch, "fixed per-op launch on the device"),
             LatencyTerm("fill", fill, "the first blocks, and any scalar input, loaded before any compute"),
             LatencyTerm("compute", mul(n, compute), "the ops on every output tile, and its pack"),
             LatencyTerm("data_movement", mul(n, step) - mul(n, compute),
                         "blocks where reads, writes, shared DRAM bandwidth or a NoC link outlast compute"),
             LatencyTerm("write_back", drain, "the last block written to DRAM")]
    full = [t for t in q.per_block if t in q.st.full]
    chip_floor = ceil_rate(total(mul(dram_readers(q, t), q.core_tiles, q.tile_bytes(t)) for t in full),
                           hw.dram.chip_read_bytes_per_cycle)
    lower = launch + fill + maximum(mul(q.core_tiles, c_tile), chip_floor) + drain
    return objective, terms, lower


def elementwise_dram_read_bytes(q: ElementwiseQuantities) -> Expr:
    """Bytes read from DRAM by all cores: streamed inputs block by block, a scalar once per reader."""
    return streamed_dram_read_bytes(q, q.blocks, q.per_block)


def elementwise_work(hw: HardwareSpec, problem: Problem) -> tuple[int, int]:
    """(operations, one core's cycles at the ideal rates) of the whole problem: every element of every
    output once per op; every output tile at ``c_tile`` cycles."""
    st = analyse_elementwise(problem.program)
    elements = math.prod(problem.elements(d) for d in st.dims)
    return elements * len(st.ops), tiles_of(problem, st.dims) * tile_cycles(hw, problem, st)
