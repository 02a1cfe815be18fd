"""The element-wise family's model: parameters, traffic, L1 buffers and latency of one candidate.

Notation (counts in 32x32 tiles): the candidate puts dimensions (or all of them flattened, ``H*W``) on grid
axes; ``per_core_d`` of each is the slowest core's share (coverage allows a ragged tail), and a dimension on
no axis is whole on every core. The slowest core handles

    T = prod_{d on an axis} per_core_d * prod_{d on no axis} E_d        tiles of every output,

in ``n = ceil(T / block)`` blocks of ``block`` tiles (``block`` a parameter; the last block may be short).
Full-rank inputs (indexed by every dimension) stream one block per block, each in a circular buffer of
``depth_X`` blocks; a broadcast input (``bias[W]``) is read once: the tiles a core needs (its per-core
extents of the tensor's own dimensions, all of a dimension on a flattened axis), from DRAM by every core or
by one sender per row / column / grid that multicasts it.

Per block, on the slowest core (``b_X`` bytes per tile of ``X``, ``c_op`` each op's cycles per tile from
the hardware file: ``compute.eltwise_tile_cycles`` on the FPU, ``compute.sfpu_tile_cycles[op]`` on the
SFPU; ``c_pack = compute.tile_pack_cycles`` per output tile):

    read_X  = ceil(block*b_X / r_core) + L_read(depth_X)     each full input read from DRAM
    reads   = sum_X read_X                                   (one reader, one input after another)
    compute = block*(sum_op c_op + outputs*c_pack)
    writes  = sum_Y max(ceil(block*b_Y / w_core), link_Y)    each output written to DRAM
    chip    = ceil(cores * block * sum_X b_X / R_chip)       (every core reads at once)
    step    = max(compute + sum_{X: depth_X = 1} read_X, reads, writes, chip, link_X...)

and the whole kernel

    T_total = launch + fill + n*step + drain
    fill    = reads + sum_{broadcast X} (ceil(held_X*b_X / r_core) + L_read [+ its multicast])
    drain   = writes + L_write                               (the last block's write-back)

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
from loom_explorer.model.dram_reads import dram_readers, reads_dram
from loom_explorer.model.expr import Expr, Var, ceil_div, ceil_rate, const, maximum, mul, total
from loom_explorer.model.flow import TrafficFlow
from loom_explorer.model.latency import (
    block_bytes,
    chip_read_cycles,
    eltwise_op_cycles,
    multicast_cycles,
    read_cycles,
    single_buffered,
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
    st: Elementwise
    block: Var

    def units(self, dim: str) -> int:
        return self.problem.tiles(dim)

    def extent(self, dim: str) -> int:
        """Tiles of a dimension, or of several flattened (``H*W``)."""
        return tiles_of(self.problem, dim.split("*"))

    def _on_axis(self, dim: str) -> str | None:
        """The axis entry (a dimension, or a flattened group) that carries ``dim``, if any."""
        return next((carried for _, carried in self.candidate.axes if dim in carried.split("*")), None)

    @property
    def core_tiles(self) -> Expr:
        """``T``: output tiles of the slowest core (module docstring)."""
        on_axes = [self.per_core[carried] for _, carried in self.candidate.axes]
        off = [self.units(d) for d in self.st.dims if self._on_axis(d) is None]
        return mul(1, *on_axes, *off)

    @property
    def blocks(self) -> Expr:
        return ceil_div(self.core_tiles, self.block)

    def held_tiles(self, tensor: str) -> Expr:
        """Tiles of a broadcast input one core needs: its per-core extent of each of the tensor's own
        dimensions (all of a dimension that is part of a flattened axis)."""
        parts: list[Expr | int] = []
        for d in self.problem.program.tensor(tensor).dims:
            carried = self._on_axis(d)
            parts.append(self.per_core[carried] if carried == d else self.units(d))
        return mul(1, *parts)

    def block_tiles(self, tensor: str) -> Expr:
        return self.held_tiles(tensor) if tensor in self.st.broadcast else self.block

    @property
    def output(self) -> str:
        return self.st.output

    @property
    def dram_outputs(self) -> tuple[str, ...]:
        return tuple(t for t in self.st.outputs if not self.problem.placement(t).in_l1)

    def divisibility_pairs(self) -> list[tuple[Var, Expr, str]]:
        return []  # the last block and the last core may be short

    def subblock_pairs(self) -> list[tuple[str, Var, Var]]:
        return []  # no matmul accumulates in Dst


def build_elementwise_quantities(hw: HardwareSpec, problem: Problem, candidate: Candidate) -> ElementwiseQuantities:
    """Parameters over compact domains: ``per_core_d`` as the other families' (``spread_domain``), ``block``
    from 1 to the tiles there are, cut where the streamed buffers alone overflow L1
    (``block * (sum_full b_X + 2 sum_{DRAM outputs} b_Y) <= L1``), and a buffer depth per full input."""
    st = analyse_elementwise(problem.program)
    params: list[Param] = []
    param = param_maker(params)
    gx, gy = grid_params(hw, candidate, param)
    per_core: dict[str, Var] = {}
    for axis, carried in candidate.axes:
        extent = tiles_of(problem, carried.split("*"))
        domain, bound = spread_domain(hw, axis, extent, extent)
        per_core[carried] = param(f"per_core_{carried}", domain, f"{carried} tiles per core", "tiles", bound)
    everything = tiles_of(problem, st.dims)
    streamed_bytes = sum(hw.tile_bytes[problem.data_format(t)] for t in st.full) + \
        2 * sum(hw.tile_bytes[problem.data_format(t)] for t in st.outputs if not problem.placement(t).in_l1)
    limit = l1_block_limit(hw, max(1, streamed_bytes), 0)
    block = param("block", Domain.range(1, max(1, min(everything, limit))), "tiles per block (each step)", "tiles",
                  f"a block over {limit:,} tiles overflows L1 on its own" if limit < everything else "")
    depth = {t: param(f"{t}_buffer_depth", BUFFER_DEPTHS, f"{t} circular buffer depth", "blocks") for t in st.full}
    return ElementwiseQuantities(hw=hw, problem=problem, candidate=candidate, params=tuple(params), grid_x=gx,
                                 grid_y=gy, per_core=per_core, depth=depth, st=st, block=block)


def elementwise_flows(q: ElementwiseQuantities) -> list[TrafficFlow]:
    """Full inputs read (and broadcast ones read and multicast) as ``model/traffic.py``'s ``input_flows``:
    full ones once per block, broadcast ones once; every DRAM output written once per block."""
    counts = {t: (q.blocks if t in q.st.full else const(1)) for t in q.streamed}
    return [*input_flows(q, counts), *(write_flow(q, t, q.block, q.blocks) for t in q.dram_outputs)]


def elementwise_buffers(q: ElementwiseQuantities) -> list[L1Buffer]:
    """Per core: each full input's circular buffer (``depth`` blocks, or its resident shard when it lives in
    L1), each broadcast input's tiles, each output's double-buffered block (or its shard in L1)."""
    out: list[L1Buffer] = []
    for t in q.st.full:
        if q.problem.placement(t).in_l1:
            out.append(L1Buffer(f"{t}_shard", mul(q.core_tiles, q.tile_bytes(t)), f"{t} resident shard"))
        else:
            out.append(L1Buffer(t, mul(q.depth[t], q.block, q.tile_bytes(t)), f"{t} circular buffer"))
    for t in q.st.broadcast:
        out.append(L1Buffer(t, mul(q.held_tiles(t), q.tile_bytes(t)), f"{t}, the tiles this core's share needs"))
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
    """The objective, its named terms and a lower bound (module docstring); the lower bound takes the
    compute floor ``T * c_tile`` for ``n * step`` (valid: ``step >= compute`` and ``n * block >= T``)."""
    hw = q.hw
    reads = {t: read_cycles(q, t) for t in q.st.full}
    c_tile = tile_cycles(hw, q.problem, q.st)
    compute = mul(q.block, c_tile)
    exposed = total(mul(single_buffered(q, t), reads[t]) for t in q.st.full if reads_dram(q, t))
    write_block = total(write_transfer_cycles(q, t, q.block, write_links) for t in q.dram_outputs)
    links = [link.cycles(q, block_bytes(q, link.tensor)) for link in step_links]
    step = maximum(compute + exposed, total(reads.values()), write_block, chip_read_cycles(q, q.st.full), *links)
    held = total((ceil_rate(block_bytes(q, t), hw.dram.core_read_bytes_per_cycle) + hw.dram.read_latency_cycles
                  if reads_dram(q, t) else 0) + multicast_cycles(q, t) for t in q.st.broadcast)
    fill = total(reads.values()) + held
    drain = write_block + (hw.dram.write_latency_cycles if q.dram_outputs else 0)
    launch = const(hw.compute.kernel_launch_cycles)
    n = q.blocks
    objective = launch + fill + mul(n, step) + drain
    terms = [LatencyTerm("launch", launch, "fixed per-op launch on the device"),
             LatencyTerm("fill", fill, "the first blocks, and the broadcast inputs, loaded before any compute"),
             LatencyTerm("compute", mul(n, compute), "the ops on every output tile, and its pack"),
             LatencyTerm("data_movement", mul(n, step) - mul(n, compute),
                         "blocks where reads, writes, shared DRAM bandwidth or a NoC link outlast compute"),
             LatencyTerm("write_back", drain, "the last block written to DRAM")]
    lower = launch + fill + mul(q.core_tiles, c_tile) + drain
    return objective, terms, lower


def elementwise_dram_read_bytes(q: ElementwiseQuantities) -> Expr:
    """Bytes read from DRAM by all cores: full inputs block by block, broadcast ones once per reader."""
    return total(mul(dram_readers(q, t), q.blocks if t in q.st.full else 1, block_bytes(q, t))
                 for t in q.streamed)


def elementwise_work(hw: HardwareSpec, problem: Problem) -> tuple[int, int]:
    """(operations, one core's cycles at the ideal rates) of the whole problem: every element of every
    output once per op; every output tile at ``c_tile`` cycles."""
    st = analyse_elementwise(problem.program)
    elements = math.prod(problem.elements(d) for d in st.dims)
    return elements * len(st.ops), tiles_of(problem, st.dims) * tile_cycles(hw, problem, st)
