"""The parameters of a contraction candidate and the quantities derived from them.

Notation (all counts in 32x32 tiles; ``E_d`` is dimension ``d``'s extent):

* ``grid_x``, ``grid_y``: columns and rows of cores used;
* ``per_core_d``: extent of ``d`` handled by one core (``E_d`` when ``d`` is on no grid axis);
* ``out_block_h | per_core_M``, ``out_block_w | per_core_N``: output block; ``in0_block_w | per_core_K``;
* ``out_subblock_h | out_block_h``, ``out_subblock_w | out_block_w``: Dst sub-block;
* ``in0_buffer_depth``, ``in1_buffer_depth`` in {1, 2, 3}: blocks each input circular buffer holds.

The slowest core handles full per-core extents, so every latency term is written for it. What every
family shares (grid, per-core extents, streamed inputs, multicast groups) is
:class:`~loom_explorer.model.quantities.GridQuantities`, which :class:`ContractionQuantities` extends.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.families.contraction.program import Contraction, analyse_contraction
from loom_explorer.hardware.schema import DataFormat, HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.domain import Domain, divisors_up_to
from loom_explorer.model.expr import Expr, Var, ceil_div, floor_div, mul, select
from loom_explorer.model.quantities import (
    BUFFER_DEPTHS,
    GridQuantities,
    grid_params,
    l1_block_limit,
    param_maker,
    spread_domain,
)
from loom_explorer.model.schedule import Param
from loom_explorer.problem import KernelTarget, Problem


@dataclass(frozen=True, eq=False)
class ContractionQuantities(GridQuantities):
    """A blocked matmul's quantities (module docstring): the per-core extents ``pm``, ``pn``, ``pk``, ``pb``
    of the M, N, K and batch dims, the output and K blocks and the Dst sub-block."""

    con: Contraction
    out_block_h: Var
    out_block_w: Var
    in0_block_w: Var
    out_subblock_h: Var
    out_subblock_w: Var

    def extent(self, dim: str) -> int:
        return self.problem.tiles(dim)

    @property
    def pm(self) -> Var:
        return self.per_core[self.con.m_dim]

    @property
    def pn(self) -> Var:
        return self.per_core[self.con.n_dim]

    @property
    def pk(self) -> Var:
        return self.per_core[self.con.k_dim]

    @property
    def pb(self) -> Expr:
        """Batch indices per core (product over batch dims)."""
        return mul(1, *(self.per_core[d] for d in self.con.batch_dims))

    def divisibility_pairs(self) -> list[tuple[Var, Expr, str]]:
        return [
            (self.out_subblock_h, self.out_block_h, "out_block_h"),
            (self.out_subblock_w, self.out_block_w, "out_block_w"),
            (self.out_block_h, self.pm, self.pm.name),
            (self.out_block_w, self.pn, self.pn.name),
            (self.in0_block_w, self.pk, self.pk.name),
        ]

    def subblock_pairs(self) -> list[tuple[str, Var, Var]]:
        return [("matmul", self.out_subblock_h, self.out_subblock_w)]

    # ---------------------------------------------------------------- blocks
    @property
    def out_blocks(self) -> Expr:
        """Output blocks per core: batch x (per_core_M/out_block_h) x (per_core_N/out_block_w)."""
        return mul(self.pb, floor_div(self.pm, self.out_block_h), floor_div(self.pn, self.out_block_w))

    @property
    def k_blocks(self) -> Expr:
        """K steps per output block: per_core_K / in0_block_w."""
        if self.pk.values.fixed:
            kt = self.pk.values.min
            return select(self.in0_block_w, {v: kt // v for v in self.in0_block_w.values})
        return floor_div(self.pk, self.in0_block_w)

    def block_tiles(self, tensor: str) -> Expr:
        if tensor == self.con.matmul.a:
            return mul(self.out_block_h, self.in0_block_w)
        return mul(self.in0_block_w, self.out_block_w)

    @property
    def output(self) -> str:
        return self.con.matmul.out

    @property
    def inputs(self) -> tuple[str, str]:
        return (self.con.matmul.a, self.con.matmul.b)

    @property
    def auxiliary_inputs(self) -> tuple[str, ...]:
        """Enabled inputs other than the matmul operands (e.g. a bias), read once and held in L1."""
        return tuple(
            t.name for t in self.problem.program.inputs if t.name not in self.inputs and self.problem.is_enabled(t.name)
        )

    def share_tiles(self, tensor: str, split_over_x: str | None = None) -> Expr:
        """Tiles of ``tensor`` one core holds: the product of its per-core extents (e.g. per_core_N for a
        bias); a dim ``split_over_x`` spread over the grid columns without being on them counts
        ``ceil(E/grid_x)`` (a block-sharded input's columns)."""
        return mul(
            1,
            *(
                ceil_div(self.extent(d), self.grid_x) if d == split_over_x else self.per_core[d]
                for d in self.problem.program.tensor(tensor).dims
            ),
        )


def build_quantities(hw: HardwareSpec, problem: Problem, candidate: Candidate) -> ContractionQuantities:
    """The contraction's parameters over compact domains (``model/domain.py``): ``per_core_d`` over
    ``ceil(E_d/G)..E_d`` (:func:`spread_domain`), and the block sizes cut where the L1 constraint alone rejects
    them (:func:`l1_block_limit`; with every other side and depth at its least, 1):

        in0_block_w * (b_in0 + b_in1) <= L1                   (the in0 and in1 circular buffers)
        out_block_h * (b_in0 + b_out + 2 b_acc) + b_in1 <= L1   (b_out: only when the output block is an L1
        out_block_w * (b_in1 + b_out + 2 b_acc) + b_in0 <= L1    buffer, i.e. the output is written to DRAM)

    ``b_t`` the bytes of one tile of ``t``, ``b_acc`` of one partial-sum tile (the TT-Lang target's two-block
    accumulator, 0 for TTNN's kernels; the split-K partials buffer, at least 0 blocks, is left out, so the
    cut stays exact). So the domains stay small and exact for any extent; with a divisor-set ``in0_block_w``
    (``per_core_K`` fixed) only the divisors up to its limit are listed."""
    con = analyse_contraction(problem.program)
    params: list[Param] = []
    param = param_maker(params)
    gx, gy = grid_params(hw, candidate, param)
    per_core: dict[str, Var] = {}
    for dim in (*con.batch_dims, con.m_dim, con.n_dim, con.k_dim):
        extent = problem.tiles(dim)
        axis = candidate.axis_of(dim)
        unit = "tiles" if problem.program.dim(dim).tile > 1 else "items"
        domain, bound = (
            spread_domain(hw, axis, extent, extent) if axis is not None else (Domain.range(extent, extent), "")
        )
        per_core[dim] = param(
            f"per_core_{dim}",
            domain,
            f"{dim} per core" + ("" if axis is not None else f" (all of {dim}: not spread)"),
            unit,
            bound,
        )
    mt, nt = problem.tiles(con.m_dim), problem.tiles(con.n_dim)
    a, b, out = con.matmul.a, con.matmul.b, con.matmul.out
    tb = {t: hw.tile_bytes[problem.data_format(t)] for t in (a, b, out)}
    out_buffer = 0 if problem.placement(out).in_l1 else tb[out]
    acc_buffer = (
        2 * (hw.tile_bytes[DataFormat.float32] if problem.fp32_acc else tb[out])
        if problem.target is KernelTarget.ttlang
        else 0
    )  # the TT-Lang kernels' two-block accumulator

    def l1_text(limit: int, most: int) -> str:  # said only where L1, not the extent, ends the domain
        return f"a block side over {limit:,} tiles overflows L1 on its own" if limit < most else ""

    kb_limit = l1_block_limit(hw, tb[a] + tb[b], 0)
    pk = per_core[con.k_dim]
    kb_values = (
        Domain.of(divisors_up_to(pk.values.min, kb_limit))
        if pk.values.fixed
        else Domain.range(1, min(pk.values.max, kb_limit))
    )
    kb = param(
        "in0_block_w", kb_values, "K tiles per K step (in0 block width)", "tiles", l1_text(kb_limit, pk.values.max)
    )
    bh_limit = l1_block_limit(hw, tb[a] + out_buffer + acc_buffer, tb[b])
    bh = param("out_block_h", Domain.range(1, min(mt, bh_limit)), "output block height", "tiles", l1_text(bh_limit, mt))
    bw_limit = l1_block_limit(hw, tb[b] + out_buffer + acc_buffer, tb[a])
    bw = param("out_block_w", Domain.range(1, min(nt, bw_limit)), "output block width", "tiles", l1_text(bw_limit, nt))
    dst = hw.compute.dst_tiles_fp32_acc if problem.fp32_acc else hw.compute.dst_tiles
    sh = param("out_subblock_h", Domain.range(1, min(dst, mt)), "Dst sub-block height", "tiles")
    sw = param("out_subblock_w", Domain.range(1, min(dst, nt)), "Dst sub-block width", "tiles")
    depth = {
        t: param(f"{t}_buffer_depth", BUFFER_DEPTHS, f"{t} circular buffer depth", "blocks")
        for t in (con.matmul.a, con.matmul.b)
    }
    return ContractionQuantities(
        hw=hw,
        problem=problem,
        candidate=candidate,
        con=con,
        params=tuple(params),
        grid_x=gx,
        grid_y=gy,
        per_core=per_core,
        out_block_h=bh,
        out_block_w=bw,
        in0_block_w=kb,
        out_subblock_h=sh,
        out_subblock_w=sw,
        depth=depth,
    )
